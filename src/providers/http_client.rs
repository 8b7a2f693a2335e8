//! The HTTP layer every provider shares: one pooled client, timeouts,
//! retries with backoff, cancellation, and turning failures into
//! [`ProviderError`]s that name what to fix without ever carrying a key.

use std::{fmt, future::Future, time::Duration};

use reqwest::{StatusCode, Url, header::HeaderMap};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ProviderError;

/// Timeouts and retry policy for model calls.
///
/// [`HttpConfig::from_env`] reads `ZEN_MODEL_TIMEOUT_SECS`; tests build one
/// directly with short values.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// The longest one model call may take, retries and the waits between
    /// them included (each attempt gets what is left). Models think for a
    /// while, so the default is generous.
    pub timeout: Duration,
    /// The longest connecting may take (capped at `timeout`). Kept short so
    /// a dead endpoint fails fast and the retry gets its chance.
    pub connect_timeout: Duration,
    /// Attempts per call, the first included (1 means no retries).
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles after each.
    pub initial_backoff: Duration,
    /// The longest wait between attempts. A server asking for longer via
    /// Retry-After gets no retry: the call fails with `RateLimited` at once,
    /// since trying sooner than asked would only be refused again.
    pub max_backoff: Duration,
}

/// Default for `ZEN_MODEL_TIMEOUT_SECS`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// The longest answer text kept from a model; the rest is cut, and the
/// answer says so.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The largest response body read from a provider. Bigger than
/// [`MAX_ANSWER_BYTES`] to leave room for JSON escaping and metadata.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Keys shorter than this are not redacted: replacing a short string
/// wherever it appears would mangle ordinary text, and real API keys are
/// far longer.
const MIN_REDACTED_KEY_CHARS: usize = 8;

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            connect_timeout: Duration::from_secs(10),
            max_attempts: 3,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl HttpConfig {
    /// The defaults, with `ZEN_MODEL_TIMEOUT_SECS` (a positive number of
    /// seconds) read through `env`. An unusable value is logged and ignored.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = HttpConfig::default();
        if let Some(raw) = env(crate::platform::settings::MODEL_TIMEOUT_SECS) {
            match raw.trim().parse::<f64>() {
                Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
                    config.timeout = Duration::from_secs_f64(secs);
                }
                _ => tracing::warn!(
                    value = %raw.trim(),
                    "ZEN_MODEL_TIMEOUT_SECS is not a positive number of seconds; using {DEFAULT_TIMEOUT_SECS}"
                ),
            }
        }
        config
    }

    /// The wait before retry number `retry` (1-based), before any
    /// Retry-After: exponential, capped.
    fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// An API key. Its `Debug` never shows the value, and [`Secret::redact`]
/// scrubs it from any text that came back from a server, because some
/// providers echo (parts of) the key in their error messages.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(value: String) -> Self {
        // Log lines are cleaned of it too, whoever writes them.
        if value.chars().count() >= MIN_REDACTED_KEY_CHARS {
            crate::platform::redact::register(&crate::platform::redact::Redactor::new(vec![
                value.clone(),
            ]));
        }
        Secret(value)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key replaced wherever it stands as a whole token
    /// (not inside a longer run of letters, digits, `-` or `_`), so that a
    /// key that happens to be a common word fragment does not mangle text.
    /// Keys shorter than 8 characters are left alone for the same reason.
    pub(crate) fn redact(&self, text: &str) -> String {
        let key = self.0.as_str();
        if key.chars().count() < MIN_REDACTED_KEY_CHARS || !text.contains(key) {
            return text.to_owned();
        }
        crate::platform::redact::replace_whole_tokens(text, key)
    }
}

/// A model's answer as it may leave the provider: the key redacted and the
/// text cut at [`MAX_ANSWER_BYTES`] (on a character boundary), with a note
/// saying so.
pub(crate) fn finish_answer(key: Option<&Secret>, text: String) -> String {
    let mut text = match key {
        Some(key) => key.redact(&text),
        None => text,
    };
    if text.len() > MAX_ANSWER_BYTES {
        let mut cut = MAX_ANSWER_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&format!(
            "\n\n[zenmode: the model's answer was longer than {MAX_ANSWER_BYTES} bytes and was cut here]"
        ));
    }
    text
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// The client every provider shares (so connections are pooled), built on
/// the first model call: loading the system's root certificates takes
/// milliseconds that start-up should not pay.
#[derive(Clone)]
pub(crate) struct LazyClient {
    config: HttpConfig,
    cell: std::sync::Arc<std::sync::OnceLock<Result<reqwest::Client, String>>>,
}

impl LazyClient {
    pub(crate) fn new(config: &HttpConfig) -> Self {
        LazyClient {
            config: config.clone(),
            cell: Default::default(),
        }
    }

    pub(crate) fn get(&self) -> Result<&reqwest::Client, String> {
        self.cell
            .get_or_init(|| build_client(&self.config))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Builds the HTTP client with TLS set up.
///
/// Any other HTTP client in the crate must be built after the crypto
/// provider is installed (as here): with `rustls-no-provider`, a bare
/// `reqwest::Client::new()` would panic.
///
/// TLS runs on rustls with the ring crypto provider (aws-lc-rs would need
/// cmake to build) and the system's root certificates. If none can be
/// loaded the client is built without roots: plain-HTTP endpoints (a local
/// Ollama) keep working and HTTPS calls fail with a certificate error.
pub(crate) fn build_client(config: &HttpConfig) -> Result<reqwest::Client, String> {
    // Only installs if nothing else did; either way a provider is set.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = || {
        reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout.min(config.timeout))
            .user_agent(concat!("zenmode/", env!("CARGO_PKG_VERSION")))
    };
    match builder().build() {
        Ok(client) => Ok(client),
        Err(error) => {
            let reason = error_chain(&error);
            tracing::warn!(%reason, "TLS setup failed; HTTPS model endpoints will not work");
            builder()
                .tls_certs_only(Vec::new())
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
        }
    }
}

/// One JSON POST to a model endpoint, with what is needed to explain its
/// failures.
pub(crate) struct JsonPost<'a> {
    pub provider: &'a str,
    /// The variable to check when the credentials are refused.
    pub key_var: &'a str,
    pub key: Option<&'a Secret>,
    /// The model asked for, named in unknown-model errors.
    pub model: &'a str,
    /// Models to suggest when the server does not know `model`.
    pub available: Vec<String>,
    pub url: Url,
    /// Extra headers, auth included (marked sensitive by the caller).
    pub headers: HeaderMap,
    pub body: &'a Value,
}

/// What one attempt produced, before the retry decision.
enum Attempt {
    Done(Value),
    Retry {
        error: ProviderError,
        retry_after: Option<Duration>,
    },
    Fail(ProviderError),
}

/// Sends `post`, retrying 429, 5xx and connection failures up to
/// `config.max_attempts` times with exponential backoff (honouring
/// Retry-After in seconds), and returns the parsed JSON body of a success.
/// Every wait races `cancel`.
pub(crate) async fn post_json(
    client: &LazyClient,
    config: &HttpConfig,
    post: &JsonPost<'_>,
    cancel: &CancellationToken,
) -> Result<Value, ProviderError> {
    let client = client.get().map_err(|message| ProviderError::Network {
        provider: post.provider.to_owned(),
        message,
    })?;
    // One deadline for the whole call: retries and backoff included.
    let deadline = tokio::time::Instant::now() + config.timeout;
    let timed_out = || ProviderError::Timeout {
        provider: post.provider.to_owned(),
        after: config.timeout,
    };
    let call = attempts(client, config, post, cancel, deadline);
    match tokio::time::timeout_at(deadline, call).await {
        Ok(result) => result,
        Err(_) => Err(timed_out()),
    }
}

/// The attempts of [`post_json`], within `deadline`.
async fn attempts(
    client: &reqwest::Client,
    config: &HttpConfig,
    post: &JsonPost<'_>,
    cancel: &CancellationToken,
    deadline: tokio::time::Instant,
) -> Result<Value, ProviderError> {
    let attempts = config.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        match cancellable(cancel, send_once(client, config, post)).await? {
            Attempt::Done(value) => return Ok(value),
            Attempt::Fail(error) => return Err(error),
            Attempt::Retry { error, retry_after } => {
                let asked_too_much = retry_after.is_some_and(|w| w > config.max_backoff);
                if attempt >= attempts || asked_too_much {
                    return Err(match error {
                        ProviderError::RateLimited { provider, .. } => ProviderError::RateLimited {
                            provider,
                            attempts: attempt,
                            retry_after,
                        },
                        other => other,
                    });
                }
                let wait = retry_after.unwrap_or_else(|| config.backoff(attempt));
                if tokio::time::Instant::now() + wait >= deadline {
                    // No time left for another attempt: this failure is the answer.
                    return Err(match error {
                        ProviderError::RateLimited { provider, .. } => ProviderError::RateLimited {
                            provider,
                            attempts: attempt,
                            retry_after,
                        },
                        other => other,
                    });
                }
                tracing::warn!(
                    provider = post.provider,
                    model = post.model,
                    attempt,
                    max_attempts = attempts,
                    wait_ms = wait.as_millis() as u64,
                    reason = %error,
                    "model call failed; retrying"
                );
                cancellable(cancel, tokio::time::sleep(wait)).await?;
                attempt += 1;
            }
        }
    }
}

/// Runs `fut` unless `cancel` fires first. A token cancelled before the
/// call starts wins without polling `fut`.
async fn cancellable<F: Future>(
    cancel: &CancellationToken,
    fut: F,
) -> Result<F::Output, ProviderError> {
    cancel
        .run_until_cancelled(fut)
        .await
        .ok_or(ProviderError::Cancelled)
}

async fn send_once(client: &reqwest::Client, config: &HttpConfig, post: &JsonPost<'_>) -> Attempt {
    let transport = |error: reqwest::Error| {
        if error.is_timeout() {
            // A model that did not answer in time is unlikely to on a second
            // try, and retrying would multiply the caller's wait.
            Attempt::Fail(ProviderError::Timeout {
                provider: post.provider.to_owned(),
                after: config.timeout,
            })
        } else {
            Attempt::Retry {
                error: ProviderError::Network {
                    provider: post.provider.to_owned(),
                    message: scrub(post.key, &describe_transport(error, &post.url)),
                },
                retry_after: None,
            }
        }
    };
    let response = match client
        .post(post.url.clone())
        .headers(post.headers.clone())
        .json(post.body)
        .send()
        .await
    {
        Ok(response) => response,
        Err(error) => return transport(error),
    };
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let mut response = response;
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Attempt::Fail(ProviderError::BadResponse {
                        provider: post.provider.to_owned(),
                        message: format!(
                            "the response is larger than {MAX_BODY_BYTES} bytes, the most zenmode reads"
                        ),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(error) => return transport(error),
        }
    }
    if status.is_success() {
        return match serde_json::from_slice(&body) {
            Ok(value) => Attempt::Done(value),
            Err(error) => Attempt::Fail(ProviderError::BadResponse {
                provider: post.provider.to_owned(),
                message: scrub(
                    post.key,
                    &format!(
                        "the body is not valid JSON ({error}); it starts with: {}",
                        excerpt(&String::from_utf8_lossy(&body))
                    ),
                ),
            }),
        };
    }
    classify_failure(post, status, &body, retry_after)
}

/// Turns a non-success answer into the error (or retry) it stands for.
fn classify_failure(
    post: &JsonPost<'_>,
    status: StatusCode,
    body: &[u8],
    retry_after: Option<Duration>,
) -> Attempt {
    let detail = ErrorDetail::parse(body);
    let message = scrub(post.key, &detail.message);
    let provider = post.provider.to_owned();
    let code = status.as_u16();
    if code == 401 || code == 403 || detail.is_bad_key() {
        return Attempt::Fail(ProviderError::Auth {
            provider,
            status: code,
            env_var: post.key_var.to_owned(),
            message,
        });
    }
    if code == 404 || (code == 400 && detail.is_unknown_model()) {
        return Attempt::Fail(ProviderError::UnknownModel {
            requested: post.model.to_owned(),
            available: post.available.clone(),
            hint: Some(format!("{provider} says: {message}")),
        });
    }
    if code == 429 {
        return Attempt::Retry {
            error: ProviderError::RateLimited {
                provider,
                attempts: 1,
                retry_after,
            },
            retry_after,
        };
    }
    let error = ProviderError::Http {
        provider,
        status: code,
        message,
    };
    if status.is_server_error() {
        Attempt::Retry { error, retry_after }
    } else {
        Attempt::Fail(error)
    }
}

/// The useful part of an error body. OpenAI-style servers send
/// `{"error": {"message", "code", "type"}}`, Gemini sends
/// `{"error": {"message", "status", "details": [{"reason"}]}}`, and local
/// servers sometimes send `{"error": "text"}` or plain text.
#[derive(Debug, Default, PartialEq)]
struct ErrorDetail {
    message: String,
    /// Machine-readable codes found in the body, lowercased.
    codes: Vec<String>,
}

impl ErrorDetail {
    fn parse(body: &[u8]) -> ErrorDetail {
        let text = String::from_utf8_lossy(body);
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            let message = if text.trim().is_empty() {
                "(empty body)".to_owned()
            } else {
                excerpt(&text)
            };
            return ErrorDetail {
                message,
                codes: Vec::new(),
            };
        };
        let error = json.get("error").unwrap_or(&json);
        let message = match error {
            Value::String(s) => s.clone(),
            _ => error
                .get("message")
                .or_else(|| json.get("message"))
                .or_else(|| json.get("detail"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| excerpt(&text)),
        };
        let mut codes: Vec<String> = ["code", "type", "status"]
            .iter()
            .filter_map(|k| error.get(k).and_then(Value::as_str))
            .map(str::to_ascii_lowercase)
            .collect();
        if let Some(details) = error.get("details").and_then(Value::as_array) {
            codes.extend(
                details
                    .iter()
                    .filter_map(|d| d.get("reason").and_then(Value::as_str))
                    .map(str::to_ascii_lowercase),
            );
        }
        ErrorDetail {
            message: excerpt(&message),
            codes,
        }
    }

    /// Gemini answers a wrong key with 400 rather than 401.
    fn is_bad_key(&self) -> bool {
        self.codes.iter().any(|c| c == "api_key_invalid")
            || self
                .message
                .to_ascii_lowercase()
                .contains("api key not valid")
    }

    /// Some servers answer an unknown model with 400 rather than 404.
    fn is_unknown_model(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        self.codes.iter().any(|c| c == "model_not_found")
            || (message.contains("model")
                && (message.contains("not found")
                    || message.contains("does not exist")
                    || message.contains("not a valid model")))
    }
}

/// The `Retry-After` header as a delay. Only the delay-seconds form is
/// read (model APIs use it; an HTTP date would need a clock we cannot
/// trust to match the server's). Fractions are accepted too.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs = value.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// A transport failure in words, with the endpoint but never credentials
/// embedded in its URL (a custom URL may carry `user:password@`).
fn describe_transport(error: reqwest::Error, url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    let kind = if error.is_connect() {
        "cannot connect"
    } else {
        "the connection failed"
    };
    // Without its URL: we print the cleaned one above instead.
    format!("{kind} to {shown}: {}", error_chain(&error.without_url()))
}

/// An error and its causes on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// At most 300 characters of `text`, on one line.
pub(crate) fn excerpt(text: &str) -> String {
    const LIMIT: usize = 300;
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

fn scrub(key: Option<&Secret>, text: &str) -> String {
    match key {
        Some(key) => key.redact(text),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderValue, RETRY_AFTER};

    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let config = HttpConfig {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..HttpConfig::default()
        };
        let waits: Vec<u128> = (1..=4).map(|r| config.backoff(r).as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
        assert_eq!(config.backoff(u32::MAX), Duration::from_millis(350));
    }

    #[test]
    fn timeout_comes_from_the_environment() {
        let env = |name: &str| {
            (name == crate::platform::settings::MODEL_TIMEOUT_SECS).then(|| " 7 ".to_owned())
        };
        assert_eq!(HttpConfig::from_env(&env).timeout, Duration::from_secs(7));
        let bad = |_: &str| Some("soon".to_owned());
        assert_eq!(HttpConfig::from_env(&bad).timeout, Duration::from_secs(120));
        let zero = |_: &str| Some("0".to_owned());
        assert_eq!(
            HttpConfig::from_env(&zero).timeout,
            Duration::from_secs(120)
        );
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("0.25"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn secrets_are_redacted_and_hidden_from_debug() {
        let key = Secret::new("sk-live-123".into());
        assert_eq!(key.redact("bad key sk-live-123!"), "bad key [redacted]!");
        assert!(!format!("{key:?}").contains("sk-live"));
        assert_eq!(Secret::new(String::new()).redact("text"), "text");
    }

    #[test]
    fn redaction_replaces_whole_tokens_of_long_keys_only() {
        let key = Secret::new("sk-live-123".into());
        assert_eq!(
            key.redact("sk-live-123 and \"sk-live-123\" twice"),
            "[redacted] and \"[redacted]\" twice"
        );
        // Inside a longer token it is not the key.
        assert_eq!(
            key.redact("xsk-live-123 sk-live-1234"),
            "xsk-live-123 sk-live-1234"
        );
        // A short key would mangle ordinary words.
        assert_eq!(Secret::new("ab".into()).redact("ab about"), "ab about");
        assert_eq!(Secret::new("abcdefg".into()).redact("abcdefg"), "abcdefg");
        assert_eq!(
            Secret::new("abcdefgh".into()).redact("abcdefgh"),
            "[redacted]"
        );
    }

    #[test]
    fn answers_are_redacted_and_capped_with_a_note() {
        let key = Secret::new("sk-live-123".into());
        assert_eq!(
            finish_answer(Some(&key), "the key is sk-live-123.".into()),
            "the key is [redacted]."
        );
        // A two-byte character straddles the cap: the cut stays on a boundary.
        let long = format!("{}é{}", "a".repeat(MAX_ANSWER_BYTES - 1), "b".repeat(10));
        let cut = finish_answer(None, long);
        let (kept, note) = cut.split_once("\n\n[zenmode:").expect("a note");
        assert_eq!(kept, "a".repeat(MAX_ANSWER_BYTES - 1));
        assert!(note.contains("longer than 1048576 bytes"), "{note}");
        assert!(
            cut.ends_with("and was cut here]"),
            "{}",
            &cut[cut.len() - 80..]
        );
        let short = finish_answer(None, "fine".into());
        assert_eq!(short, "fine");
    }

    #[test]
    fn error_bodies_of_each_dialect_are_understood() {
        let openai = ErrorDetail::parse(
            br#"{"error":{"message":"The model `gpt-9` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#,
        );
        assert_eq!(openai.message, "The model `gpt-9` does not exist");
        assert!(openai.is_unknown_model());

        let gemini = ErrorDetail::parse(
            br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}"#,
        );
        assert!(gemini.is_bad_key());
        assert!(!gemini.is_unknown_model());

        let ollama =
            ErrorDetail::parse(br#"{"error":"model \"qwen9\" not found, try pulling it first"}"#);
        assert!(ollama.is_unknown_model());

        let plain = ErrorDetail::parse(b"upstream   connect error\n");
        assert_eq!(plain.message, "upstream connect error");
        assert_eq!(ErrorDetail::parse(b"").message, "(empty body)");
    }

    #[test]
    fn excerpts_are_short_and_cut_on_char_boundaries() {
        let long = "é".repeat(400);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), 301);
        assert!(cut.ends_with('…'));
    }
}
