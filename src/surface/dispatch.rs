//! `call`, `batch` and `pipe`: running tools by name, under every strategy.
//!
//! Design 003 registers these three in every strategy, so an agent's
//! dispatch code survives a change of strategy. `discover` lists them; the
//! other strategies answer them without listing them (see
//! `Fronted` in `assemble.rs`).
//!
//! Answers use that design's `CommandResult` envelope: `{success, data,
//! reasoning, confidence, metadata: {executionTimeMs}}`, or `{success:
//! false, error: {code, message, suggestion}}` with `COMMAND_NOT_FOUND` and
//! `VALIDATION_ERROR` among the codes.
//!
//! In a `pipe` input, a string that is exactly `$N` stands for the data of
//! step N (counting from 1), and `$N/pointer` for the part of it at that
//! JSON pointer, e.g. `"$1/continuation_id"`. Only earlier steps can be quoted.

use std::time::Instant;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::parse_arguments;
use crate::{
    call::CallContext,
    engine::{Engine, Outcome},
};

pub const CALL: &str = "call";
pub const BATCH: &str = "batch";
pub const PIPE: &str = "pipe";

const MAX_CALLS: usize = 20;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    command: String,
    #[serde(default)]
    input: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchArgs {
    calls: Vec<CallArgs>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PipeArgs {
    steps: Vec<CallArgs>,
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A successful `CommandResult`.
pub fn success(data: Value, reasoning: String, started: Instant) -> Outcome {
    Outcome::ok(json!({
        "success": true,
        "data": data,
        "reasoning": reasoning,
        "confidence": 1.0,
        "metadata": {"executionTimeMs": elapsed_ms(started)},
    }))
}

/// A failed `CommandResult`; `details` keeps what zenmode knows beyond the
/// design's three fields (violations, the engine's own error body).
pub fn failure(
    code: &str,
    message: String,
    suggestion: String,
    details: Option<Value>,
    started: Instant,
) -> Outcome {
    let mut error = json!({"code": code, "message": message, "suggestion": suggestion});
    if let Some(details) = details {
        error["details"] = details;
    }
    Outcome::error(json!({
        "success": false,
        "error": error,
        "metadata": {"executionTimeMs": elapsed_ms(started)},
    }))
}

/// The `COMMAND_NOT_FOUND` suggestion: the closest name, and where to look.
pub fn not_found_suggestion(closest: &[String], prefix: &str) -> String {
    let list = format!("{prefix}discover lists every command.");
    match closest.first() {
        Some(best) => format!("Closest name: '{best}'. {list}"),
        None => list,
    }
}

/// The tool schema shared by `call` and the items of `batch` and `pipe`.
pub fn call_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Tool name"},
            "input": {"type": "object", "description": "The tool's fields"}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// The three tools' definitions, named with `prefix`.
pub fn tools(prefix: &str) -> Vec<Value> {
    let runs = json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": true});
    vec![
        json!({
            "name": format!("{prefix}{CALL}"),
            "title": "Run a tool",
            "description": "Validate the input against the tool's schema and run it.",
            "inputSchema": call_schema(),
            "annotations": runs
        }),
        json!({
            "name": format!("{prefix}{BATCH}"),
            "title": "Run several tools",
            "description": "Run up to 20 calls; each succeeds or fails on its own, results in order.",
            "inputSchema": {
                "type": "object",
                "properties": {"calls": {"type": "array", "items": call_schema(), "minItems": 1, "maxItems": MAX_CALLS, "description": "The calls"}},
                "required": ["calls"],
                "additionalProperties": false
            },
            "annotations": runs
        }),
        json!({
            "name": format!("{prefix}{PIPE}"),
            "title": "Chain tools",
            "description": "Run up to 20 calls in order; an input string \"$N\" or \"$N/field\" is replaced by step N's data (or that field of it). Stops at the first failure.",
            "inputSchema": {
                "type": "object",
                "properties": {"steps": {"type": "array", "items": call_schema(), "minItems": 1, "maxItems": MAX_CALLS, "description": "The steps, first to last"}},
                "required": ["steps"],
                "additionalProperties": false
            },
            "annotations": runs
        }),
    ]
}

/// Answers `call`, `batch` or `pipe` (unprefixed `name`); `None` for any
/// other name.
pub async fn handle(
    engine: &Engine,
    prefix: &str,
    name: &str,
    arguments: Map<String, Value>,
    context: &CallContext,
) -> Option<Outcome> {
    let tools = tools("");
    Some(match name {
        CALL => match parse_arguments::<CallArgs>(&tools, name, arguments) {
            Ok(args) => run(engine, prefix, &args, context).await,
            Err(outcome) => outcome,
        },
        BATCH => match parse_arguments(&tools, name, arguments) {
            Ok(args) => batch(engine, prefix, args, context).await,
            Err(outcome) => outcome,
        },
        PIPE => match parse_arguments(&tools, name, arguments) {
            Ok(args) => pipe(engine, prefix, args, context).await,
            Err(outcome) => outcome,
        },
        _ => return None,
    })
}

/// One call, as a `CommandResult`.
async fn run(engine: &Engine, prefix: &str, call: &CallArgs, context: &CallContext) -> Outcome {
    let started = Instant::now();
    let command = &call.command;
    let outcome = match engine
        .execute(command, Value::Object(call.input.clone()), None, context)
        .await
    {
        Ok(outcome) => outcome,
        Err(unknown) => {
            return failure(
                "COMMAND_NOT_FOUND",
                format!("'{command}' is not a command here"),
                not_found_suggestion(&unknown.closest, prefix),
                None,
                started,
            );
        }
    };
    if !outcome.is_error {
        return success(outcome.body, format!("Ran '{command}'"), started);
    }
    let body = outcome.body;
    if body["error"] == "invalid_request" {
        let problems: Vec<String> = body["violations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| {
                let pointer = v["pointer"].as_str().unwrap_or_default();
                let problem = v["problem"].as_str().unwrap_or_default();
                if pointer.is_empty() || pointer == "/" {
                    problem.to_owned()
                } else {
                    format!("{pointer}: {problem}")
                }
            })
            .collect();
        return failure(
            "VALIDATION_ERROR",
            format!("'{command}' refused its input: {}", problems.join("; ")),
            format!("{prefix}detail with command '{command}' shows the input it expects."),
            Some(body),
            started,
        );
    }
    // An upstream's own error result, or one of the engine's error bodies.
    let code = body["error"]
        .as_str()
        .map_or("EXECUTION_ERROR".to_owned(), str::to_ascii_uppercase);
    let message = body["message"]
        .as_str()
        .map_or_else(|| format!("'{command}' failed"), str::to_owned);
    failure(
        &code,
        message,
        format!("Check the input with {prefix}detail, or try another command."),
        Some(body),
        started,
    )
}

async fn batch(engine: &Engine, prefix: &str, args: BatchArgs, context: &CallContext) -> Outcome {
    let started = Instant::now();
    if args.calls.is_empty() || args.calls.len() > MAX_CALLS {
        return failure(
            "VALIDATION_ERROR",
            format!(
                "calls takes 1 to {MAX_CALLS} calls (got {})",
                args.calls.len()
            ),
            "Split the calls into batches of at most 20.".to_owned(),
            None,
            started,
        );
    }
    let mut results = Vec::new();
    let mut failed = 0;
    for call in &args.calls {
        let outcome = run(engine, prefix, call, context).await;
        failed += usize::from(outcome.is_error);
        results.push(
            json!({"command": call.command, "ok": !outcome.is_error, "result": outcome.body}),
        );
    }
    let total = args.calls.len();
    let body = json!({"results": results, "succeeded": total - failed, "failed": failed});
    // Partial success is still a success; only a batch where every call
    // failed is reported as an error.
    let mut outcome = success(
        body,
        format!("{} of {total} calls succeeded", total - failed),
        started,
    );
    if failed == total {
        outcome.is_error = true;
        outcome.body["success"] = json!(false);
    }
    outcome
}

async fn pipe(engine: &Engine, prefix: &str, args: PipeArgs, context: &CallContext) -> Outcome {
    let started = Instant::now();
    if args.steps.is_empty() || args.steps.len() > MAX_CALLS {
        return failure(
            "VALIDATION_ERROR",
            format!(
                "steps takes 1 to {MAX_CALLS} calls (got {})",
                args.steps.len()
            ),
            "A pipe has 1 to 20 steps.".to_owned(),
            None,
            started,
        );
    }
    let mut results: Vec<Value> = Vec::new();
    for (index, step) in args.steps.iter().enumerate() {
        let number = index + 1;
        let mut input = Value::Object(step.input.clone());
        if let Err(problem) = substitute(&mut input, &results) {
            return failure(
                "BAD_REFERENCE",
                format!("step {number} ({}): {problem}", step.command),
                "Quote only earlier steps, as \"$N\" or \"$N/pointer\".".to_owned(),
                Some(json!({"failed_step": number, "completed": results.len()})),
                started,
            );
        }
        let call = CallArgs {
            command: step.command.clone(),
            input: match input {
                Value::Object(map) => map,
                _ => Map::new(),
            },
        };
        let outcome = run(engine, prefix, &call, context).await;
        if outcome.is_error {
            return failure(
                "PIPE_FAILED",
                format!(
                    "step {number} ({}) failed; the steps after it did not run",
                    step.command
                ),
                "Fix that step's input and run the pipe again.".to_owned(),
                Some(
                    json!({"failed_step": number, "completed": results.len(), "result": outcome.body}),
                ),
                started,
            );
        }
        results.push(outcome.body["data"].clone());
    }
    success(
        json!({"steps": results.len(), "result": results.last(), "results": results}),
        format!("Ran {} steps", results.len()),
        started,
    )
}

/// Replaces every `$N` / `$N/pointer` string in `value` with the quoted
/// part of an earlier result.
fn substitute(value: &mut Value, results: &[Value]) -> Result<(), String> {
    match value {
        Value::String(text) => {
            if let Some(reference) = parse_reference(text) {
                let (step, pointer) = reference?;
                let result = results
                    .get(step.wrapping_sub(1))
                    .filter(|_| step >= 1)
                    .ok_or_else(|| {
                        format!(
                            "{text:?} quotes step {step}, but only steps 1 to {} have run",
                            results.len()
                        )
                    })?;
                let found = if pointer.is_empty() {
                    Some(result)
                } else {
                    result.pointer(pointer)
                };
                *value = found.cloned().ok_or_else(|| {
                    format!("{text:?}: step {step}'s result has nothing at {pointer}")
                })?;
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|item| substitute(item, results)),
        Value::Object(map) => map
            .values_mut()
            .try_for_each(|item| substitute(item, results)),
        _ => Ok(()),
    }
}

/// `Some` when `text` has the form of a reference: `$` and digits, then
/// nothing or a JSON pointer.
fn parse_reference(text: &str) -> Option<Result<(usize, &str), String>> {
    let rest = text.strip_prefix('$')?;
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let (number, pointer) = rest.split_at(digits);
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return None;
    }
    Some(
        number
            .parse::<usize>()
            .map(|step| (step, pointer))
            .map_err(|_| format!("{text:?}: the step number is too large")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_recognised_and_resolved() {
        assert!(parse_reference("$").is_none());
        assert!(parse_reference("$abc").is_none());
        assert!(parse_reference("$1x").is_none());
        assert_eq!(parse_reference("$2").unwrap().unwrap(), (2, ""));
        assert_eq!(parse_reference("$1/a/b").unwrap().unwrap(), (1, "/a/b"));

        let results = vec![json!({"id": "t-1", "list": [1, 2]})];
        let mut input = json!({"x": "$1/id", "y": ["$1/list/1", "plain"], "z": "$1"});
        substitute(&mut input, &results).unwrap();
        assert_eq!(
            input,
            json!({"x": "t-1", "y": [2, "plain"], "z": results[0]})
        );

        let mut later = json!({"x": "$2"});
        assert!(
            substitute(&mut later, &results)
                .unwrap_err()
                .contains("only steps 1 to 1")
        );
        let mut zero = json!({"x": "$0"});
        assert!(substitute(&mut zero, &results).is_err());
        let mut missing = json!({"x": "$1/nope"});
        assert!(
            substitute(&mut missing, &results)
                .unwrap_err()
                .contains("nothing at /nope")
        );
    }
}
