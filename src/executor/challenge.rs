//! `challenge`: turns a statement into instructions to re-examine it critically,
//! so the agent weighs a pushback instead of agreeing by reflex.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor, RequestShape, support::parse_request};

pub const REQUEST: RequestShape = RequestShape::of::<PromptRequest>();

#[derive(Deserialize)]
struct PromptRequest {
    prompt: String,
}

pub struct Challenge;

#[async_trait]
impl Executor for Challenge {
    async fn execute(&self, request: Value, _: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: PromptRequest = parse_request(request)?;
        let statement = request.prompt.trim();
        if statement.is_empty() {
            return Err(ExecError::new(
                "empty_prompt",
                "prompt is empty: give the statement to re-examine",
            ));
        }
        Ok(json!({
            "status": "challenge_accepted",
            "original_statement": statement,
            "challenge_prompt": format!(
                "Re-examine the following with fresh eyes before you answer: \"{statement}\". \
                 Do not agree just because it was said. Check it against the code, the facts and \
                 your earlier reasoning; say plainly whether it holds, partly holds or is wrong, \
                 give the evidence either way, and change course only if the evidence supports it."
            ),
        }))
    }
}
