//! The `script` mode: JavaScript that calls other modes through `tools`.
//!
//! The script runs in a process of its own ([`process`], [`sandbox`]),
//! ended by its own watchdog shortly after its deadline and killed by
//! this side a little later should that fail; this side runs the
//! tool calls it asks for, several at once, through the call's
//! [`NestedCalls`] (the same path as a direct call), and refuses writes
//! unless the user allowed them for scripts. Every limit is one a script
//! cannot talk its way past: time, memory and stack are enforced inside
//! the engine, calls and sizes here.

mod process;
mod sandbox;

pub use process::run_if_asked;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use super::contract::{ExecContext, ExecError, Executor, RequestShape};
use crate::{
    call::{ActivityNote, CallContext, NestedCalls, NestedOutcome},
    catalog::Mode,
};
use process::{EngineEnd, EngineProcess, FromEngine, Start};
use sandbox::{Answer, Ask, Ended, Limits, cut};

/// The request the `script` mode reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRequest {
    pub code: String,
    pub timeout_ms: Option<u64>,
    /// Any JSON, the script's global `input` (a stored result passes in
    /// here as `{"$result": id}`, replaced before the script runs).
    pub input: Option<Value>,
}

pub const REQUEST: RequestShape = RequestShape::of::<ScriptRequest>();

/// The longest any script runs (a server may set less: `--script-max-ms`).
pub const LONGEST_SCRIPT: Duration = Limits::DEFAULT.wall;

/// The mode's own name: a script may not start another script.
const MODE: &str = "script";

/// How long past its deadline a script's engine may take to end before
/// zenmode kills it: the net under the engine's own watchdog, for an
/// engine too starved or stopped to end itself.
const GRACE: Duration = Duration::from_secs(1);

/// How often a running script looks whether its session has ended.
const SESSION_CHECK: Duration = Duration::from_millis(100);

pub struct Script;

#[async_trait]
impl Executor for Script {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: ScriptRequest = serde_json::from_value(request)
            .map_err(|e| ExecError::new("invalid_request", e.to_string()))?;
        let Some(host) = context.call.nested.clone() else {
            return Err(ExecError::new(
                "script_unavailable",
                "this caller cannot run other modes for a script; call the modes one by one",
            ));
        };
        let limits = Limits::DEFAULT;
        let longest = host.longest_script().min(limits.wall);
        let wall = request
            .timeout_ms
            .map_or(longest, |ms| Duration::from_millis(ms).min(longest));
        let input = request.input.map(|input| input.to_string());
        run(request.code, input, limits, wall, host, context.call).await
    }
}

/// Runs `code` in an engine process of its own and the calls it makes;
/// the script's value, console and counts on success. The process is
/// killed when this returns, whatever the script is doing.
async fn run(
    code: String,
    input: Option<String>,
    limits: Limits,
    wall: Duration,
    host: Arc<dyn NestedCalls>,
    call: &CallContext,
) -> Result<Value, ExecError> {
    let deadline = Instant::now() + wall;
    // Ends the script's calls when this call ends for any reason.
    let cancel = call.cancel.child_token();
    let _stop_on_drop = cancel.clone().drop_guard();
    let start = Start {
        code,
        input,
        limits,
        wall,
    };
    let mut engine = EngineProcess::start(&start)
        .await
        .map_err(|e| ExecError::new("script_engine", format!("cannot start a script: {e}")))?;
    let mut in_flight: JoinSet<Answer> = JoinSet::new();
    // The engine checks its deadline itself, and its watchdog ends it soon
    // after when it is stuck where it cannot look (a built-in's own loop);
    // this is the net under both.
    let give_up = tokio::time::sleep_until((deadline + GRACE).into());
    tokio::pin!(give_up);
    let mut session_check = tokio::time::interval(SESSION_CHECK);
    let ended = loop {
        tokio::select! {
            _ = &mut give_up => return Err(stuck_past_deadline()),
            _ = cancel.cancelled() => {
                return Err(ExecError::new("cancelled", "the script was cancelled by the client"));
            }
            _ = session_check.tick() => {
                if call.client.as_ref().is_some_and(|client| client.is_closed()) {
                    return Err(ExecError::new("cancelled", "the session ended before the script did"));
                }
            }
            message = engine.next() => match message {
                Some(FromEngine::Ask(ask)) => {
                    let host = host.clone();
                    let nested = nested_context(call, &cancel);
                    in_flight.spawn(answer(host, ask, nested));
                }
                Some(FromEngine::Ended(ended)) => break ended,
                None => return Err(ended_early(engine.why_it_ended().await)),
            },
            Some(Ok(answer)) = in_flight.join_next(), if !in_flight.is_empty() => {
                if engine.answer(&answer).await.is_err() {
                    return Err(ended_early(engine.why_it_ended().await));
                }
            }
        }
    };
    in_flight.abort_all();
    reply(ended, limits)
}

fn stuck_past_deadline() -> ExecError {
    ExecError::new(
        "script_timeout",
        "the script ran past its time limit (timeout_ms, at most 30000) inside a built-in that does not stop; its engine was killed",
    )
}

/// The error of an engine that ended without its last line.
fn ended_early(end: EngineEnd) -> ExecError {
    match end {
        EngineEnd::PastDeadline => stuck_past_deadline(),
        EngineEnd::Other(why) => ExecError::new("script_engine", why),
    }
}

/// The context of a call made by the script: the script's cancellation,
/// the session's client (approval and flow-back reach the user as in a
/// direct call), its owner for result handles, its own activity note,
/// and no scripts of its own.
fn nested_context(call: &CallContext, cancel: &tokio_util::sync::CancellationToken) -> CallContext {
    CallContext {
        cancel: cancel.child_token(),
        progress: None,
        activity: ActivityNote::default(),
        client: call.client.clone(),
        takes_input_required: false,
        resume: None,
        // The script's calls read the handles of the session that runs it.
        principal: call.principal.clone(),
        nested: None,
    }
}

async fn answer(host: Arc<dyn NestedCalls>, ask: Ask, call: CallContext) -> Answer {
    match ask {
        Ask::Select { id, task } => (id, value_of(host.select(&task).await)),
        Ask::Call { id, mode, request } => {
            if mode == MODE {
                return (id, Err("a script cannot start another script".to_owned()));
            }
            // Fails closed: a tool not known to leave state alone (one still
            // starting, unknown, or named with no verb that reads) is refused
            // unless the user allowed writes for it.
            let found = host.resolve(&mode).await;
            if !found.as_deref().is_some_and(leaves_state)
                && let Some(why) = host.write_refusal(&mode, found.as_deref())
            {
                return (id, Err(why));
            }
            (id, value_of(host.run(&mode, request, &call).await))
        }
    }
}

/// Whether a script may call `mode` when writes are not allowed: annotated
/// read-only, or read by select's rule as a tool that only reads.
pub fn leaves_state(mode: &Mode) -> bool {
    crate::select::leaves_state(mode.manifest())
}

/// A nested answer as the script sees it: structured content when the
/// tool gives it, else its text; an error becomes a rejection.
fn value_of(outcome: NestedOutcome) -> Result<Value, String> {
    let NestedOutcome {
        is_error,
        body,
        passthrough,
    } = outcome;
    if !passthrough {
        return if is_error {
            Err(body["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| body.to_string()))
        } else {
            Ok(body)
        };
    }
    let text = body["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    if is_error {
        return Err(if text.is_empty() {
            "the tool failed".to_owned()
        } else {
            text
        });
    }
    Ok(match body.get("structuredContent") {
        Some(structured)
            if !structured.is_null()
                && !crate::gateway::text_result::repeats_text(structured, &text) =>
        {
            structured.clone()
        }
        _ => Value::String(text),
    })
}

/// The mode's answer: the value, the console, what was cut.
fn reply(ended: Ended, limits: Limits) -> Result<Value, ExecError> {
    let Ended {
        result,
        console,
        console_cut,
        calls,
    } = ended;
    let mut notes = Vec::new();
    if console_cut {
        notes.push(format!(
            "console output was cut at {} bytes",
            limits.max_log_bytes
        ));
    }
    let value = match result {
        Ok(value) => value,
        Err(failure) => {
            let mut error = ExecError::new(failure.kind, failure.message)
                .with("calls", calls)
                .with("console", console);
            if let (Some(line), Some(column)) = (failure.line, failure.column) {
                error = error.with("line", line).with("column", column);
            }
            if !notes.is_empty() {
                error = error.with("notes", notes);
            }
            return Err(error);
        }
    };
    let text = value.to_string();
    let value = if text.len() > limits.max_result_bytes {
        notes.push(format!(
            "the result was {} bytes and was cut to {}; return less (a summary, a count, the lines that matter)",
            text.len(),
            limits.max_result_bytes
        ));
        Value::String(cut(&text, limits.max_result_bytes).to_owned())
    } else {
        value
    };
    let mut body = Map::new();
    body.insert("result".into(), value);
    if !console.is_empty() {
        body.insert("console".into(), Value::String(console));
    }
    body.insert("calls".into(), json!(calls));
    if !notes.is_empty() {
        body.insert("notes".into(), json!(notes));
    }
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_keeps_whole_characters() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("hello", 10), "hello");
    }

    #[test]
    fn an_upstream_result_gives_its_structured_content_else_its_text() {
        let text = NestedOutcome {
            is_error: false,
            body: json!({"content": [{"type": "text", "text": "hi"}]}),
            passthrough: true,
        };
        assert_eq!(value_of(text), Ok(json!("hi")));
        let structured = NestedOutcome {
            is_error: false,
            body: json!({"content": [], "structuredContent": {"n": 1}}),
            passthrough: true,
        };
        assert_eq!(value_of(structured), Ok(json!({"n": 1})));
        // A structured copy of the text (server-filesystem's) is the text.
        let copied = NestedOutcome {
            is_error: false,
            body: json!({"content": [{"type": "text", "text": "a\nb"}],
                         "structuredContent": {"content": "a\nb"}}),
            passthrough: true,
        };
        assert_eq!(value_of(copied), Ok(json!("a\nb")));
        let failed = NestedOutcome {
            is_error: true,
            body: json!({"error": "quarantined", "message": "held"}),
            passthrough: false,
        };
        assert_eq!(value_of(failed), Err("held".to_owned()));
    }
}
