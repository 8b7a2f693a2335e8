//! The final step's optional expert consultation.
//!
//! The expert sees the mode's system prompt, the consolidated findings, the
//! mode's own parameters, earlier conversation from other modes, and the
//! relevant files embedded within a share of the model's context window.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Consolidated, WorkflowSpec, git, spec::Gather};
use crate::{
    conversation::{Turn, build_history},
    executor::{
        ExecContext,
        support::{PromptBudget, embed, load_images},
    },
    providers::{Message, ModelRequest},
};

/// Fields every workflow request may carry; anything else is mode-specific
/// and is passed to the expert as a parameter.
const COMMON_FIELDS: &[&str] = &[
    "step",
    "step_number",
    "total_steps",
    "next_step_required",
    "findings",
    "files_checked",
    "relevant_files",
    "relevant_context",
    "issues_found",
    "confidence",
    "hypothesis",
    "images",
    "use_assistant_model",
    "model",
    "temperature",
    "thinking_mode",
    "continuation_id",
];

/// What the caller may choose about the consultation; only modes that
/// consult an expert define these fields.
#[derive(Debug, Default, Deserialize)]
pub struct ExpertOptions {
    #[serde(default)]
    pub use_assistant_model: Option<bool>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub thinking_mode: Option<String>,
}

/// `text`, or its start and a note when it is over `max_tokens` (by the
/// same estimate the budgets use).
fn cut_to_tokens(text: &str, max_tokens: usize) -> String {
    if crate::files::estimate_tokens(text) <= max_tokens {
        return text.to_owned();
    }
    let keep: String = text.chars().take(max_tokens.saturating_mul(4)).collect();
    format!("{keep}\n\n(cut here: the rest is over this prompt's budget)")
}

fn skipped(reason: impl Into<String>) -> Value {
    json!({"status": "skipped", "reason": reason.into()})
}

pub async fn consult(
    spec: &WorkflowSpec,
    context: &ExecContext<'_>,
    request: &Value,
    consolidated: &Consolidated,
    thread_id: &str,
) -> Value {
    let mode = context.mode.name();
    if !spec.expert {
        return json!({"status": "not_applicable", "reason": "this mode finishes locally, without an expert model"});
    }
    let options: ExpertOptions = match serde_json::from_value(request.clone()) {
        Ok(options) => options,
        Err(error) => return skipped(format!("the expert options cannot be read: {error}")),
    };
    if options.use_assistant_model == Some(false) {
        return skipped("use_assistant_model is false");
    }
    for (field, values) in &spec.skip_expert_when {
        if let Some(value) = request.get(field).and_then(Value::as_str)
            && values.iter().any(|v| v == value)
        {
            return skipped(format!(
                "{field} is \"{value}\": the investigation's own conclusion stands without a second opinion"
            ));
        }
    }
    let services = context.services;
    let (provider, model) = match services.providers.resolve(options.model.as_deref(), mode) {
        Ok(found) => found,
        Err(error) => {
            return json!({"status": "skipped", "reason": error.to_string(), "error": error.kind()});
        }
    };
    let budget = PromptBudget::for_window(model.context_window);

    let mut prompt = format!("# Final step of a {mode} investigation\n\n");
    let parameters: Vec<String> = request
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !COMMON_FIELDS.contains(&key.as_str()))
        .map(|(key, value)| format!("- {key}: {value}"))
        .collect();
    if !parameters.is_empty() {
        prompt.push_str(&format!("## Parameters\n{}\n\n", parameters.join("\n")));
    }
    if let Ok(thread) = services.memory.get(thread_id).await
        && thread.turns.iter().any(|turn| turn.mode != mode)
    {
        let history = build_history(&thread, budget.history);
        if !history.text.is_empty() {
            prompt.push_str(&format!("## Earlier conversation\n{}\n\n", history.text));
        }
    }
    // The agent's own record can be as long as it likes; the prompt cannot.
    prompt.push_str(&format!(
        "## Investigation\n{}\n",
        cut_to_tokens(
            &consolidated.to_markdown(),
            budget.history.max(budget.files / 2)
        )
    ));
    if spec.gather == Some(Gather::GitChanges) {
        match git::diff(context, request, budget.diff).await {
            Ok(diff) => prompt.push_str(&format!("\n## Changes under review\n{diff}\n")),
            Err(problem) => prompt.push_str(&format!(
                "\n## Changes under review\n(not available: {problem})\n"
            )),
        }
    }
    let embedded = embed(context, consolidated.relevant_files.clone(), budget.files).await;
    if !embedded.text.is_empty() {
        prompt.push_str(&format!("\n## Relevant files\n{}\n", embedded.text));
    }
    let left_out = embedded.left_out_summary();
    if let Some(left_out) = &left_out {
        prompt.push_str(&format!(
            "\n## Files left out\n{}\n",
            left_out.to_markdown()
        ));
    }

    // Images from the final step, for models that accept them.
    let image_specs: Vec<String> = request
        .get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let images = match load_images(context, &image_specs) {
        Ok(images) if model.supports_images => images,
        Ok(_) => Vec::new(),
        Err(error) => {
            return json!({"status": "skipped", "reason": error.message, "error": error.kind});
        }
    };
    let model_request = ModelRequest {
        model: model.name.clone(),
        system_prompt: spec.system_prompt.clone(),
        messages: vec![Message::user(prompt).with_images(images)],
        temperature: options.temperature,
        thinking_mode: options.thinking_mode.clone(),
        max_output_tokens: None,
    };
    let call = context.call;
    let waited = call.ask_model(provider.as_ref(), &model_request).await;
    let files_embedded: Vec<String> = embedded
        .files
        .iter()
        .map(|file| file.path.display().to_string())
        .collect();
    match waited {
        None => json!({"status": "cancelled", "reason": "the client cancelled the request"}),
        Some(Err(error)) => json!({
            "status": "failed",
            "error": error.kind(),
            "message": error.to_string(),
            "model": model.name,
        }),
        Some(Ok(response)) => {
            let turn =
                Turn::assistant(mode, response.text.clone()).with_model(response.model.clone());
            if let Err(error) = services.memory.append(thread_id, turn).await {
                tracing::warn!(%error, "could not record the expert's answer");
            }
            json!({
                "status": "complete",
                "model": response.model,
                "provider": response.provider,
                "content": response.text,
                "files_embedded": files_embedded,
                "files_left_out": left_out,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_investigations_are_cut_to_the_budget() {
        assert_eq!(cut_to_tokens("short", 10), "short");
        let long = "word ".repeat(10_000);
        let cut = cut_to_tokens(&long, 100);
        assert!(cut.len() < 600, "{}", cut.len());
        assert!(cut.ends_with("over this prompt's budget)"));
    }
}
