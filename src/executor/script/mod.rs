//! The `script` mode: JavaScript that calls other modes through `tools`.
//!
//! The script runs on a thread of its own ([`sandbox`]); this side runs the
//! tool calls it asks for, several at once, through the call's
//! [`NestedCalls`] (the same path as a direct call), and refuses writes
//! unless the user allowed them for scripts. Every limit is one a script
//! cannot talk its way past: time, memory and stack are enforced inside
//! the engine, calls and sizes here.

mod sandbox;

use std::{
    sync::{Arc, mpsc},
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

/// The mode's own name: a script may not start another script.
const MODE: &str = "script";

/// How long past its deadline a script's thread may take to stop.
const GRACE: Duration = Duration::from_secs(2);

/// The script thread's own stack.
const THREAD_STACK: usize = 8 << 20;

/// Words in a tool's name that say it changes something (beside the
/// destructive ones the manifest knows).
const CHANGING_WORDS: [&str; 24] = [
    "add", "append", "apply", "commit", "create", "edit", "insert", "merge", "modify", "move",
    "patch", "post", "push", "put", "rename", "replace", "save", "send", "set", "update", "upload",
    "upsert", "write", "kill",
];

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
        let wall = request
            .timeout_ms
            .map_or(limits.wall, |ms| Duration::from_millis(ms).min(limits.wall));
        let input = request.input.map(|input| input.to_string());
        run(request.code, input, limits, wall, host, context.call).await
    }
}

/// Runs `code` and the calls it makes; the script's value, console and
/// counts on success.
async fn run(
    code: String,
    input: Option<String>,
    limits: Limits,
    wall: Duration,
    host: Arc<dyn NestedCalls>,
    call: &CallContext,
) -> Result<Value, ExecError> {
    let deadline = Instant::now() + wall;
    // Ends the script and its calls when this call ends for any reason.
    let cancel = call.cancel.child_token();
    let _stop_on_drop = cancel.clone().drop_guard();
    let (ask_tx, mut asks) = tokio::sync::mpsc::unbounded_channel::<Ask>();
    let (answer_tx, answers) = mpsc::channel::<Answer>();
    let (done_tx, mut done) = tokio::sync::oneshot::channel::<Ended>();
    let thread_cancel = cancel.clone();
    std::thread::Builder::new()
        .name("zenmode-script".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let ended = sandbox::run(
                &code,
                input.as_deref(),
                limits,
                deadline,
                thread_cancel,
                ask_tx,
                answers,
            );
            let _ = done_tx.send(ended);
        })
        .map_err(|e| ExecError::new("script_engine", format!("cannot start a script: {e}")))?;
    let mut in_flight: JoinSet<Answer> = JoinSet::new();
    // The engine checks its deadline itself; this is the net for a thread
    // stuck where the engine cannot look (the call answers, the thread is
    // left to end on its own).
    let give_up = tokio::time::sleep_until((deadline + GRACE).into());
    tokio::pin!(give_up);
    let ended = loop {
        tokio::select! {
            _ = &mut give_up => {
                cancel.cancel();
                return Err(ExecError::new(
                    "script_timeout",
                    "the script ran past its time limit and did not stop; it was abandoned",
                ));
            }
            ended = &mut done => match ended {
                Ok(ended) => break ended,
                Err(_) => return Err(ExecError::new("script_engine", "the script's thread ended without an answer")),
            },
            Some(ask) = asks.recv() => {
                let host = host.clone();
                let nested = nested_context(call, &cancel);
                in_flight.spawn(answer(host, ask, nested));
            }
            Some(Ok(answer)) = in_flight.join_next(), if !in_flight.is_empty() => {
                let _ = answer_tx.send(answer);
            }
        }
    };
    in_flight.abort_all();
    reply(ended, limits)
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
            if let Some(found) = host.resolve(&mode).await
                && let Some(why) = refused_write(host.as_ref(), &found)
            {
                return (id, Err(why));
            }
            (id, value_of(host.run(&mode, request, &call).await))
        }
    }
}

/// Why a script may not call `mode`, when it changes something and the
/// user has not allowed scripts to (the host says how to call it directly).
fn refused_write(host: &dyn NestedCalls, mode: &Mode) -> Option<String> {
    if !writes(mode) {
        return None;
    }
    host.write_refusal(mode)
}

/// Whether a mode may change something: not marked read-only, and marked
/// destructive or named with a changing verb.
pub fn writes(mode: &Mode) -> bool {
    let manifest = mode.manifest();
    if manifest.annotations.get("readOnlyHint") == Some(&Value::Bool(true)) {
        return false;
    }
    let name = manifest.upstream_tool.as_deref().unwrap_or(mode.name());
    manifest.destructive()
        || name
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| CHANGING_WORDS.contains(&word))
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
