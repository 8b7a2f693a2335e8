//! OpenAI-compatible chat completions (`POST {base}/chat/completions`):
//! OpenAI itself, OpenRouter, xAI, and local servers (Ollama, LM Studio,
//! vLLM, llama.cpp) that copy the same contract.

use async_trait::async_trait;
use reqwest::{
    Url,
    header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue},
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    ModelRequest, ModelResponse, Provider, ProviderError, Role, Usage,
    http_client::{self, HttpConfig, JsonPost, Secret},
    registry::{self, ProviderKind, Thinking},
};

/// One OpenAI-compatible endpoint.
pub(crate) struct OpenAiCompatible {
    kind: ProviderKind,
    endpoint: Url,
    key: Option<Secret>,
    client: http_client::LazyClient,
    config: HttpConfig,
    /// Models to suggest when the server rejects a name.
    available: Vec<String>,
}

impl OpenAiCompatible {
    /// `base` is the API root (".../v1"); the key is optional only for a
    /// custom endpoint, since local servers usually have none.
    pub(crate) fn new(
        kind: ProviderKind,
        base: &Url,
        key: Option<Secret>,
        client: http_client::LazyClient,
        config: HttpConfig,
        available: Vec<String>,
    ) -> Result<Self, String> {
        let endpoint = with_trailing_slash(base)
            .join("chat/completions")
            .map_err(|e| format!("cannot build the chat completions URL: {e}"))?;
        if let Some(key) = &key {
            bearer(key).map_err(|_| {
                format!(
                    "{} contains characters that cannot go in an HTTP header",
                    kind.key_var()
                )
            })?;
        }
        Ok(OpenAiCompatible {
            kind,
            endpoint,
            key,
            client,
            config,
            available,
        })
    }

    /// The request body, shaped for this provider's dialect and the model's
    /// capabilities (so a reasoning model never gets a temperature it
    /// rejects).
    fn body(&self, request: &ModelRequest) -> Value {
        let spec = registry::lookup(self.kind, &request.model);
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system_prompt.is_empty() {
            messages.push(json!({"role": "system", "content": request.system_prompt}));
        }
        messages.extend(request.messages.iter().map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            if m.images.is_empty() {
                json!({"role": role, "content": m.content})
            } else {
                let mut parts = vec![json!({"type": "text", "text": m.content})];
                parts.extend(m.images.iter().map(
                    |image| json!({"type": "image_url", "image_url": {"url": image.data_url()}}),
                ));
                json!({"role": role, "content": parts})
            }
        }));

        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(messages));
        if let Some(t) = request.temperature
            && spec.is_none_or(|s| s.temperature)
        {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(max) = request.max_output_tokens {
            // OpenAI's reasoning models only take the newer field; the
            // compatible servers mostly know only the older one.
            let field = match self.kind {
                ProviderKind::OpenAi => "max_completion_tokens",
                _ => "max_tokens",
            };
            body.insert(field.into(), json!(max));
        }
        if let (Some(mode), Some(Thinking::Effort(levels))) =
            (&request.thinking_mode, spec.map(|s| s.thinking))
            && let Some(level) = registry::effort_level(mode, levels)
        {
            match self.kind {
                ProviderKind::OpenRouter => {
                    body.insert("reasoning".into(), json!({"effort": level}));
                }
                _ => {
                    body.insert("reasoning_effort".into(), json!(level));
                }
            }
        }
        Value::Object(body)
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(Ok(value)) = self.key.as_ref().map(bearer) {
            headers.insert(AUTHORIZATION, value);
        }
        if self.kind == ProviderKind::OpenRouter {
            // OpenRouter attributes traffic by app name; harmless elsewhere.
            headers.insert(
                HeaderName::from_static("x-title"),
                HeaderValue::from_static("zenmode"),
            );
        }
        headers
    }
}

/// `Authorization: Bearer <key>`, marked sensitive so HTTP-level debug
/// output hides it.
fn bearer(key: &Secret) -> Result<HeaderValue, reqwest::header::InvalidHeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// `Url::join` replaces the last segment unless the base ends with '/'.
pub(crate) fn with_trailing_slash(base: &Url) -> Url {
    let mut base = base.clone();
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("provider", &self.kind.name())
            .field("endpoint", &self.endpoint.as_str())
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Provider for OpenAiCompatible {
    fn name(&self) -> &str {
        self.kind.name()
    }

    async fn generate(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ProviderError> {
        let body = self.body(request);
        let post = JsonPost {
            provider: self.kind.name(),
            key_var: self.kind.key_var(),
            key: self.key.as_ref(),
            model: &request.model,
            available: self.available.clone(),
            url: self.endpoint.clone(),
            headers: self.headers(),
            body: &body,
        };
        let reply = http_client::post_json(&self.client, &self.config, &post, cancel).await?;
        let (text, usage) = parse_reply(&reply).map_err(|message| ProviderError::BadResponse {
            provider: self.kind.name().to_owned(),
            message: match &self.key {
                Some(key) => key.redact(&message),
                None => message,
            },
        })?;
        Ok(ModelResponse {
            text: http_client::finish_answer(self.key.as_ref(), text),
            model: request.model.clone(),
            provider: self.kind.name().to_owned(),
            usage,
        })
    }
}

/// The text and token counts of a chat completion, or why there are none.
fn parse_reply(reply: &Value) -> Result<(String, Option<Usage>), String> {
    // OpenRouter reports some upstream failures as a 200 with an error.
    if let Some(error) = reply.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        return Err(format!(
            "the body carries an error: {}",
            http_client::excerpt(&message)
        ));
    }
    let choice = reply
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("it has no `choices`")?;
    let finish = choice.get("finish_reason").and_then(Value::as_str);
    let content = choice
        .get("message")
        .and_then(|m| m.get("content"))
        .ok_or("the first choice has no `message.content`")?;
    let text = match content {
        Value::String(text) => text.clone(),
        // Some compatible servers send content as typed parts.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => return Err(format!("`message.content` is a {}", json_type(other))),
    };
    if text.trim().is_empty() {
        return Err(match finish {
            Some("length") => "the model produced no text before reaching its output limit \
                 (finish_reason: length); raise max_output_tokens or lower thinking_mode"
                .to_owned(),
            Some(reason) => format!("the model produced no text (finish_reason: {reason})"),
            None => "the model produced no text".to_owned(),
        });
    }
    let usage = reply.get("usage").map(|u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
    });
    Ok((text, usage))
}

pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::Message;

    fn provider(kind: ProviderKind) -> OpenAiCompatible {
        let base = Url::parse("http://127.0.0.1:9/v1").expect("static URL");
        OpenAiCompatible::new(
            kind,
            &base,
            Some(Secret::new("sk-unit".into())),
            http_client::LazyClient::new(&HttpConfig::default()),
            HttpConfig::default(),
            Vec::new(),
        )
        .expect("valid provider")
    }

    fn request(model: &str) -> ModelRequest {
        ModelRequest {
            model: model.into(),
            system_prompt: "Be brief.".into(),
            messages: vec![Message::user("hi")],
            temperature: Some(0.2),
            thinking_mode: Some("medium".into()),
            max_output_tokens: Some(64),
        }
    }

    #[test]
    fn endpoint_keeps_the_base_path() {
        assert_eq!(
            provider(ProviderKind::OpenAi).endpoint.as_str(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }

    #[test]
    fn reasoning_models_get_effort_and_no_temperature() {
        let body = provider(ProviderKind::OpenAi).body(&request("gpt-5"));
        assert_eq!(body["reasoning_effort"], "medium");
        assert_eq!(body["max_completion_tokens"], 64);
        assert!(body.get("temperature").is_none());
        assert_eq!(body["messages"][0]["role"], "system");
    }

    #[test]
    fn dialects_differ_per_provider() {
        let router = provider(ProviderKind::OpenRouter).body(&request("openai/gpt-5"));
        assert_eq!(router["reasoning"]["effort"], "medium");
        assert_eq!(router["max_tokens"], 64);

        let local = provider(ProviderKind::Custom).body(&request("llama3.2"));
        assert_eq!(local["temperature"], 0.2);
        assert!(local.get("reasoning_effort").is_none());

        let mut quiet = request("grok-4");
        quiet.system_prompt.clear();
        let grok = provider(ProviderKind::Xai).body(&quiet);
        assert!(grok.get("reasoning_effort").is_none());
        assert_eq!(grok["messages"][0]["role"], "user");
    }

    #[test]
    fn replies_are_parsed_or_explained() {
        let ok = json!({"choices":[{"message":{"content":"4"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}});
        let (text, usage) = parse_reply(&ok).expect("valid reply");
        assert_eq!(text, "4");
        assert_eq!(usage.and_then(|u| u.input_tokens), Some(9));

        let parts = json!({"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]});
        assert_eq!(parse_reply(&parts).map(|r| r.0), Ok("ab".to_owned()));

        let truncated = json!({"choices":[{"message":{"content":""},"finish_reason":"length"}]});
        assert!(parse_reply(&truncated).is_err_and(|e| e.contains("max_output_tokens")));
        assert!(parse_reply(&json!({"choices":[]})).is_err());
        assert!(
            parse_reply(&json!({"error":{"message":"upstream down"}}))
                .is_err_and(|e| e.contains("upstream down"))
        );
    }
}
