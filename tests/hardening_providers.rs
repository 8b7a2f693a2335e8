//! Issue 9, providers: one deadline per call, capped answers, and keys
//! redacted from answers too.

mod common;

use std::{collections::HashMap, time::Duration};

use common::fake_provider::{Fake, Reply};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use zenmode::providers::{
    HttpConfig, MAX_ANSWER_BYTES, Message, ModelRequest, ProviderError, Providers,
};

const KEY: &str = "sk-hardening-7f3a9c-SECRET";

fn openai(fake: &Fake, config: HttpConfig) -> Providers {
    let vars: HashMap<String, String> = [
        ("OPENAI_API_KEY".to_owned(), KEY.to_owned()),
        ("OPENAI_BASE_URL".to_owned(), format!("{}/v1", fake.base)),
    ]
    .into();
    Providers::from_env_with(&move |name| vars.get(name).cloned(), config)
}

async fn ask(providers: &Providers, prompt: &str) -> Result<String, ProviderError> {
    let (provider, info) = providers.resolve(Some("gpt-5"), "chat")?;
    let request = ModelRequest {
        model: info.name.clone(),
        system_prompt: "Answer briefly.".to_owned(),
        messages: vec![Message::user(prompt.to_owned())],
        temperature: None,
        thinking_mode: None,
        max_output_tokens: None,
    };
    Ok(provider
        .generate(&request, &CancellationToken::new())
        .await?
        .text)
}

/// Retries and their waits count against `ZEN_MODEL_TIMEOUT_SECS`: it used
/// to bound each attempt, so ten attempts with backoff took many times it.
#[tokio::test]
async fn the_timeout_bounds_the_whole_call_with_its_retries() {
    let fake = Fake::start(vec![Reply::raw(503, "overloaded"); 10]).await;
    let config = HttpConfig {
        timeout: Duration::from_millis(400),
        connect_timeout: Duration::from_secs(1),
        max_attempts: 10,
        initial_backoff: Duration::from_millis(150),
        max_backoff: Duration::from_secs(1),
    };
    let error = ask(&openai(&fake, config), "hello")
        .await
        .expect_err("503s");
    assert!(
        matches!(
            error,
            ProviderError::Timeout { .. } | ProviderError::Http { status: 503, .. }
        ),
        "{error:?}"
    );
    let attempts = fake.requests().len();
    assert!((1..=3).contains(&attempts), "{attempts} attempts");
}

#[tokio::test]
async fn a_key_in_a_successful_answer_is_redacted() {
    // The fake echoes the last message back as the answer.
    let fake = Fake::start(Vec::new()).await;
    let answer = ask(
        &openai(&fake, HttpConfig::default()),
        &format!("repeat after me: {KEY}"),
    )
    .await
    .unwrap();
    assert!(!answer.contains(KEY), "{answer}");
    assert!(answer.contains("[redacted]"), "{answer}");
}

#[tokio::test]
async fn an_answer_over_the_cap_is_cut_and_says_so() {
    let long = "word ".repeat(MAX_ANSWER_BYTES / 5 * 2);
    let fake = Fake::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {"content": long}, "finish_reason": "stop"}]}),
    )])
    .await;
    let answer = ask(&openai(&fake, HttpConfig::default()), "talk")
        .await
        .unwrap();
    assert!(answer.len() < MAX_ANSWER_BYTES + 200, "{}", answer.len());
    assert!(answer.contains("was cut here"));
}
