//! Model providers against a fake provider on loopback.
//!
//! The fake (tests/common/fake_provider.rs) is a tiny HTTP/1.1 server that
//! speaks the OpenAI chat-completions and Gemini generateContent contracts,
//! records every request, and plays scripted failures: 401, 429 with
//! Retry-After, 500, a stall past the timeout, malformed JSON.

mod common;

use std::{
    collections::HashMap,
    io,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::fake_provider::{Fake, Reply};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use zenmode::providers::{HttpConfig, Message, ModelRequest, ProviderError, Providers};

const OPENAI_KEY: &str = "sk-test-7f3a9c-OPENAI-SECRET";
const GEMINI_KEY: &str = "AIza-test-51bd-GEMINI-SECRET";

// ---------------------------------------------------------------- helpers

/// Short timeouts and backoffs so failure paths run in milliseconds.
fn quick() -> HttpConfig {
    HttpConfig {
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(1),
        max_attempts: 3,
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_secs(2),
    }
}

fn providers_with(vars: &[(&str, String)], config: HttpConfig) -> Providers {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    Providers::from_env_with(&move |name| map.get(name).cloned(), config)
}

fn openai(fake: &Fake, config: HttpConfig) -> Providers {
    providers_with(
        &[
            ("OPENAI_API_KEY", OPENAI_KEY.to_owned()),
            ("OPENAI_BASE_URL", format!("{}/v1", fake.base)),
        ],
        config,
    )
}

fn gemini(fake: &Fake, config: HttpConfig) -> Providers {
    providers_with(
        &[
            ("GEMINI_API_KEY", GEMINI_KEY.to_owned()),
            ("GEMINI_BASE_URL", fake.base.clone()),
        ],
        config,
    )
}

fn conversation(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.to_owned(),
        system_prompt: "You are a careful reviewer.".to_owned(),
        messages: vec![
            Message::user("Look at parse().".to_owned()),
            Message::assistant("It ignores errors.".to_owned()),
            Message::user("Suggest a fix.".to_owned()),
        ],
        temperature: Some(0.3),
        thinking_mode: Some("high".to_owned()),
        max_output_tokens: Some(800),
    }
}

/// Resolves `model` and asks it, with a fresh token.
async fn ask(providers: &Providers, model: &str) -> Result<String, ProviderError> {
    let (provider, info) = providers.resolve(Some(model), "chat")?;
    let response = provider
        .generate(&conversation(&info.name), &CancellationToken::new())
        .await?;
    Ok(response.text)
}

/// A log sink for asserting what was (not) logged.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for LogBuffer {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

// ---------------------------------------------------------------- contracts

#[tokio::test]
async fn openai_request_carries_model_prompt_and_messages() {
    let fake = Fake::start(vec![]).await;
    let providers = openai(&fake, quick());
    let (provider, info) = providers.resolve(Some("gpt5"), "chat").expect("resolves");
    assert_eq!(info.name, "gpt-5");
    assert_eq!(provider.name(), "openai");

    let response = provider
        .generate(&conversation(&info.name), &CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(response.text, "echo: Suggest a fix.");
    assert_eq!(response.model, "gpt-5");
    assert_eq!(response.provider, "openai");
    let usage = response.usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(21), Some(4))
    );

    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    let request = &sent[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-5",
            "messages": [
                {"role": "system", "content": "You are a careful reviewer."},
                {"role": "user", "content": "Look at parse()."},
                {"role": "assistant", "content": "It ignores errors."},
                {"role": "user", "content": "Suggest a fix."}
            ],
            // gpt-5 takes no temperature, the newer token field, and an effort.
            "max_completion_tokens": 800,
            "reasoning_effort": "high"
        })
    );
}

#[tokio::test]
async fn gemini_request_uses_native_contract_and_header_key() {
    let fake = Fake::start(vec![]).await;
    let providers = gemini(&fake, quick());
    let (provider, info) = providers
        .resolve(Some("pro"), "codereview")
        .expect("resolves");
    assert_eq!(
        (provider.name(), info.name.as_str()),
        ("gemini", "gemini-2.5-pro")
    );
    assert!(info.supports_thinking && info.supports_images);
    assert_eq!(info.context_window, 1_048_576);

    let response = provider
        .generate(&conversation(&info.name), &CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(
        response.text, "echo: Suggest a fix.",
        "thought parts are dropped"
    );
    assert_eq!(response.usage.and_then(|u| u.output_tokens), Some(10));

    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    let request = &sent[0];
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-pro:generateContent"
    );
    assert!(
        !request.path.contains(GEMINI_KEY),
        "the key stays out of the URL"
    );
    assert_eq!(
        request.headers.get("x-goog-api-key").map(String::as_str),
        Some(GEMINI_KEY)
    );
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(
        request.body,
        json!({
            "systemInstruction": {"parts": [{"text": "You are a careful reviewer."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Look at parse()."}]},
                {"role": "model", "parts": [{"text": "It ignores errors."}]},
                {"role": "user", "parts": [{"text": "Suggest a fix."}]}
            ],
            "generationConfig": {
                "temperature": 0.3,
                "maxOutputTokens": 800,
                "thinkingConfig": {"thinkingBudget": 21_955}
            }
        })
    );
}

#[tokio::test]
async fn openrouter_and_xai_speak_their_dialects() {
    let fake = Fake::start(vec![]).await;
    let providers = providers_with(
        &[
            ("OPENROUTER_API_KEY", "or-key".to_owned()),
            ("OPENROUTER_BASE_URL", format!("{}/api/v1", fake.base)),
            ("XAI_API_KEY", "xai-key".to_owned()),
            ("XAI_BASE_URL", format!("{}/xai/v1", fake.base)),
        ],
        quick(),
    );
    assert_eq!(
        providers.configured(),
        [
            ("xai".to_owned(), "XAI_API_KEY".to_owned()),
            ("openrouter".to_owned(), "OPENROUTER_API_KEY".to_owned())
        ]
    );
    assert_eq!(
        ask(&providers, "sonnet").await.as_deref(),
        Ok("echo: Suggest a fix.")
    );
    assert_eq!(
        ask(&providers, "grok").await.as_deref(),
        Ok("echo: Suggest a fix.")
    );

    let sent = fake.requests();
    assert_eq!(sent[0].path, "/api/v1/chat/completions");
    assert_eq!(sent[0].body["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(sent[0].body["reasoning"], json!({"effort": "high"}));
    assert_eq!(sent[0].body["max_tokens"], 800);
    assert_eq!(
        sent[0].headers.get("x-title").map(String::as_str),
        Some("zenmode")
    );
    // "grok" is an alias at both; the direct API wins.
    assert_eq!(sent[1].path, "/xai/v1/chat/completions");
    assert_eq!(sent[1].body["model"], "grok-4");
    assert_eq!(sent[1].body["temperature"], 0.3);
    assert!(
        sent[1].body.get("reasoning_effort").is_none(),
        "grok-4 has no knob"
    );
}

#[tokio::test]
async fn custom_endpoint_accepts_any_model_without_a_key() {
    let fake = Fake::start(vec![]).await;
    let providers = providers_with(
        &[
            ("CUSTOM_API_URL", format!("{}/v1/", fake.base)),
            ("CUSTOM_MODEL_NAME", "qwen2.5-coder:7b".to_owned()),
        ],
        quick(),
    );
    let (_, auto) = providers.resolve(None, "debug").expect("auto");
    assert_eq!(auto.name, "qwen2.5-coder:7b");
    assert_eq!(auto.provider, "custom");
    assert_eq!(
        ask(&providers, "mistral:latest").await.as_deref(),
        Ok("echo: Suggest a fix.")
    );

    let sent = fake.requests();
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].body["model"], "mistral:latest");
    assert_eq!(sent[0].body["temperature"], 0.3);
    assert!(!sent[0].headers.contains_key("authorization"));
}

// ---------------------------------------------------------------- failures

#[tokio::test]
async fn unauthorized_names_the_variable_and_is_not_retried() {
    let echo = json!({"error": {"message": format!("Incorrect API key provided: {OPENAI_KEY}"),
                                "code": "invalid_api_key"}});
    let fake = Fake::start(vec![Reply::json(401, echo)]).await;
    let error = ask(&openai(&fake, quick()), "gpt-5")
        .await
        .expect_err("401");
    let ProviderError::Auth {
        status, env_var, ..
    } = &error
    else {
        panic!("expected Auth, got {error:?}");
    };
    assert_eq!((*status, env_var.as_str()), (401, "OPENAI_API_KEY"));
    assert!(error.to_string().contains("OPENAI_API_KEY"));
    assert!(!format!("{error} {error:?}").contains(OPENAI_KEY));
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn gemini_bad_key_is_an_auth_error() {
    let body = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
        "message": "API key not valid. Please pass a valid API key.",
        "details": [{"reason": "API_KEY_INVALID"}]}});
    let fake = Fake::start(vec![Reply::json(400, body)]).await;
    let error = ask(&gemini(&fake, quick()), "flash")
        .await
        .expect_err("400");
    assert!(
        matches!(&error, ProviderError::Auth { env_var, .. } if env_var == "GEMINI_API_KEY"),
        "{error:?}"
    );
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_delay() {
    let logs = LogBuffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let fake = Fake::start(vec![Reply::rate_limited("1")]).await;
    let started = Instant::now();
    let text = ask(&openai(&fake, quick()), "gpt-5")
        .await
        .expect("second try");
    let elapsed = started.elapsed();
    assert_eq!(text, "echo: Suggest a fix.");
    assert_eq!(fake.requests().len(), 2);
    // The backoff alone would be 20ms; Retry-After asked for a second.
    assert!(elapsed >= Duration::from_millis(950), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");

    let logged = logs.text();
    assert!(logged.contains("retrying"), "{logged}");
    assert!(!logged.contains(OPENAI_KEY), "{logged}");
    assert!(!logged.to_ascii_lowercase().contains("bearer"), "{logged}");
}

#[tokio::test]
async fn rate_limit_gives_up_after_max_attempts() {
    let fake = Fake::start(vec![
        Reply::rate_limited("0"),
        Reply::rate_limited("0"),
        Reply::rate_limited("0"),
    ])
    .await;
    let error = ask(&openai(&fake, quick()), "gpt-5")
        .await
        .expect_err("429s");
    assert_eq!(
        error,
        ProviderError::RateLimited {
            provider: "openai".into(),
            attempts: 3,
            retry_after: Some(Duration::ZERO)
        }
    );
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn retry_after_beyond_the_cap_fails_at_once() {
    let fake = Fake::start(vec![Reply::rate_limited("120")]).await;
    let started = Instant::now();
    let error = ask(&openai(&fake, quick()), "gpt-5")
        .await
        .expect_err("429");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(
        matches!(error, ProviderError::RateLimited { attempts: 1, retry_after: Some(w), .. } if w == Duration::from_secs(120)),
        "{error:?}"
    );
    assert!(error.to_string().contains("120s"));
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let fake = Fake::start(vec![
        Reply::raw(500, "internal error"),
        Reply::json(503, json!({"error": {"message": "overloaded"}})),
    ])
    .await;
    assert_eq!(
        ask(&gemini(&fake, quick()), "flash").await.as_deref(),
        Ok("echo: Suggest a fix.")
    );
    assert_eq!(fake.requests().len(), 3);

    let failing = Fake::start(vec![Reply::raw(500, "boom"); 3]).await;
    let error = ask(&gemini(&failing, quick()), "flash")
        .await
        .expect_err("500s");
    assert_eq!(
        error,
        ProviderError::Http {
            provider: "gemini".into(),
            status: 500,
            message: "boom".into()
        }
    );
    assert_eq!(failing.requests().len(), 3);
}

#[tokio::test]
async fn a_stalled_call_times_out() {
    let fake = Fake::start(vec![Reply::Stall]).await;
    let config = HttpConfig {
        timeout: Duration::from_millis(300),
        ..quick()
    };
    let started = Instant::now();
    let error = ask(&openai(&fake, config), "gpt-5")
        .await
        .expect_err("stall");
    assert!(matches!(error, ProviderError::Timeout { .. }), "{error:?}");
    assert!(error.to_string().contains("ZEN_MODEL_TIMEOUT_SECS"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests().len(), 1, "a timeout is not retried");
}

#[tokio::test]
async fn cancellation_stops_a_stalled_call() {
    let fake = Fake::start(vec![Reply::Stall]).await;
    let providers = gemini(
        &fake,
        HttpConfig {
            timeout: Duration::from_secs(30),
            ..quick()
        },
    );
    let (provider, info) = providers.resolve(Some("flash"), "chat").expect("resolves");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = provider.generate(&conversation(&info.name), &cancel).await;
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn cancellation_interrupts_the_backoff_and_precedes_sending() {
    let fake = Fake::start(vec![Reply::rate_limited("1.5")]).await;
    let providers = openai(&fake, quick());
    let (provider, info) = providers.resolve(Some("gpt-5"), "chat").expect("resolves");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let result = provider.generate(&conversation(&info.name), &cancel).await;
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert!(started.elapsed() < Duration::from_millis(1200));
    assert_eq!(fake.requests().len(), 1);

    // Already cancelled: nothing is sent.
    let result = provider.generate(&conversation(&info.name), &cancel).await;
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn malformed_and_incomplete_answers_are_bad_responses() {
    let fake = Fake::start(vec![
        Reply::raw(200, "{\"choices\": [ this is not json"),
        Reply::json(200, json!({"choices": []})),
        Reply::json(
            200,
            json!({"choices": [{"message": {"content": ""}, "finish_reason": "length"}]}),
        ),
    ])
    .await;
    let providers = openai(&fake, quick());
    for expected in ["not valid JSON", "no `choices`", "max_output_tokens"] {
        let error = ask(&providers, "gpt-5").await.expect_err("bad response");
        assert!(
            matches!(&error, ProviderError::BadResponse { message, .. } if message.contains(expected)),
            "{expected}: {error:?}"
        );
    }
    assert_eq!(fake.requests().len(), 3, "bad responses are not retried");
}

#[tokio::test]
async fn unknown_models_are_explained() {
    let fake = Fake::start(vec![Reply::json(
        404,
        json!({"error": {"message": "models/gemini-9 is not found for API version v1beta",
                         "status": "NOT_FOUND"}}),
    )])
    .await;
    let providers = gemini(&fake, quick());

    // Known to no configured provider: refused before any request.
    let error = providers
        .resolve(Some("gemini-9"), "chat")
        .err()
        .expect("unknown");
    let ProviderError::UnknownModel { available, .. } = &error else {
        panic!("expected UnknownModel, got {error:?}");
    };
    assert!(available.contains(&"gemini-2.5-flash".to_owned()));
    assert!(error.to_string().contains("gemini-2.5-pro"), "{error}");

    // Known, but served by a provider that is not configured.
    let error = providers
        .resolve(Some("gpt5"), "chat")
        .err()
        .expect("unknown");
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");

    // The server does not know it (a retired model): its message is kept.
    let (provider, _) = providers.resolve(Some("flash"), "chat").expect("resolves");
    let error = provider
        .generate(&conversation("gemini-9"), &CancellationToken::new())
        .await
        .expect_err("404");
    let text = error.to_string();
    assert!(
        matches!(error, ProviderError::UnknownModel { .. }),
        "{error:?}"
    );
    assert!(text.contains("is not found for API version"), "{text}");
    assert!(text.contains("gemini-2.5-flash-lite"), "{text}");
}

#[tokio::test]
async fn nothing_configured_says_how_to_configure() {
    let providers = providers_with(&[("DEFAULT_MODEL", "pro".to_owned())], quick());
    assert!(providers.is_empty());
    assert!(providers.models().is_empty());
    assert!(providers.configured().is_empty());
    let error = providers.resolve(None, "chat").err().expect("no provider");
    let ProviderError::NotConfigured { message } = &error else {
        panic!("expected NotConfigured, got {error:?}");
    };
    for variable in ["GEMINI_API_KEY", "OPENAI_API_KEY", "CUSTOM_API_URL"] {
        assert!(message.contains(variable), "{message}");
    }
}

#[tokio::test]
async fn unreachable_endpoints_are_network_errors_after_retries() {
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = closed.local_addr().expect("addr");
    drop(closed);
    let providers = providers_with(
        &[(
            "CUSTOM_API_URL",
            format!("http://user:hunter2-url-secret@{addr}/v1"),
        )],
        HttpConfig {
            max_attempts: 2,
            ..quick()
        },
    );
    let error = ask(&providers, "llama3.2").await.expect_err("refused");
    let ProviderError::Network { message, .. } = &error else {
        panic!("expected Network, got {error:?}");
    };
    assert!(message.contains(&addr.to_string()), "{message}");
    assert!(!format!("{error} {error:?}").contains("hunter2-url-secret"));
}

// ---------------------------------------------------------------- secrets

/// Every failure a provider can produce, formatted both ways, with servers
/// that echo the key back: the key never shows.
#[tokio::test]
async fn keys_never_appear_in_errors_or_debug_output() {
    // Each server echoes the key it was sent, as OpenAI does in its 401s.
    let echo = |status: u16, key: &str| {
        Reply::json(
            status,
            json!({"error": {"message": format!("key {key} refused")}}),
        )
    };
    let fake = Fake::start(vec![
        echo(401, OPENAI_KEY),
        echo(403, GEMINI_KEY),
        echo(404, OPENAI_KEY),
        echo(400, GEMINI_KEY),
        echo(500, OPENAI_KEY),
        echo(500, OPENAI_KEY),
        echo(500, OPENAI_KEY),
        Reply::raw(200, &format!("not json {GEMINI_KEY}")),
        Reply::json(
            200,
            json!({"error": {"message": format!("upstream saw {OPENAI_KEY}")}}),
        ),
        Reply::Stall,
    ])
    .await;
    let config = HttpConfig {
        timeout: Duration::from_millis(300),
        max_attempts: 3,
        ..quick()
    };
    let both = providers_with(
        &[
            ("OPENAI_API_KEY", OPENAI_KEY.to_owned()),
            ("OPENAI_BASE_URL", format!("{}/v1", fake.base)),
            ("GEMINI_API_KEY", GEMINI_KEY.to_owned()),
            ("GEMINI_BASE_URL", fake.base.clone()),
        ],
        config.clone(),
    );
    let mut errors = Vec::new();
    for model in [
        "gpt-5", "flash", "gpt-5", "flash", "gpt-5", "flash", "gpt-5", "o3",
    ] {
        if let Err(error) = ask(&both, model).await {
            errors.push(error);
        }
    }
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let (provider, info) = both.resolve(Some("mini"), "chat").expect("resolves");
    errors.extend(
        provider
            .generate(&conversation(&info.name), &cancelled)
            .await
            .err(),
    );
    errors.extend(both.resolve(Some("nonexistent"), "chat").err());
    errors.extend(Providers::from_env(&|_| None).resolve(None, "chat").err());
    errors.push(ProviderError::RateLimited {
        provider: "openai".into(),
        attempts: 3,
        retry_after: None,
    });

    let kinds: std::collections::BTreeSet<&str> = errors.iter().map(ProviderError::kind).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "bad_model_response",
            "cancelled",
            "model_timeout",
            "no_provider",
            "provider_auth",
            "provider_http",
            "rate_limited",
            "unknown_model"
        ],
        "{errors:#?}"
    );
    let shown: String = errors.iter().map(|e| format!("{e}\n{e:?}\n")).collect();
    let shown = format!("{shown}{both:?}\n{:?}", Providers::from_env(&|_| None));
    for key in [OPENAI_KEY, GEMINI_KEY] {
        assert!(!shown.contains(key), "{key} leaked:\n{shown}");
    }
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(format!("{both:?}").contains("OPENAI_API_KEY"));
}
