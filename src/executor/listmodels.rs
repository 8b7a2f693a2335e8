//! `listmodels`: reports which model providers the environment configures.
//!
//! Key values are never read into the result, only whether they are set.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

/// Provider name and the environment variable that enables it.
const PROVIDERS: &[(&str, &str)] = &[
    ("openai", "OPENAI_API_KEY"),
    ("gemini", "GEMINI_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("xai", "XAI_API_KEY"),
    ("custom", "CUSTOM_API_URL"),
];

pub struct ListModels;

#[async_trait]
impl Executor for ListModels {
    async fn execute(&self, _: Value, _: &ExecContext<'_>) -> Result<Value, ExecError> {
        let providers: Vec<Value> = PROVIDERS
            .iter()
            .map(|(name, variable)| {
                let configured = std::env::var(variable).is_ok_and(|v| !v.trim().is_empty());
                json!({"provider": name, "env": variable, "configured": configured})
            })
            .collect();
        let configured = providers.iter().filter(|p| p["configured"] == true).count();
        let default_model = std::env::var("DEFAULT_MODEL").unwrap_or_else(|_| "auto".to_owned());
        Ok(json!({
            "providers": providers,
            "configured_providers": configured,
            "default_model": default_model,
            "note": "This build detects providers from the environment but does not call models yet; modes that need a model report that they have no executor.",
        }))
    }
}
