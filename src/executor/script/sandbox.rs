//! The JavaScript side of a script: one QuickJS runtime on its own thread,
//! with `tools` and `console` as the only things it can reach.
//!
//! QuickJS is not `Send`, so the runtime lives and dies on the thread that
//! made it. Tool calls leave as messages to the async side (the executor),
//! which runs them and sends each answer back; this thread resolves the
//! promise the script is awaiting. Time, cancellation, memory and stack are
//! held by QuickJS itself (interrupt handler, memory and stack limits), so
//! a loop, a bomb or a recursion ends the script and nothing else.

use std::{
    cell::RefCell,
    collections::HashMap,
    rc::Rc,
    sync::mpsc::{Receiver, RecvTimeoutError},
    time::{Duration, Instant},
};

use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Object, Persistent, Promise,
    Runtime, Value as JsValue, function::Rest, promise::PromiseState,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// What one script may use.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Limits {
    pub wall: Duration,
    pub memory_bytes: usize,
    pub stack_bytes: usize,
    pub max_calls: u64,
    pub max_log_bytes: usize,
    pub max_result_bytes: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        wall: Duration::from_secs(30),
        memory_bytes: 64 << 20,
        // Well inside the thread's own stack (below), so QuickJS reports
        // the overflow before the thread could fault.
        stack_bytes: 1 << 20,
        max_calls: 100,
        max_log_bytes: 64 << 10,
        max_result_bytes: 64 << 10,
    };
}

/// What the script asks of the async side.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum Ask {
    Call {
        id: u64,
        mode: String,
        request: Value,
    },
    Select {
        id: u64,
        task: String,
    },
}

/// An answer to an [`Ask`]: the value, or the message to reject with.
pub type Answer = (u64, Result<Value, String>);

/// How a script ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ended {
    pub result: Result<Value, ScriptFailure>,
    pub console: String,
    pub console_cut: bool,
    pub calls: u64,
}

/// Why a script did not give a value.
#[derive(Debug, Serialize)]
pub struct ScriptFailure {
    pub kind: &'static str,
    pub message: String,
    /// Where in the caller's code, when the engine says so.
    pub line: Option<u64>,
    pub column: Option<u64>,
}

/// The failure kinds the engine gives, so that one read back from the
/// engine's process is one of them (anything else reads as an engine fault).
const KINDS: [&str; 6] = [
    "script_timeout",
    "script_memory",
    "script_stack",
    "script_error",
    "script_engine",
    "cancelled",
];

/// A [`ScriptFailure`] as read from the engine's process.
#[derive(Deserialize)]
struct FailureRead {
    kind: String,
    message: String,
    line: Option<u64>,
    column: Option<u64>,
}

impl<'de> Deserialize<'de> for ScriptFailure {
    fn deserialize<D: serde::Deserializer<'de>>(reader: D) -> Result<Self, D::Error> {
        let read = FailureRead::deserialize(reader)?;
        Ok(ScriptFailure {
            kind: KINDS
                .iter()
                .find(|known| **known == read.kind)
                .copied()
                .unwrap_or("script_engine"),
            message: read.message,
            line: read.line,
            column: read.column,
        })
    }
}

impl ScriptFailure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        ScriptFailure {
            kind,
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// The most bytes of a failed script's message that are kept.
pub const MAX_MESSAGE_BYTES: usize = 8 << 10;

/// The wrapper's opening line: the caller's line 1 is the engine's line 2.
const PREFIX: &str = "(async () => {\n";
/// How long the wait for an answer sleeps between checks of the clock.
const TICK: Duration = Duration::from_millis(20);

/// The state the host functions share on this thread.
struct Shared {
    console: String,
    console_cut: bool,
    calls: u64,
    next_id: u64,
    pending: HashMap<u64, (Persistent<Function<'static>>, Persistent<Function<'static>>)>,
}

/// Runs `code` to its end on the calling thread (a thread of its own).
pub fn run(
    code: &str,
    input: Option<&str>,
    limits: Limits,
    deadline: Instant,
    cancel: CancellationToken,
    asks: UnboundedSender<Ask>,
    answers: Receiver<Answer>,
) -> Ended {
    let shared = Rc::new(RefCell::new(Shared {
        console: String::new(),
        console_cut: false,
        calls: 0,
        next_id: 0,
        pending: HashMap::new(),
    }));
    let result = match Runtime::new() {
        Ok(runtime) => {
            runtime.set_memory_limit(limits.memory_bytes);
            runtime.set_max_stack_size(limits.stack_bytes);
            runtime.set_gc_threshold(limits.memory_bytes / 4);
            let stop = cancel.clone();
            runtime.set_interrupt_handler(Some(Box::new(move || {
                stop.is_cancelled() || Instant::now() >= deadline
            })));
            match Context::full(&runtime) {
                Ok(context) => context.with(|ctx| {
                    let result = evaluate(
                        &ctx, code, input, &limits, deadline, &cancel, &asks, &answers, &shared,
                    );
                    // Promises still awaiting an answer hold engine values;
                    // they must go before the engine does, or freeing the
                    // runtime aborts the process.
                    shared.borrow_mut().pending.clear();
                    result
                }),
                Err(error) => Err(ScriptFailure::new("script_engine", error.to_string())),
            }
        }
        Err(error) => Err(ScriptFailure::new("script_engine", error.to_string())),
    };
    let shared = Rc::try_unwrap(shared)
        .map(RefCell::into_inner)
        .unwrap_or_else(|rc| {
            let mut shared = rc.borrow_mut();
            Shared {
                console: std::mem::take(&mut shared.console),
                console_cut: shared.console_cut,
                calls: shared.calls,
                next_id: 0,
                pending: HashMap::new(),
            }
        });
    let result = result.map_err(|mut failure| {
        if failure.message.len() > MAX_MESSAGE_BYTES {
            let whole = failure.message.len();
            failure.message = format!(
                "{}... (the message was {whole} bytes, cut to {MAX_MESSAGE_BYTES})",
                cut(&failure.message, MAX_MESSAGE_BYTES)
            );
        }
        failure
    });
    Ended {
        result,
        console: shared.console,
        console_cut: shared.console_cut,
        calls: shared.calls,
    }
}

#[allow(clippy::too_many_arguments)]
fn evaluate<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    input: Option<&str>,
    limits: &Limits,
    deadline: Instant,
    cancel: &CancellationToken,
    asks: &UnboundedSender<Ask>,
    answers: &Receiver<Answer>,
    shared: &Rc<RefCell<Shared>>,
) -> Result<Value, ScriptFailure> {
    let stopped = |error: ScriptFailure| stop_reason(deadline, cancel).unwrap_or(error);
    // A deadline that passes while the engine is being set up interrupts
    // that too: it is the script's timeout, not an engine fault.
    install(ctx, limits, asks, shared)
        .map_err(|error| stopped(ScriptFailure::new("script_engine", error.to_string())))?;
    if let Some(input) = input {
        // Parsed inside the engine, so a large input counts against the
        // script's memory limit like anything the script builds.
        let value = ctx
            .json_parse(input)
            .catch(ctx)
            .map_err(|caught| stopped(failure(ctx, caught)))?;
        ctx.globals()
            .set("input", value)
            .map_err(|error| stopped(ScriptFailure::new("script_engine", error.to_string())))?;
    }
    let wrapped = format!("{PREFIX}{code}\n}})()");
    let mut options = rquickjs::context::EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.backtrace_barrier = true;
    let promise: Promise = ctx
        .eval_with_options(wrapped, options)
        .catch(ctx)
        .map_err(|caught| stopped(failure(ctx, caught)))?;
    loop {
        while ctx.execute_pending_job() {}
        match promise.state() {
            PromiseState::Resolved => {
                let value: JsValue = promise
                    .result::<JsValue>()
                    .transpose()
                    .catch(ctx)
                    .map_err(|caught| stopped(failure(ctx, caught)))?
                    .unwrap_or_else(|| JsValue::new_undefined(ctx.clone()));
                return to_json(ctx, value).map_err(stopped);
            }
            PromiseState::Rejected => {
                let caught = promise
                    .result::<JsValue>()
                    .map(|r| r.catch(ctx))
                    .and_then(Result::err);
                return Err(stopped(match caught {
                    Some(caught) => failure(ctx, caught),
                    None => ScriptFailure::new("script_error", "the script failed"),
                }));
            }
            PromiseState::Pending => {}
        }
        if shared.borrow().pending.is_empty() {
            return Err(stopped(ScriptFailure::new(
                "script_error",
                "the script awaits something that never settles (only tools.call and tools.select answer)",
            )));
        }
        let (id, answer) = loop {
            if let Some(reason) = stop_reason(deadline, cancel) {
                return Err(reason);
            }
            match answers.recv_timeout(TICK) {
                Ok(answer) => break answer,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(ScriptFailure::new(
                        "cancelled",
                        "the call ended before the script did",
                    ));
                }
            }
        };
        let Some((resolve, reject)) = shared.borrow_mut().pending.remove(&id) else {
            continue;
        };
        let settled = match answer {
            Ok(value) => resolve.restore(ctx).and_then(|resolve| {
                let value = ctx.json_parse(value.to_string())?;
                resolve.call::<_, ()>((value,))
            }),
            Err(message) => reject.restore(ctx).and_then(|reject| {
                let error = Exception::from_message(ctx.clone(), &message)?;
                reject.call::<_, ()>((error,))
            }),
        };
        settled
            .catch(ctx)
            .map_err(|caught| stopped(failure(ctx, caught)))?;
    }
}

/// Why the script must stop now, if it must: out of time or cancelled.
fn stop_reason(deadline: Instant, cancel: &CancellationToken) -> Option<ScriptFailure> {
    if cancel.is_cancelled() {
        return Some(ScriptFailure::new(
            "cancelled",
            "the script was cancelled by the client",
        ));
    }
    (Instant::now() >= deadline).then(|| {
        ScriptFailure::new(
            "script_timeout",
            "the script ran past its time limit (timeout_ms, at most 30000) and was stopped",
        )
    })
}

/// The longest start of `text` within `max` bytes, cut on a character.
pub fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `tools` and `console`, the script's only way out.
fn install<'js>(
    ctx: &Ctx<'js>,
    limits: &Limits,
    asks: &UnboundedSender<Ask>,
    shared: &Rc<RefCell<Shared>>,
) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let tools = Object::new(ctx.clone())?;

    let (state, sender, max_calls) = (shared.clone(), asks.clone(), limits.max_calls);
    let call = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, mode: JsValue<'js>, request: rquickjs::function::Opt<JsValue<'js>>| {
            let Some(mode) = mode.as_string().map(|s| text_of(&ctx, s)) else {
                return Err(Exception::throw_type(
                    &ctx,
                    "tools.call(name, request): name must be a mode's name, a string",
                ));
            };
            let request = match request.0 {
                Some(value) if !value.is_undefined() => {
                    to_json(&ctx, value).map_err(|f| Exception::throw_type(&ctx, &f.message))?
                }
                _ => Value::Object(Default::default()),
            };
            count_call(&ctx, &state, max_calls)?;
            ask(&ctx, &state, &sender, |id| Ask::Call { id, mode, request })
        },
    )?;
    tools.set("call", call)?;

    let (state, sender) = (shared.clone(), asks.clone());
    let select = Function::new(ctx.clone(), move |ctx: Ctx<'js>, task: JsValue<'js>| {
        let Some(task) = task.as_string().map(|s| text_of(&ctx, s)) else {
            return Err(Exception::throw_type(
                &ctx,
                "tools.select(task): task must be a string",
            ));
        };
        count_call(&ctx, &state, max_calls)?;
        ask(&ctx, &state, &sender, |id| Ask::Select { id, task })
    })?;
    tools.set("select", select)?;
    globals.set("tools", tools)?;

    let console = Object::new(ctx.clone())?;
    let state = shared.clone();
    let max_log = limits.max_log_bytes;
    let log = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, args: Rest<JsValue<'js>>| {
            let line = args
                .0
                .into_iter()
                .map(|value| match value.as_string() {
                    Some(text) => text_of(&ctx, text),
                    None => to_json(&ctx, value)
                        .map(|v| v.to_string())
                        .unwrap_or_else(|f| f.message),
                })
                .collect::<Vec<_>>()
                .join(" ");
            let mut shared = state.borrow_mut();
            if shared.console_cut {
                return;
            }
            shared.console.push_str(&line);
            shared.console.push('\n');
            if shared.console.len() > max_log {
                let kept = cut(&shared.console, max_log).to_owned();
                shared.console = kept;
                shared.console_cut = true;
            }
        },
    )?;
    for name in ["log", "info", "warn", "error", "debug"] {
        console.set(name, log.clone())?;
    }
    globals.set("console", console)?;
    // A script may not swap what another part of itself relies on.
    ctx.eval::<(), _>("Object.freeze(tools); Object.freeze(console);")?;
    Ok(())
}

/// Counts one `tools.call` or `tools.select` against the script's budget,
/// refusing it once `max_calls` were made.
fn count_call(ctx: &Ctx<'_>, state: &Rc<RefCell<Shared>>, max_calls: u64) -> rquickjs::Result<()> {
    let mut shared = state.borrow_mut();
    if shared.calls >= max_calls {
        return Err(Exception::throw_range(
            ctx,
            &format!("a script may make at most {max_calls} tool calls; this one was refused"),
        ));
    }
    shared.calls += 1;
    Ok(())
}

/// Sends `make(id)` to the async side and returns the promise its answer
/// will settle.
fn ask<'js>(
    ctx: &Ctx<'js>,
    state: &Rc<RefCell<Shared>>,
    sender: &UnboundedSender<Ask>,
    make: impl FnOnce(u64) -> Ask,
) -> rquickjs::Result<Promise<'js>> {
    let (promise, resolve, reject) = Promise::new(ctx)?;
    let mut shared = state.borrow_mut();
    let id = shared.next_id;
    shared.next_id += 1;
    if sender.send(make(id)).is_err() {
        return Err(Exception::throw_message(ctx, "the call has ended"));
    }
    shared.pending.insert(
        id,
        (
            Persistent::save(ctx, resolve),
            Persistent::save(ctx, reject),
        ),
    );
    Ok(promise)
}

/// A JavaScript value as JSON (`undefined` and functions become `null`).
fn to_json<'js>(ctx: &Ctx<'js>, value: JsValue<'js>) -> Result<Value, ScriptFailure> {
    let text = ctx
        .json_stringify(value)
        .catch(ctx)
        .map_err(|caught| failure(ctx, caught))?;
    let Some(text) = text else {
        return Ok(Value::Null);
    };
    let text = text
        .to_string()
        .map_err(|e| ScriptFailure::new("script_error", e.to_string()))?;
    serde_json::from_str(&without_lone_surrogates(&text))
        .map_err(|e| ScriptFailure::new("script_error", e.to_string()))
}

/// A JavaScript string as Rust text; a lone surrogate (which UTF-8 cannot
/// hold) becomes U+FFFD rather than failing or emptying the text.
fn text_of<'js>(ctx: &Ctx<'js>, text: &rquickjs::String<'js>) -> String {
    if let Ok(text) = text.to_string() {
        return text;
    }
    match to_json(ctx, text.clone().into_value()) {
        Ok(Value::String(text)) => text,
        _ => "\u{fffd}".to_owned(),
    }
}

/// JSON text with each escape of a lone surrogate (`\ud800` with no low
/// half after it, or a low half alone) made `\ufffd`, the replacement
/// character: JavaScript strings may hold them, UTF-8 text may not.
pub fn without_lone_surrogates(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    let unit_at = |at: usize| -> Option<u16> {
        if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
            return None;
        }
        let hex = json.get(at + 2..at + 6)?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let lone = match unit_at(at) {
            Some(0xD800..=0xDBFF) if matches!(unit_at(at + 6), Some(0xDC00..=0xDFFF)) => {
                at += 12;
                continue;
            }
            Some(0xD800..=0xDFFF) => true,
            Some(_) => {
                at += 6;
                continue;
            }
            // Any other escape is two characters (`\\`, `\"`, `\n`).
            None => {
                at += 2;
                continue;
            }
        };
        if lone {
            out.push_str(&json[copied..at]);
            out.push_str("\\ufffd");
            at += 6;
            copied = at;
        }
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(json);
    }
    out.push_str(&json[copied..]);
    std::borrow::Cow::Owned(out)
}

/// A caught JavaScript error as a failure with its place in the caller's code.
fn failure<'js>(ctx: &Ctx<'js>, caught: CaughtError<'js>) -> ScriptFailure {
    match caught {
        CaughtError::Exception(exception) => {
            let message = exception.message().unwrap_or_default();
            let name: Option<String> = exception.get("name").ok();
            let kind = if message.contains("out of memory") {
                "script_memory"
            } else if message.contains("stack overflow")
                || message.contains("Maximum call stack size exceeded")
            {
                "script_stack"
            } else {
                "script_error"
            };
            let text = match (kind, name) {
                ("script_memory", _) => {
                    "the script used more memory than it may (64 MiB) and was stopped".to_owned()
                }
                ("script_stack", _) => {
                    "the script recursed too deeply (stack overflow) and was stopped".to_owned()
                }
                (_, Some(name)) if !name.is_empty() => format!("{name}: {message}"),
                _ => message,
            };
            let mut failure = ScriptFailure::new(kind, text);
            if let Some((line, column)) = exception.stack().as_deref().and_then(location) {
                failure.line = Some(line);
                failure.column = Some(column);
            }
            failure
        }
        // A thrown value that cannot be read (a Proxy whose getter throws)
        // reports what reading it threw, once.
        CaughtError::Value(value) => match to_json(ctx, value) {
            Ok(Value::String(text)) => {
                ScriptFailure::new("script_error", format!("the script threw {text}"))
            }
            Ok(other) => ScriptFailure::new("script_error", format!("the script threw {other}")),
            Err(unreadable) => unreadable,
        },
        CaughtError::Error(error) => {
            let text = error.to_string();
            let kind = if text.contains("out of memory") || text.contains("Allocation") {
                "script_memory"
            } else {
                "script_error"
            };
            ScriptFailure::new(kind, text)
        }
    }
}

/// The first `LINE:COLUMN` of the caller's code in a QuickJS stack, as
/// the caller counts lines (the wrapper adds one above).
fn location(stack: &str) -> Option<(u64, u64)> {
    stack.lines().find_map(|line| {
        let at = line.find("eval_script:")? + "eval_script:".len();
        let mut numbers = line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|part| !part.is_empty());
        let line_no: u64 = numbers.next()?.parse().ok()?;
        let column: u64 = numbers.next()?.parse().ok()?;
        (line_no > PREFIX.matches('\n').count() as u64)
            .then(|| (line_no - PREFIX.matches('\n').count() as u64, column))
    })
}

#[cfg(test)]
mod tests {
    use super::{Limits, location, run};
    use std::time::Instant;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn a_deadline_passed_before_the_code_starts_is_a_timeout() {
        let (asks, _asked) = tokio::sync::mpsc::unbounded_channel();
        let (_answer, answers) = std::sync::mpsc::channel();
        let ended = run(
            "while (true) {}",
            None,
            Limits::DEFAULT,
            Instant::now(),
            CancellationToken::new(),
            asks,
            answers,
        );
        let failure = ended.result.expect_err("the script cannot run");
        assert_eq!(failure.kind, "script_timeout", "{}", failure.message);
    }

    #[test]
    fn lone_surrogate_escapes_become_the_replacement_character() {
        use super::without_lone_surrogates as fix;
        assert_eq!(fix(r#""a\ud800b""#), r#""a\ufffdb""#);
        assert_eq!(fix(r#""\udc00""#), r#""\ufffd""#);
        assert_eq!(fix(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
        // An escaped backslash before "ud800" is text, not an escape.
        assert_eq!(fix(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(fix(r#""\ud800\ud800\udc00""#), r#""\ufffd\ud800\udc00""#);
    }

    #[test]
    fn stack_locations_count_the_callers_lines() {
        assert_eq!(
            location("    at <anonymous> (eval_script:3:7)\n"),
            Some((2, 7))
        );
        assert_eq!(location("    at eval_script:2:1\n"), Some((1, 1)));
        assert_eq!(location("    at f (native)\n"), None);
    }
}
