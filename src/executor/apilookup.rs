//! `apilookup`: returns the steps the client's model should follow to find
//! current, version-accurate API documentation instead of answering from memory.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor, RequestShape, support::parse_request};

pub const REQUEST: RequestShape = RequestShape::of::<PromptRequest>();

#[derive(Deserialize)]
struct PromptRequest {
    prompt: String,
}

pub struct ApiLookup;

#[async_trait]
impl Executor for ApiLookup {
    async fn execute(&self, request: Value, _: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: PromptRequest = parse_request(request)?;
        let question = request.prompt.trim();
        if question.is_empty() {
            return Err(ExecError::new(
                "empty_prompt",
                "prompt is empty: say which API, library or SDK to look up",
            ));
        }
        Ok(json!({
            "status": "lookup_instructions",
            "query": question,
            "instructions": [
                "Treat what you remember about this API as possibly outdated.",
                "Find the newest released version first: the package registry or the project's release notes.",
                "Read the official documentation for that exact version, not a blog post or an old answer.",
                "Note breaking changes and deprecations between the version in use and the newest one.",
                "Answer with the version you checked, the source you read, and code that matches that version."
            ],
            "search_hint": format!("{question} latest version official documentation"),
        }))
    }
}
