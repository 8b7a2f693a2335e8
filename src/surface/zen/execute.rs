//! `zen_execute`: `{mode, request, continuation_id?}` -> the mode's result.
//!
//! The argument handling lives here; validation and dispatch are the engine's
//! ([`Engine::execute`]), shared with mode tools called by name and `zenmode exec`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::meta::{EXECUTE, parse_arguments, unknown_mode};
use crate::{
    call::CallContext,
    engine::{Engine, Outcome},
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteArgs {
    mode: String,
    #[serde(default)]
    request: Option<Value>,
    continuation_id: Option<String>,
}

pub async fn call(engine: &Engine, arguments: Map<String, Value>, call: &CallContext) -> Outcome {
    let args = match parse_arguments::<ExecuteArgs>(EXECUTE, arguments) {
        Ok(args) => args,
        Err(outcome) => return outcome,
    };
    let request = match args.request {
        // The schema requires it; guessing {} would run a mode the caller
        // may not have meant to run without fields.
        None | Some(Value::Null) => {
            return Outcome::failure(
                "invalid_arguments",
                "request is required: an object with the mode's fields ({} for a mode that takes none)",
            );
        }
        // Some models send the nested object as a JSON string; accept that.
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(object @ Value::Object(_)) => object,
            _ => {
                return Outcome::failure(
                    "invalid_arguments",
                    "request must be a JSON object with the mode's fields (got a string that is not one)",
                );
            }
        },
        Some(other) => other,
    };
    engine
        .execute(&args.mode, request, args.continuation_id.as_deref(), call)
        .await
        .unwrap_or_else(unknown_mode)
}
