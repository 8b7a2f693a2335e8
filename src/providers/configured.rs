//! The providers the environment configures (keys and base URLs), and
//! which of them serves a model name.

use std::{fmt, sync::Arc};

use reqwest::Url;

use super::error::ProviderError;
use super::http_client::HttpConfig;

use super::http_client::{self, Secret};
use super::registry::{self, Need, OwnedSpec, ProviderKind};
use super::{
    gemini,
    model::{ModelInfo, Provider},
    openai,
};

/// A configured provider and the variable that enabled it.
struct Configured {
    kind: ProviderKind,
    provider: Arc<dyn Provider>,
    /// Its models, in registry order.
    models: Vec<OwnedSpec>,
}

/// The providers the environment configures, and model resolution over them.
pub struct Providers {
    /// In priority order (see [`ProviderKind`]).
    configured: Vec<Configured>,
    /// `DEFAULT_MODEL`, or "auto".
    default_model: String,
    /// Configuration that was set but could not be used, in words.
    problems: Vec<String>,
}

/// The model a custom endpoint is assumed to serve without `CUSTOM_MODEL_NAME`.
const DEFAULT_CUSTOM_MODEL: &str = "llama3.2";

impl Providers {
    /// Reads configuration through `env` (so tests can inject a map instead
    /// of the process env), with timeouts from `ZEN_MODEL_TIMEOUT_SECS`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        Self::from_env_with(env, HttpConfig::from_env(env))
    }

    /// Like [`Providers::from_env`], with explicit timeouts and retries.
    pub fn from_env_with(env: &dyn Fn(&str) -> Option<String>, http: HttpConfig) -> Self {
        // Blank values count as unset: `FOO=` in a shell or .env file means "off".
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut problems = Vec::new();
        // One pooled client, built on the first model call.
        let client = http_client::LazyClient::new(&http);
        let mut configured = Vec::new();
        for kind in ProviderKind::ALL {
            let Some(enabler) = var(kind.enabling_var()) else {
                continue;
            };
            let client = client.clone();
            let models = match kind {
                ProviderKind::Custom => {
                    let name = var("CUSTOM_MODEL_NAME").unwrap_or(DEFAULT_CUSTOM_MODEL.into());
                    let mut spec = registry::unlisted(&name, kind);
                    spec.aliases = vec!["local".to_owned()];
                    vec![spec]
                }
                _ => registry::models_of(kind).map(OwnedSpec::from).collect(),
            };
            let available = models.iter().map(|m| m.name.clone()).collect();
            let built = match kind {
                ProviderKind::Gemini => base_url(&var, "GEMINI_BASE_URL", kind).and_then(|base| {
                    gemini::Gemini::new(
                        &base,
                        Secret::new(enabler),
                        client,
                        http.clone(),
                        available,
                    )
                    .map(|p| Arc::new(p) as Arc<dyn Provider>)
                }),
                ProviderKind::Custom => parse_base(&enabler, "CUSTOM_API_URL").and_then(|base| {
                    let key = var("CUSTOM_API_KEY").map(Secret::new);
                    openai::OpenAiCompatible::new(kind, &base, key, client, http.clone(), available)
                        .map(|p| Arc::new(p) as Arc<dyn Provider>)
                }),
                _ => base_url(&var, base_var(kind), kind).and_then(|base| {
                    let key = Some(Secret::new(enabler));
                    openai::OpenAiCompatible::new(kind, &base, key, client, http.clone(), available)
                        .map(|p| Arc::new(p) as Arc<dyn Provider>)
                }),
            };
            match built {
                Ok(provider) => configured.push(Configured {
                    kind,
                    provider,
                    models,
                }),
                Err(problem) => {
                    tracing::warn!(provider = kind.name(), %problem, "model provider disabled");
                    problems.push(format!("{} is disabled: {problem}", kind.name()));
                }
            }
        }
        let default_model = var("DEFAULT_MODEL").unwrap_or_else(|| "auto".to_owned());
        Providers {
            configured,
            default_model,
            problems,
        }
    }

    /// True when no provider is usable: modes that need a model must say so.
    pub fn is_empty(&self) -> bool {
        self.configured.is_empty()
    }

    /// The model used when a request names none: `DEFAULT_MODEL` or "auto".
    pub fn default_model(&self) -> &str {
        &self.default_model
    }

    /// Configuration that was set but could not be used (a malformed URL, a
    /// key with a newline in it), worded for the user. Never holds a key.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Resolves a requested model name or alias ("auto"/None ->
    /// `DEFAULT_MODEL`, and "auto" picks per `purpose`, e.g. a strong
    /// reasoning model for "thinkdeep"/"codereview"/"debug", a fast one for
    /// "chat") to a provider + model.
    ///
    /// Names and aliases are matched case-insensitively against the
    /// configured providers in priority order (direct APIs, then OpenRouter,
    /// then the custom endpoint). A name no table knows goes to the custom
    /// endpoint if there is one (it serves whatever it has pulled), else to
    /// OpenRouter if it looks like a `vendor/model` id.
    pub fn resolve(
        &self,
        requested: Option<&str>,
        purpose: &str,
    ) -> Result<(Arc<dyn Provider>, ModelInfo), ProviderError> {
        if self.is_empty() {
            return Err(self.not_configured());
        }
        let requested = requested.map(str::trim).filter(|r| !r.is_empty());
        let (name, from_default) = match requested {
            Some(name) if !name.eq_ignore_ascii_case("auto") => (name, false),
            _ => (self.default_model.as_str(), true),
        };
        if name.eq_ignore_ascii_case("auto") {
            return self.pick_auto(purpose);
        }
        if let Some(found) = self.find(name) {
            return Ok(found);
        }
        let fallback = self.entry(ProviderKind::Custom).or_else(|| {
            name.contains('/')
                .then(|| self.entry(ProviderKind::OpenRouter))?
        });
        if let Some(entry) = fallback {
            let spec = registry::unlisted(name, entry.kind);
            return Ok((entry.provider.clone(), ModelInfo::from(&spec)));
        }
        Err(self.unknown(name, from_default))
    }

    /// Every usable model (for listmodels), sorted by provider priority and
    /// then by name.
    pub fn models(&self) -> Vec<ModelInfo> {
        let mut models: Vec<(ProviderKind, ModelInfo)> = self
            .configured
            .iter()
            .flat_map(|c| c.models.iter().map(|m| (c.kind, ModelInfo::from(m))))
            .collect();
        models.sort_by(|(ka, a), (kb, b)| ka.cmp(kb).then_with(|| a.name.cmp(&b.name)));
        models.into_iter().map(|(_, m)| m).collect()
    }

    /// Configured provider names and which env var enabled each (never the
    /// key value), in priority order.
    pub fn configured(&self) -> Vec<(String, String)> {
        self.configured
            .iter()
            .map(|c| (c.kind.name().to_owned(), c.kind.enabling_var().to_owned()))
            .collect()
    }

    fn entry(&self, kind: ProviderKind) -> Option<&Configured> {
        self.configured.iter().find(|c| c.kind == kind)
    }

    fn find(&self, name: &str) -> Option<(Arc<dyn Provider>, ModelInfo)> {
        self.configured.iter().find_map(|c| {
            let spec = c.models.iter().find(|m| m.matches(name))?;
            Some((c.provider.clone(), ModelInfo::from(spec)))
        })
    }

    fn pick_auto(&self, purpose: &str) -> Result<(Arc<dyn Provider>, ModelInfo), ProviderError> {
        let candidates: Vec<OwnedSpec> = self
            .configured
            .iter()
            .flat_map(|c| c.models.iter().cloned())
            .collect();
        let spec = registry::pick_auto(&candidates, Need::for_purpose(purpose))
            .ok_or_else(|| self.not_configured())?;
        let entry = self
            .entry(spec.provider)
            .ok_or_else(|| self.not_configured())?;
        Ok((entry.provider.clone(), ModelInfo::from(spec)))
    }

    fn unknown(&self, name: &str, from_default: bool) -> ProviderError {
        // A model we know, at a provider that is not configured: say which
        // variable would enable it.
        let elsewhere = registry::MODELS
            .iter()
            .find(|m| {
                m.name.eq_ignore_ascii_case(name)
                    || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            })
            .map(|m| {
                format!(
                    "it is served by {}, which needs {}",
                    m.provider.name(),
                    m.provider.enabling_var()
                )
            });
        let origin = from_default.then(|| "the name comes from DEFAULT_MODEL".to_owned());
        let hint = match (elsewhere, origin) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        ProviderError::UnknownModel {
            requested: name.to_owned(),
            available: self.models().into_iter().map(|m| m.name).collect(),
            hint,
        }
    }

    fn not_configured(&self) -> ProviderError {
        let mut message = "No model provider is configured. Set GEMINI_API_KEY, OPENAI_API_KEY, \
             XAI_API_KEY or OPENROUTER_API_KEY, or CUSTOM_API_URL (with optional CUSTOM_API_KEY \
             and CUSTOM_MODEL_NAME) for an OpenAI-compatible local server such as Ollama \
             (http://localhost:11434/v1), then restart zenmode."
            .to_owned();
        for problem in &self.problems {
            message.push_str(" Note: ");
            message.push_str(problem);
            message.push('.');
        }
        ProviderError::NotConfigured { message }
    }
}

/// The variable that overrides a provider's base URL.
fn base_var(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Gemini => "GEMINI_BASE_URL",
        ProviderKind::OpenAi => "OPENAI_BASE_URL",
        ProviderKind::Xai => "XAI_BASE_URL",
        ProviderKind::OpenRouter => "OPENROUTER_BASE_URL",
        ProviderKind::Custom => "CUSTOM_API_URL",
    }
}

fn default_base(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Gemini => "https://generativelanguage.googleapis.com",
        ProviderKind::OpenAi => "https://api.openai.com/v1",
        ProviderKind::Xai => "https://api.x.ai/v1",
        ProviderKind::OpenRouter => "https://openrouter.ai/api/v1",
        ProviderKind::Custom => "http://localhost:11434/v1",
    }
}

/// The provider's base URL: the override variable if set, else the default.
fn base_url(
    var: &dyn Fn(&str) -> Option<String>,
    name: &str,
    kind: ProviderKind,
) -> Result<Url, String> {
    match var(name) {
        Some(value) => parse_base(&value, name),
        None => parse_base(default_base(kind), name),
    }
}

/// An http(s) URL. The value is not echoed back: it may carry credentials.
fn parse_base(value: &str, name: &str) -> Result<Url, String> {
    match Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && !url.cannot_be_a_base() => Ok(url),
        _ => Err(format!(
            "{name} is not an http(s) URL such as http://localhost:11434/v1"
        )),
    }
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Providers")
            .field("configured", &self.configured())
            .field("default_model", &self.default_model)
            .field("problems", &self.problems)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn providers(vars: &[(&str, &str)]) -> Providers {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Providers::from_env(&move |name| map.get(name).cloned())
    }

    fn resolved(p: &Providers, requested: Option<&str>, purpose: &str) -> Option<(String, String)> {
        p.resolve(requested, purpose)
            .ok()
            .map(|(provider, info)| (provider.name().to_owned(), info.name))
    }

    #[test]
    fn providers_can_be_shared_across_tasks() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Providers>();
        shareable::<ProviderError>();
    }

    #[test]
    fn aliases_resolve_by_provider_priority() {
        let p = providers(&[("OPENAI_API_KEY", "sk-a"), ("OPENROUTER_API_KEY", "or-b")]);
        assert_eq!(
            resolved(&p, Some("GPT5"), "chat"),
            Some(("openai".into(), "gpt-5".into()))
        );
        assert_eq!(
            resolved(&p, Some("sonnet"), "chat"),
            Some(("openrouter".into(), "anthropic/claude-sonnet-4.5".into()))
        );
        assert_eq!(
            resolved(&p, Some("meta-llama/llama-4"), "chat"),
            Some(("openrouter".into(), "meta-llama/llama-4".into()))
        );
        assert!(p.resolve(Some("llama-4"), "chat").is_err());
    }

    #[test]
    fn auto_and_default_model() {
        let p = providers(&[("GEMINI_API_KEY", "g"), ("OPENAI_API_KEY", "o")]);
        assert_eq!(
            resolved(&p, None, "thinkdeep"),
            Some(("gemini".into(), "gemini-2.5-pro".into()))
        );
        assert_eq!(
            resolved(&p, Some("auto"), "chat"),
            Some(("gemini".into(), "gemini-2.5-flash".into()))
        );

        let pinned = providers(&[("OPENAI_API_KEY", "o"), ("DEFAULT_MODEL", "mini")]);
        assert_eq!(
            resolved(&pinned, None, "thinkdeep"),
            Some(("openai".into(), "gpt-5-mini".into()))
        );
        assert_eq!(
            resolved(&pinned, Some("o3"), "thinkdeep"),
            Some(("openai".into(), "o3".into()))
        );

        let stale = providers(&[("OPENAI_API_KEY", "o"), ("DEFAULT_MODEL", "flash")]);
        let error = stale.resolve(None, "chat").err().map(|e| e.to_string());
        let error = error.unwrap_or_default();
        assert!(error.contains("GEMINI_API_KEY"), "{error}");
        assert!(error.contains("DEFAULT_MODEL"), "{error}");
    }

    #[test]
    fn custom_endpoint_takes_any_name() {
        let p = providers(&[
            ("CUSTOM_API_URL", "http://localhost:11434/v1"),
            ("CUSTOM_MODEL_NAME", "qwen2.5-coder:7b"),
        ]);
        assert_eq!(
            resolved(&p, None, "codereview"),
            Some(("custom".into(), "qwen2.5-coder:7b".into()))
        );
        assert_eq!(
            resolved(&p, Some("local"), "chat"),
            Some(("custom".into(), "qwen2.5-coder:7b".into()))
        );
        assert_eq!(
            resolved(&p, Some("Mistral-Nemo"), "chat"),
            Some(("custom".into(), "Mistral-Nemo".into()))
        );
        assert_eq!(
            p.configured(),
            [("custom".to_owned(), "CUSTOM_API_URL".to_owned())]
        );
    }

    #[test]
    fn blank_and_broken_configuration_is_explained() {
        let p = providers(&[
            ("OPENAI_API_KEY", "  "),
            ("CUSTOM_API_URL", "localhost:11434"),
        ]);
        assert!(p.is_empty());
        let message = p.resolve(None, "chat").err().map(|e| e.to_string());
        let message = message.unwrap_or_default();
        assert!(
            message.contains("CUSTOM_API_URL is not an http(s) URL"),
            "{message}"
        );

        let newline = providers(&[("XAI_API_KEY", "xai-abc\ndef")]);
        assert!(newline.is_empty());
        assert!(newline.problems()[0].contains("XAI_API_KEY"));
        assert!(!format!("{newline:?}").contains("xai-abc"));
    }

    #[test]
    fn models_are_sorted_by_provider_then_name() {
        let p = providers(&[("XAI_API_KEY", "x"), ("GEMINI_API_KEY", "g")]);
        let names: Vec<String> = p.models().into_iter().map(|m| m.name).collect();
        assert_eq!(
            names,
            [
                "gemini-2.5-flash",
                "gemini-2.5-flash-lite",
                "gemini-2.5-pro",
                "grok-3-mini",
                "grok-4",
                "grok-4-fast-reasoning"
            ]
        );
    }
}
