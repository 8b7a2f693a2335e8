//! What can go wrong when asking a model, worded for the person or agent who
//! has to fix it.
//!
//! Every message here is built from text that has already passed through
//! [`super::http_client::Secret::redact`], so the derived `Debug` is safe to log.

use std::time::Duration;

/// A failed model call or model lookup.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The provider refused the credentials (HTTP 401/403, or Gemini's
    /// "API key not valid"). Retrying cannot help, so it is never retried.
    #[error(
        "{provider} rejected the credentials (HTTP {status}): {message}. Check the value of {env_var}."
    )]
    Auth {
        provider: String,
        status: u16,
        /// The environment variable that holds the credential to check.
        env_var: String,
        message: String,
    },

    /// No configured provider serves the requested model, or the provider
    /// answered that it does not know it.
    #[error("unknown model `{requested}`{}. Available models: {}", hint_suffix(.hint), list_or_none(.available))]
    UnknownModel {
        requested: String,
        /// Canonical names of the models that can be used instead.
        available: Vec<String>,
        /// Why it is unknown: the provider's own message, or which
        /// environment variable would make it available.
        hint: Option<String>,
    },

    /// The provider kept answering 429 (or asked for a longer wait than
    /// `HttpConfig::max_backoff` allows).
    #[error("{provider} is rate limiting requests (gave up after {attempts} attempt(s){}). Wait and try again, or use another model.", retry_after_suffix(.retry_after))]
    RateLimited {
        provider: String,
        attempts: u32,
        /// The wait the provider last asked for, if it said.
        retry_after: Option<Duration>,
    },

    /// No answer within the configured time (`ZEN_MODEL_TIMEOUT_SECS`).
    #[error("{provider} did not answer within {}s (ZEN_MODEL_TIMEOUT_SECS raises the limit)", .after.as_secs_f64())]
    Timeout { provider: String, after: Duration },

    /// Any other non-success HTTP status, after retries for 5xx.
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },

    /// A success status whose body is not the expected JSON, or lacks the
    /// generated text.
    #[error("{provider} sent a response zenmode cannot use: {message}")]
    BadResponse { provider: String, message: String },

    /// The request never got an HTTP answer (connection refused, reset, DNS...).
    #[error("could not reach {provider}: {message}")]
    Network { provider: String, message: String },

    /// The caller cancelled the request.
    #[error("the model call was cancelled")]
    Cancelled,

    /// No provider can serve the request; the message says what to set.
    #[error("{message}")]
    NotConfigured { message: String },
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_deref()
        .map(|h| format!(" ({h})"))
        .unwrap_or_default()
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn retry_after_suffix(wait: &Option<Duration>) -> String {
    wait.map(|w| format!("; it asked to wait {}s", w.as_secs()))
        .unwrap_or_default()
}

impl ProviderError {
    /// A stable machine-readable kind, for error bodies and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "provider_auth",
            ProviderError::UnknownModel { .. } => "unknown_model",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Timeout { .. } => "model_timeout",
            ProviderError::Http { .. } => "provider_http",
            ProviderError::BadResponse { .. } => "bad_model_response",
            ProviderError::Network { .. } => "provider_unreachable",
            ProviderError::Cancelled => "cancelled",
            ProviderError::NotConfigured { .. } => "no_provider",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let auth = ProviderError::Auth {
            provider: "openai".into(),
            status: 401,
            env_var: "OPENAI_API_KEY".into(),
            message: "Incorrect API key".into(),
        };
        assert!(
            auth.to_string()
                .contains("Check the value of OPENAI_API_KEY")
        );

        let unknown = ProviderError::UnknownModel {
            requested: "gpt-9".into(),
            available: vec!["gemini-2.5-pro".into(), "gemini-2.5-flash".into()],
            hint: None,
        };
        assert_eq!(
            unknown.to_string(),
            "unknown model `gpt-9`. Available models: gemini-2.5-pro, gemini-2.5-flash"
        );

        let limited = ProviderError::RateLimited {
            provider: "xai".into(),
            attempts: 3,
            retry_after: Some(Duration::from_secs(7)),
        };
        assert!(limited.to_string().contains("it asked to wait 7s"));
        assert_eq!(limited.kind(), "rate_limited");
    }
}
