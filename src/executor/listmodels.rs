//! `listmodels`: the configured providers and every model they make available.
//!
//! Key values are never read into the result, only which variable enabled a provider.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

/// The variables that can enable a provider, for the "how to configure" hint.
const PROVIDER_VARIABLES: &str =
    "OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY, XAI_API_KEY or CUSTOM_API_URL";

pub struct ListModels;

#[async_trait]
impl Executor for ListModels {
    async fn execute(&self, _: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let providers = &context.services.providers;
        let configured: Vec<Value> = providers
            .configured()
            .into_iter()
            .map(|(provider, variable)| json!({"provider": provider, "enabled_by": variable}))
            .collect();
        let mut reply = json!({
            "providers": configured,
            "default_model": providers.default_model(),
            "models": providers.models(),
        });
        if providers.is_empty() {
            reply["note"] = json!(format!(
                "No model provider is configured. Set one of {PROVIDER_VARIABLES} in the server's environment. Local modes (planner, challenge, apilookup, tracer, docgen, version) work without one; workflow modes finish without expert analysis; chat, consensus need one."
            ));
        }
        if !providers.problems().is_empty() {
            reply["problems"] = json!(providers.problems());
        }
        Ok(reply)
    }
}
