//! Google Gemini through its native API
//! (`POST {base}/v1beta/models/{model}:generateContent`), which exposes
//! thinking budgets that the OpenAI-compatible shim does not.

use async_trait::async_trait;
use reqwest::{
    Url,
    header::{HeaderMap, HeaderName, HeaderValue},
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    ModelRequest, ModelResponse, Provider, ProviderError, Role, Usage,
    http_client::{self, HttpConfig, JsonPost, Secret},
    openai::json_type,
    registry::{self, ProviderKind, Thinking},
};

const KIND: ProviderKind = ProviderKind::Gemini;

pub(crate) struct Gemini {
    base: Url,
    key: Secret,
    client: http_client::LazyClient,
    config: HttpConfig,
    available: Vec<String>,
}

impl Gemini {
    pub(crate) fn new(
        base: &Url,
        key: Secret,
        client: http_client::LazyClient,
        config: HttpConfig,
        available: Vec<String>,
    ) -> Result<Self, String> {
        if base.cannot_be_a_base() {
            return Err("GEMINI_BASE_URL cannot be used as a base URL".to_owned());
        }
        api_key_header(&key).map_err(|_| {
            "GEMINI_API_KEY contains characters that cannot go in an HTTP header".to_owned()
        })?;
        Ok(Gemini {
            base: base.clone(),
            key,
            client,
            config,
            available,
        })
    }

    /// `{base}/v1beta/models/{model}:generateContent`, with the model name
    /// percent-encoded as one path segment.
    fn endpoint(&self, model: &str) -> Result<Url, ProviderError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| ProviderError::NotConfigured {
                message: "GEMINI_BASE_URL cannot be used as a base URL".to_owned(),
            })?
            .pop_if_empty()
            .extend(["v1beta", "models", &format!("{model}:generateContent")]);
        Ok(url)
    }

    fn body(&self, request: &ModelRequest) -> Value {
        let spec = registry::lookup(KIND, &request.model);
        let contents: Vec<Value> = request
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => "user",
                    Role::Assistant => "model",
                };
                let mut parts = vec![json!({"text": m.content})];
                parts.extend(m.images.iter().map(|image| {
                    json!({"inlineData": {"mimeType": image.media_type, "data": image.base64}})
                }));
                json!({"role": role, "parts": parts})
            })
            .collect();

        let mut generation = Map::new();
        if let Some(t) = request.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(max) = request.max_output_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if let (Some(mode), Some(Thinking::Budget { min, max })) =
            (&request.thinking_mode, spec.map(|s| s.thinking))
            && let Some(budget) = registry::thinking_budget(mode, min, max)
        {
            generation.insert("thinkingConfig".into(), json!({"thinkingBudget": budget}));
        }

        let mut body = Map::new();
        if !request.system_prompt.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": request.system_prompt}]}),
            );
        }
        body.insert("contents".into(), Value::Array(contents));
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }
}

/// The key goes in a header rather than the `?key=` query so it never shows
/// up in a logged URL.
fn api_key_header(key: &Secret) -> Result<HeaderValue, reqwest::header::InvalidHeaderValue> {
    let mut value = HeaderValue::from_str(key.expose())?;
    value.set_sensitive(true);
    Ok(value)
}

impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemini")
            .field("base", &self.base.as_str())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Provider for Gemini {
    fn name(&self) -> &str {
        KIND.name()
    }

    async fn generate(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Ok(value) = api_key_header(&self.key) {
            headers.insert(HeaderName::from_static("x-goog-api-key"), value);
        }
        let body = self.body(request);
        let post = JsonPost {
            provider: KIND.name(),
            key_var: KIND.key_var(),
            key: Some(&self.key),
            model: &request.model,
            available: self.available.clone(),
            url: self.endpoint(&request.model)?,
            headers,
            body: &body,
        };
        let reply = http_client::post_json(&self.client, &self.config, &post, cancel).await?;
        let (text, usage) = parse_reply(&reply).map_err(|message| ProviderError::BadResponse {
            provider: KIND.name().to_owned(),
            message: self.key.redact(&message),
        })?;
        Ok(ModelResponse {
            text: http_client::finish_answer(Some(&self.key), text),
            model: request.model.clone(),
            provider: KIND.name().to_owned(),
            usage,
        })
    }
}

/// The answer text (thought summaries left out) and token counts, or why
/// there is no answer (a blocked prompt, a safety stop, a missing field).
fn parse_reply(reply: &Value) -> Result<(String, Option<Usage>), String> {
    let candidates = reply.get("candidates").and_then(Value::as_array);
    let Some(candidate) = candidates.and_then(|c| c.first()) else {
        let blocked = reply
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str);
        return Err(match blocked {
            Some(reason) => format!("the prompt was blocked ({reason})"),
            None => "it has no `candidates`".to_owned(),
        });
    };
    let finish = candidate.get("finishReason").and_then(Value::as_str);
    let parts = match candidate.pointer("/content/parts") {
        Some(Value::Array(parts)) => parts.as_slice(),
        Some(other) => return Err(format!("`content.parts` is a {}", json_type(other))),
        None => &[],
    };
    let text: String = parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    if text.trim().is_empty() {
        return Err(match finish {
            Some("MAX_TOKENS") => "the model produced no text before reaching its output limit \
                 (finishReason: MAX_TOKENS); raise max_output_tokens or lower thinking_mode"
                .to_owned(),
            Some(reason) => format!("the model produced no text (finishReason: {reason})"),
            None => "the first candidate has no text".to_owned(),
        });
    }
    let usage = reply.get("usageMetadata").map(|u| {
        let count = |field: &str| u.get(field).and_then(Value::as_u64);
        // Thinking tokens are billed as output, so they count as output.
        let output = match (count("candidatesTokenCount"), count("thoughtsTokenCount")) {
            (None, None) => None,
            (answer, thoughts) => Some(answer.unwrap_or(0) + thoughts.unwrap_or(0)),
        };
        Usage {
            input_tokens: count("promptTokenCount"),
            output_tokens: output,
        }
    });
    Ok((text, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Message;

    fn gemini(base: &str) -> Gemini {
        let base = Url::parse(base).expect("static URL");
        Gemini::new(
            &base,
            Secret::new("AIza-unit".into()),
            http_client::LazyClient::new(&HttpConfig::default()),
            HttpConfig::default(),
            Vec::new(),
        )
        .expect("valid provider")
    }

    #[test]
    fn endpoint_encodes_the_model_as_one_segment() {
        let g = gemini("https://example.test/");
        assert_eq!(
            g.endpoint("gemini-2.5-pro")
                .map(String::from)
                .ok()
                .as_deref(),
            Some("https://example.test/v1beta/models/gemini-2.5-pro:generateContent")
        );
        let odd = g.endpoint("a/b?c").map(String::from).unwrap_or_default();
        assert!(odd.ends_with("/models/a%2Fb%3Fc:generateContent"), "{odd}");
    }

    #[test]
    fn images_become_inline_data_parts() {
        let image = crate::providers::Image {
            media_type: "image/png".into(),
            base64: "iVBORw0KGgo=".into(),
        };
        let request = ModelRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![Message::user("look").with_images(vec![image])],
            ..ModelRequest::default()
        };
        let body = gemini("https://example.test").body(&request);
        let parts = &body["contents"][0]["parts"];
        assert_eq!(parts[0]["text"], "look");
        assert_eq!(parts[1]["inlineData"]["mimeType"], "image/png");
        assert_eq!(parts[1]["inlineData"]["data"], "iVBORw0KGgo=");
    }

    #[test]
    fn body_maps_roles_system_and_thinking() {
        let request = ModelRequest {
            model: "gemini-2.5-pro".into(),
            system_prompt: "Review carefully.".into(),
            messages: vec![Message::user("q"), Message::assistant("a")],
            temperature: None,
            thinking_mode: Some("max".into()),
            max_output_tokens: None,
        };
        let body = gemini("https://example.test").body(&request);
        assert_eq!(
            body["systemInstruction"]["parts"][0]["text"],
            "Review carefully."
        );
        assert_eq!(body["contents"][1]["role"], "model");
        assert_eq!(
            body["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            32_768
        );
        assert!(body["generationConfig"].get("temperature").is_none());
    }

    #[test]
    fn replies_skip_thoughts_and_explain_blocks() {
        let reply = json!({
            "candidates": [{"content": {"parts": [
                {"text": "pondering", "thought": true},
                {"text": "answer"}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}
        });
        let (text, usage) = parse_reply(&reply).expect("valid reply");
        assert_eq!(text, "answer");
        assert_eq!(usage.and_then(|u| u.output_tokens), Some(7));

        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
        assert!(parse_reply(&blocked).is_err_and(|e| e.contains("SAFETY")));
        let stopped = json!({"candidates": [{"finishReason": "MAX_TOKENS"}]});
        assert!(parse_reply(&stopped).is_err_and(|e| e.contains("max_output_tokens")));
    }
}
