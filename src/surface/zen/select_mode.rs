//! `zen_select_mode`: recommends a mode for a task, or describes a named mode.
//!
//! The reply is built to be short (it costs the model tokens on every use):
//! the best mode gets its key fields and a ready `zen_execute` call whose
//! request is a valid example; alternatives get one line each.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::meta::{EXECUTE, SELECT_MODE, parse_arguments, unknown_mode};
use super::runnable::Runnable;
use crate::{
    catalog::describe::{self, FieldSet},
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome, Snapshot},
    select::{Caution, Choice, Decision, Ranking, Recommendation, SCRIPT_MODE, Why},
};

/// How much of a task description the ranking reads: a task is stated in
/// its first sentences, and analysing megabytes of pasted logs would hold
/// the session (and the CPU) for seconds.
pub const MAX_ANALYSED_CHARS: usize = 4_000;
pub const MAX_TOP_K: usize = 10;
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectArgs {
    pub task_description: Option<String>,
    pub mode: Option<String>,
    pub top_k: Option<usize>,
}

pub async fn call(engine: &Engine, mut arguments: Map<String, Value>) -> Outcome {
    // Design 004's Stage 1 sends `confidence_level`; it goes into the
    // suggested request when the mode has a `confidence` field.
    let confidence = arguments.remove("confidence_level");
    let mut outcome = match parse_arguments::<SelectArgs>(SELECT_MODE, arguments) {
        Ok(args) => run_off_thread(engine, &args).await,
        Err(outcome) => return outcome,
    };
    if !outcome.is_error
        && let Some(level) = confidence
    {
        carry_confidence(engine, &mut outcome.body, level);
    }
    outcome
}

/// Puts the caller's confidence level into the suggested request, when the
/// mode has a `confidence` field that accepts it.
fn carry_confidence(engine: &Engine, reply: &mut Value, level: Value) {
    let catalog = engine.catalog();
    let Some(mode) = reply["mode"].as_str().and_then(|m| catalog.get(m)) else {
        return;
    };
    let accepted = mode
        .manifest()
        .properties()
        .and_then(|p| p.get("confidence"))
        .is_some_and(|field| {
            field["enum"]
                .as_array()
                .is_none_or(|allowed| allowed.contains(&level))
        });
    if accepted && let Some(request) = reply.pointer_mut("/next_call/arguments/request") {
        request["confidence"] = level;
    }
}

/// Design 004's reply names (`recommended_mode`, `required_fields`) beside
/// ours.
fn design_fields(reply: &mut Value) {
    let Some(mode) = reply["mode"].as_str().map(str::to_owned) else {
        return;
    };
    let required: Vec<Value> = match &reply["required"] {
        Value::Object(fields) => fields.keys().map(|k| json!(k)).collect(),
        _ => Vec::new(),
    };
    // Every alternative keeps its own required fields, also when they are
    // the recommended mode's: a reply read for its alternatives (the top two
    // close, or the first pick wrong) must not send the model back for them.
    reply["recommended_mode"] = json!(mode);
    reply["required_fields"] = Value::Array(required);
}

/// What a select asks for, once its arguments are checked.
enum Asked<'a> {
    Describe(&'a str),
    /// `top_k`: as the client asked, or `None` for the default (more
    /// modes when the ranking is unsure).
    Recommend {
        task: &'a str,
        top_k: Option<usize>,
    },
    Invalid(Outcome),
}

fn asked(args: &SelectArgs) -> Asked<'_> {
    let task = args
        .task_description
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match (task, args.mode.as_deref()) {
        (_, Some(name)) => Asked::Describe(name),
        (Some(task), None) => match args.top_k {
            Some(top_k) if !(1..=MAX_TOP_K).contains(&top_k) => Asked::Invalid(Outcome::failure(
                "invalid_arguments",
                format!("top_k must be between 1 and {MAX_TOP_K} (got {top_k})"),
            )),
            top_k => Asked::Recommend {
                task: analysed_part(task),
                top_k,
            },
        },
        (None, None) => Asked::Invalid(Outcome::failure(
            "invalid_arguments",
            "Give task_description (what you want to do) to get a recommendation, or mode to get that mode's fields.",
        )),
    }
}

/// What `zenmode select` runs: the ranking on the calling thread.
pub fn run(engine: &Engine, args: &SelectArgs) -> Outcome {
    match asked(args) {
        Asked::Describe(name) => describe(engine, name),
        Asked::Recommend { task, top_k } => {
            let snapshot = engine.catalog();
            let ranking = snapshot.index().ranking(task);
            recommended(engine, &snapshot, &ranking, task, top_k)
        }
        Asked::Invalid(outcome) => outcome,
    }
}

/// How long a select waits for servers that are starting with no known
/// tools (right after start-up, or just added) before it answers without
/// them. `initialize` and `tools/list` never wait.
const SELECT_START_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a select waits for the model's index of the catalog it ranks
/// (`Index::ranking_when_ready`): enough to read cached vectors, and to
/// encode a catalog the model has never seen of the 1,155-tool union's
/// size (3.2 s on two cores with AMX tiles, 8.5 s without, from an empty
/// cache; docs/benchmarks.md), so that the first reply is the model's and
/// does not change once the index is ready. Past it the table answers.
const MODEL_INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many selects rank at once, each on a blocking thread.
const RANKING_THREADS: usize = 2;

/// What the tool runs: [`run`], with the ranking on a blocking thread.
/// With the full model a ranking costs milliseconds of CPU, and a stdio
/// session serves every request on one thread: a burst of selects held a
/// ping behind them for over a second. At most [`RANKING_THREADS`] rank at
/// once; the others wait without holding a thread.
pub async fn run_off_thread(engine: &Engine, args: &SelectArgs) -> Outcome {
    static RANKING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(RANKING_THREADS);
    match asked(args) {
        Asked::Describe(name) => describe(engine, name),
        Asked::Recommend { task, top_k } => {
            // Past the wait, a server still starting is named in the reply
            // as unavailable, as before.
            let snapshot = engine.await_started(SELECT_START_WAIT).await;
            let ranked = {
                // Never closed, so acquiring cannot fail.
                let _turn = RANKING.acquire().await;
                let (snapshot, task) = (snapshot.clone(), task.to_owned());
                tokio::task::spawn_blocking(move || {
                    snapshot.index().ranking_when_ready(&task, MODEL_INDEX_WAIT)
                })
                .await
            };
            match ranked {
                Ok(ranking) => recommended(engine, &snapshot, &ranking, task, top_k),
                Err(error) => {
                    tracing::error!(%error, "ranking a select failed");
                    Outcome::failure("internal_error", "ranking the request failed")
                }
            }
        }
        Asked::Invalid(outcome) => outcome,
    }
}

fn describe(engine: &Engine, name: &str) -> Outcome {
    match engine.mode(name) {
        Ok(mode) => Outcome::ok(describe_mode(&mode)),
        Err(unknown) => unknown_mode(unknown),
    }
}

fn recommended(
    engine: &Engine,
    snapshot: &Snapshot,
    ranking: &Ranking,
    task: &str,
    top_k: Option<usize>,
) -> Outcome {
    let runnable = Runnable::of(engine);
    let decision = Decision::of(snapshot, ranking, task, top_k, &|m| runnable.can_run(m));
    let mut reply = render(snapshot, &decision, task);
    runnable.mark(&mut reply, |name| snapshot.get(name).cloned());
    note_unavailable(engine, &mut reply);
    design_fields(&mut reply);
    Outcome::ok(reply)
}

/// What select decides for `task` in `engine` as it stands (the ranking
/// on the calling thread, as [`run`]), without writing the reply: what
/// `zenmode eval` scores.
pub fn decide(engine: &Engine, task: &str) -> (std::sync::Arc<Snapshot>, Decision) {
    let snapshot = engine.catalog();
    let task = analysed_part(task.trim());
    let ranking = snapshot.index().ranking(task);
    let runnable = Runnable::of(engine);
    let decision = Decision::of(&snapshot, &ranking, task, None, &|m| runnable.can_run(m));
    (snapshot, decision)
}

/// Writes `decision`, made on `catalog` for `task`, as the reply's JSON.
fn render(catalog: &Catalog, decision: &Decision, task: &str) -> Value {
    let recommendation = match decision {
        Decision::NoMatch { fallback } => return no_match(catalog, *fallback, task),
        Decision::Recommend(recommendation) => recommendation,
    };
    let modes = catalog.modes();
    let mode = modes[recommendation.mode].as_ref();
    let mut reply = Map::new();
    reply.insert("mode".into(), json!(mode.name()));
    reply.insert(
        "confidence".into(),
        json!(round2(recommendation.confidence)),
    );
    if recommendation.low_confidence {
        reply.insert("low_confidence".into(), json!(true));
    }
    reply.insert("reason".into(), json!(reason(catalog, recommendation)));
    if let Some(caution) = &recommendation.caution {
        reply.insert(
            "caution".into(),
            json!(caution_line(catalog, caution, mode)),
        );
    }
    insert_essentials(&mut reply, mode, FieldSet::Key);
    if !recommendation.ready_call {
        reply.remove("next_call");
    }
    if !recommendation.choose.is_empty() {
        let candidates = recommendation
            .choose
            .iter()
            .map(|choice| choice_entry(&modes[choice.mode], choice))
            .collect();
        reply.insert("choose".into(), Value::Array(candidates));
    }
    let script = catalog
        .get(SCRIPT_MODE)
        .filter(|_| recommendation.offer_script);
    let alternatives: Vec<Value> = script
        .map(|script| {
            json!({
                "mode": script.name(),
                "summary": script.manifest().summary,
                "required": script.manifest().required(),
                "reason": "the request has several steps over servers' tools: one script runs them all in one call",
            })
        })
        .into_iter()
        .chain(recommendation.alternatives.iter().map(|alternative| {
            let mode = &modes[alternative.mode];
            let mut entry = json!({
                "mode": mode.name(),
                "confidence": round2(alternative.confidence),
                "summary": mode.manifest().summary,
                "required": mode.manifest().required(),
            });
            if let Value::Object(fields) = &mut entry {
                insert_origin(fields, mode);
            }
            entry
        }))
        .collect();
    if !alternatives.is_empty() {
        reply.insert("alternatives".into(), Value::Array(alternatives));
    }
    Value::Object(reply)
}

/// One of the close modes a reply asks to choose between: its required
/// fields and, unless the decision holds it back, its ready call.
fn choice_entry(mode: &Mode, choice: &Choice) -> Value {
    let manifest = mode.manifest();
    let mut entry = Map::new();
    entry.insert("mode".into(), json!(mode.name()));
    entry.insert("confidence".into(), json!(round2(choice.confidence)));
    let fields = describe::field_summary(manifest, FieldSet::Key);
    entry.insert("required".into(), Value::Object(fields.required));
    if choice.ready_call {
        entry.insert("next_call".into(), ready_call(mode));
    }
    Value::Object(entry)
}

/// The reply's `reason` line.
fn reason(catalog: &Catalog, recommendation: &Recommendation) -> String {
    let modes = catalog.modes();
    let name = |index: usize| modes[index].name();
    match &recommendation.why {
        Why::Named => format!(
            "the task starts with the mode's name ({})",
            name(recommendation.mode)
        ),
        Why::Fallback {
            best,
            best_confidence,
        } => format!(
            "no mode clearly fits (best: {} at {best_confidence:.2}); {} is the general fallback",
            name(*best),
            name(recommendation.mode)
        ),
        Why::StandsOut { next_confidence } => format!(
            "no mode clearly fits, but {} stands out ({:.2}; the next {next_confidence:.2})",
            name(recommendation.mode),
            recommendation.confidence
        ),
        Why::Matched {
            words,
            has_examples,
        } => matched_reason(words, *has_examples),
        Why::Choose => {
            let names: Vec<&str> = recommendation
                .choose
                .iter()
                .map(|choice| name(choice.mode))
                .collect();
            format!(
                "{} fit about as well: choose the one the task means, and run its next_call",
                names.join(" and ")
            )
        }
    }
}

/// The reply's `caution` line.
fn caution_line(catalog: &Catalog, caution: &Caution, mode: &Mode) -> String {
    // A tool held back for changing state in answer to a question, rather
    // than for deleting or overwriting, is told as such.
    let what = |m: &Mode| {
        if m.manifest().destructive() {
            "may delete or overwrite"
        } else {
            "changes state"
        }
    };
    match caution {
        Caution::Unasked { unsure, .. } => {
            let why = if *unsure {
                "and the ranking is not sure it is the tool meant"
            } else {
                "and the request does not ask for that"
            };
            format!(
                "{} {}, {why}: no ready call; check that this is the change wanted before running it",
                mode.name(),
                what(mode)
            )
        }
        Caution::HeldBack { held } => {
            let held = &catalog.modes()[*held];
            format!(
                "{} scored higher but {}, which the request does not ask for: {} is offered first",
                held.name(),
                what(held),
                mode.name()
            )
        }
        Caution::UnsureChange { .. } => format!(
            "{} changes state and no mode clearly fits: no ready call; check that this is the change wanted before running it",
            mode.name()
        ),
    }
}

/// The most unavailable servers a reply names; the rest are counted.
const MAX_UNAVAILABLE_LINES: usize = 8;

/// Adds what the model cannot reach now (gateway servers starting or
/// failed, bad entries), one short line each, so it knows a missing
/// server is missing rather than nonexistent.
fn note_unavailable(engine: &Engine, reply: &mut Value) {
    let lines = engine.services().gateway.unavailable();
    if lines.is_empty() {
        return;
    }
    let more = lines.len().saturating_sub(MAX_UNAVAILABLE_LINES);
    let mut shown: Vec<String> = lines.into_iter().take(MAX_UNAVAILABLE_LINES).collect();
    if more > 0 {
        shown.push(format!("and {more} more"));
    }
    reply["unavailable"] = json!(shown);
}

/// Nothing matched: the decision's fallback, flagged as a guess.
fn no_match(catalog: &Catalog, fallback: Option<usize>, task: &str) -> Value {
    let Some(fallback) = fallback.map(|index| catalog.modes()[index].as_ref()) else {
        if catalog.is_empty() {
            return json!({"error": "empty_catalog", "message": "No modes are loaded."});
        }
        return json!({
            "mode": Value::Null,
            "confidence": 0.0,
            "low_confidence": true,
            "reason": format!(
                "no mode matched {:?}, and every mode changes state: rephrase, or pick from modes",
                truncate(task, 60)
            ),
            "modes": catalog.names().collect::<Vec<_>>(),
        });
    };
    let mut reply = Map::new();
    reply.insert("mode".into(), json!(fallback.name()));
    reply.insert("confidence".into(), json!(0.0));
    reply.insert("low_confidence".into(), json!(true));
    reply.insert(
        "reason".into(),
        json!(format!(
            "no mode matched {:?}; {} is the general fallback. Rephrase, or pick from modes",
            truncate(task, 60),
            fallback.name()
        )),
    );
    insert_essentials(&mut reply, fallback, FieldSet::Key);
    reply.insert("modes".into(), json!(catalog.names().collect::<Vec<_>>()));
    Value::Object(reply)
}

/// Schema on demand: every field of one mode, and a ready call.
fn describe_mode(mode: &Mode) -> Value {
    let mut reply = Map::new();
    reply.insert("mode".into(), json!(mode.name()));
    insert_essentials(&mut reply, mode, FieldSet::All);
    Value::Object(reply)
}

/// summary, required and optional fields, and the `zen_execute` call with a
/// valid example request.
fn insert_essentials(reply: &mut Map<String, Value>, mode: &Mode, fields: FieldSet) {
    let manifest = mode.manifest();
    let summary = describe::field_summary(manifest, fields);
    reply.insert("summary".into(), json!(manifest.summary));
    insert_origin(reply, mode);
    reply.insert("required".into(), Value::Object(summary.required));
    if !summary.optional.is_empty() {
        reply.insert("optional".into(), Value::Object(summary.optional));
    }
    reply.insert("next_call".into(), ready_call(mode));
}

/// The `zen_execute` call that runs `mode` with a valid example request.
fn ready_call(mode: &Mode) -> Value {
    json!({
        "tool": EXECUTE,
        "arguments": {"mode": mode.name(), "request": describe::example_request(mode.manifest())},
    })
}

/// For another server's tool: which server runs it, and whether it only
/// reads or may destroy (its annotations), so the model knows what a call does.
fn insert_origin(reply: &mut Map<String, Value>, mode: &Mode) {
    let manifest = mode.manifest();
    let Some(server) = manifest.server.as_deref() else {
        return;
    };
    reply.insert("server".into(), json!(server));
    for (hint, key) in [
        ("readOnlyHint", "read_only"),
        ("destructiveHint", "destructive"),
    ] {
        if let Some(flag) = manifest.annotations.get(hint).and_then(Value::as_bool) {
            reply.insert(key.into(), json!(flag));
        }
    }
}

/// The start of `task` that the ranking reads, cut at a character boundary.
pub fn analysed_part(task: &str) -> &str {
    match task.char_indices().nth(MAX_ANALYSED_CHARS) {
        Some((cut, _)) => &task[..cut],
        None => task,
    }
}

/// Why a mode ranked first: the words it matched or, with none, which
/// signal found it (example phrasings, or the meaning of its description).
fn matched_reason(matched: &[String], has_examples: bool) -> String {
    if matched.is_empty() {
        return if has_examples {
            "close to this mode's example tasks"
        } else {
            "close in meaning to this mode's description"
        }
        .to_owned();
    }
    let words: Vec<&str> = matched.iter().take(4).map(String::as_str).collect();
    format!("matched: {}", words.join(", "))
}

fn round2(value: f32) -> f64 {
    (f64::from(value) * 100.0).round() / 100.0
}

fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max_chars - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests;
