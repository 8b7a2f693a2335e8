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
    catalog::Mode,
    catalog::describe::{self, FieldSet},
    engine::{Engine, Outcome, Snapshot},
    select::Ranking,
};

pub const DEFAULT_TOP_K: usize = 3;
/// The most modes a reply shows when the client does not say (`top_k`)
/// and the first ones are unsure ([`shown_by_default`]): the right tool is
/// then often fourth or fifth (real-server requests: among the first three
/// 0.78, the first five 0.84), and two more names cost less than a wrong
/// call.
pub const UNSURE_TOP_K: usize = 5;
/// The share of the confidence the modes a reply shows by default cover.
const SHOWN_CONFIDENCE: f32 = 0.9;
/// How much of a task description the ranking reads: a task is stated in
/// its first sentences, and analysing megabytes of pasted logs would hold
/// the session (and the CPU) for seconds.
pub const MAX_ANALYSED_CHARS: usize = 4_000;
pub const MAX_TOP_K: usize = 10;
/// The mode recommended when no mode clearly fits: it answers anything, and
/// a wrong specialised mode (say, a multi-step audit) costs more than a chat.
const FALLBACK_MODE: &str = "chat";

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

/// The mode a task names with its first word ("Debug the ...", "Refactor
/// ..."): a caller who starts with a mode's name (or alias) asks for it.
fn named_by_first_word<'a>(catalog: &'a crate::catalog::Catalog, task: &str) -> Option<&'a Mode> {
    let word: String = task
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let mode = catalog.get(&word)?;
    // Only zenmode's own modes: an imported tool's name is not a verb.
    mode.manifest().server.is_none().then_some(mode.as_ref())
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
        (Some(task), None) => {
            let top_k = args.top_k.unwrap_or(DEFAULT_TOP_K);
            if (1..=MAX_TOP_K).contains(&top_k) {
                Asked::Recommend {
                    task: analysed_part(task),
                    top_k: args.top_k,
                }
            } else {
                Asked::Invalid(Outcome::failure(
                    "invalid_arguments",
                    format!("top_k must be between 1 and {MAX_TOP_K} (got {top_k})"),
                ))
            }
        }
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
    let top_k = top_k.unwrap_or_else(|| shown_by_default(ranking));
    let runnable = Runnable::of(engine);
    let mut reply = recommend(snapshot, ranking, task, top_k, &runnable);
    runnable.mark(&mut reply, |name| snapshot.get(name).cloned());
    super::multi_step::offer_script(&mut reply, snapshot, task);
    note_unavailable(engine, &mut reply);
    design_fields(&mut reply);
    Outcome::ok(reply)
}

/// How many modes a reply shows when the client does not say: as many as
/// it takes for their confidences to add up to [`SHOWN_CONFIDENCE`], at
/// least [`DEFAULT_TOP_K`] and at most [`UNSURE_TOP_K`]. Confidence is
/// calibrated (docs/selection.md), so the reply then holds the right mode
/// about that often.
fn shown_by_default(ranking: &Ranking) -> usize {
    let mut total = 0.0;
    let needed = ranking
        .ranked
        .iter()
        .position(|ranked| {
            total += ranked.confidence;
            total >= SHOWN_CONFIDENCE
        })
        .map_or(UNSURE_TOP_K, |at| at + 1);
    needed.clamp(DEFAULT_TOP_K, UNSURE_TOP_K)
}

/// `catalog` is the snapshot `ranking` was made on (its mode indices).
fn recommend(
    catalog: &Snapshot,
    ranking: &Ranking,
    task: &str,
    top_k: usize,
    runnable: &Runnable,
) -> Value {
    let Some(best) = ranking.ranked.first() else {
        return no_match(catalog, task, runnable);
    };
    let named = named_by_first_word(catalog, task);
    let best_mode = catalog.modes()[best.mode_index].as_ref();
    // A tool that stands out is the answer even when no mode clearly fits:
    // falling back to `chat` then lost what the ranking had right.
    let stands_out = named.is_none()
        && ranking.no_clear_fit()
        && best_mode.manifest().examples.is_empty()
        && ranking.stands_out();
    let fallback = catalog
        .get(FALLBACK_MODE)
        .filter(|_| named.is_none() && ranking.no_clear_fit() && !stands_out)
        .filter(|fallback| runnable.can_run(fallback))
        .filter(|fallback| fallback.name() != best_mode.name());

    let mut reply = Map::new();
    let (mode, confidence, reason_text) = match (named, fallback) {
        (Some(named), _) => (
            named,
            ranking
                .ranked
                .iter()
                .find(|r| catalog.modes()[r.mode_index].name() == named.name())
                .map_or(best.confidence, |r| r.confidence.max(best.confidence)),
            format!("the task starts with the mode's name ({})", named.name()),
        ),
        // No mode clearly fits: recommend the general mode, and list the
        // best matches (including the top one) as alternatives.
        (None, Some(fallback)) => {
            let confidence = ranking
                .ranked
                .iter()
                .find(|r| catalog.modes()[r.mode_index].name() == fallback.name())
                .map_or(0.0, |r| r.confidence);
            let best_name = catalog.modes()[best.mode_index].name();
            let reason = format!(
                "no mode clearly fits (best: {best_name} at {:.2}); {} is the general fallback",
                best.confidence,
                fallback.name()
            );
            (fallback.as_ref(), confidence, reason)
        }
        (None, None) if stands_out => (
            best_mode,
            best.confidence,
            format!(
                "no mode clearly fits, but {} stands out ({:.2}; the next {:.2})",
                best_mode.name(),
                best.confidence,
                ranking.ranked.get(1).map_or(0.0, |r| r.confidence)
            ),
        ),
        (None, None) => (
            best_mode,
            best.confidence,
            reason(&best.matched, !best_mode.manifest().examples.is_empty()),
        ),
    };
    // A tool that changes state is no ready call when no mode clearly fits.
    // So is one served because the fallback cannot run here.
    let unsure = stands_out || (named.is_none() && ranking.no_clear_fit() && fallback.is_none());
    let unsure_change = unsure && crate::select::changes_state(best_mode.manifest());
    reply.insert("mode".into(), json!(mode.name()));
    reply.insert("confidence".into(), json!(round2(confidence)));
    if named.is_none() && (fallback.is_some() || ranking.is_low_confidence()) {
        reply.insert("low_confidence".into(), json!(true));
    }
    reply.insert("reason".into(), json!(reason_text));
    if let Some(line) = caution(catalog, ranking, mode) {
        reply.insert("caution".into(), json!(line));
    } else if unsure_change {
        let line = format!(
            "{} changes state and no mode clearly fits: no ready call; check that this is the change wanted before running it",
            mode.name()
        );
        reply.insert("caution".into(), json!(line));
    }
    insert_essentials(&mut reply, mode, FieldSet::Key);
    // A destructive tool the request does not ask for is never a ready call.
    if named.is_none() && fallback.is_none() && (ranking.first_unasked_destructive || unsure_change)
    {
        reply.remove("next_call");
    }
    if named.is_none() && fallback.is_none() && !ranking.named {
        offer_close_ones(&mut reply, catalog, ranking, top_k);
    }
    let alternatives: Vec<Value> = ranking
        .ranked
        .iter()
        .filter(|ranked| catalog.modes()[ranked.mode_index].name() != mode.name())
        .take(top_k - 1 + usize::from(fallback.is_some()))
        .map(|ranked| {
            let alternative = &catalog.modes()[ranked.mode_index];
            let mut entry = json!({
                "mode": alternative.name(),
                "confidence": round2(ranked.confidence),
                "summary": alternative.manifest().summary,
                "required": alternative.manifest().required(),
            });
            if let Value::Object(fields) = &mut entry {
                insert_origin(fields, alternative);
            }
            entry
        })
        .collect();
    if !alternatives.is_empty() {
        reply.insert("alternatives".into(), Value::Array(alternatives));
    }
    Value::Object(reply)
}

/// When the modes after the first are about as likely as it
/// ([`Ranking::close_to_first`]), one confident `next_call` pulls the model
/// to the first even when it is wrong: the reply offers the close ones
/// side by side (`choose`), each with its required fields and, unless the
/// safety rules hold it back, its ready call, and says to choose.
fn offer_close_ones(
    reply: &mut Map<String, Value>,
    catalog: &crate::catalog::Catalog,
    ranking: &Ranking,
    top_k: usize,
) {
    let close = ranking.close_to_first(top_k.saturating_sub(1).min(2));
    if close.is_empty() {
        return;
    }
    let unsure = ranking.no_clear_fit();
    let candidates: Vec<Value> = ranking.ranked[..=close.len()]
        .iter()
        .map(|ranked| {
            let mode = &catalog.modes()[ranked.mode_index];
            let manifest = mode.manifest();
            let mut entry = Map::new();
            entry.insert("mode".into(), json!(mode.name()));
            entry.insert("confidence".into(), json!(round2(ranked.confidence)));
            let fields = describe::field_summary(manifest, FieldSet::Key);
            entry.insert("required".into(), Value::Object(fields.required));
            let held = ranking.unasked.contains(&ranked.mode_index)
                || (unsure && crate::select::changes_state(manifest));
            if !held {
                entry.insert(
                    "next_call".into(),
                    json!({
                        "tool": EXECUTE,
                        "arguments": {"mode": mode.name(), "request": describe::example_request(manifest)},
                    }),
                );
            }
            Value::Object(entry)
        })
        .collect();
    let names: Vec<&str> = candidates
        .iter()
        .filter_map(|c| c["mode"].as_str())
        .collect();
    let line = format!(
        "{} fit about as well: choose the one the task means, and run its next_call",
        names.join(" and ")
    );
    reply.remove("next_call");
    reply.insert("choose".into(), Value::Array(candidates));
    reply.insert("reason".into(), json!(line));
}

/// One line when the ranking put a destructive tool below the recommended
/// one because the request does not ask for what it destroys, or when the
/// recommended tool is such a tool itself (no harmless one was left).
fn caution(catalog: &crate::catalog::Catalog, ranking: &Ranking, mode: &Mode) -> Option<String> {
    // A tool held back for changing state in answer to a question, rather
    // than for deleting or overwriting, is told as such.
    let what = |m: &Mode| {
        if m.manifest().destructive() {
            "may delete or overwrite"
        } else {
            "changes state"
        }
    };
    if ranking.first_unasked_destructive
        && catalog.modes()[ranking.ranked.first()?.mode_index].name() == mode.name()
    {
        let why = if ranking.is_low_confidence() || ranking.no_clear_fit() {
            "and the ranking is not sure it is the tool meant"
        } else {
            "and the request does not ask for that"
        };
        return Some(format!(
            "{} {}, {why}: no ready call; check that this is the change wanted before running it",
            mode.name(),
            what(mode)
        ));
    }
    let held = catalog.modes().get(*ranking.held_back.first()?)?;
    Some(format!(
        "{} scored higher but {}, which the request does not ask for: {} is offered first",
        held.name(),
        what(held),
        mode.name()
    ))
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

/// Nothing matched: recommend the general-purpose mode, flagged as a guess.
/// Without it, the first mode that changes nothing: a guess is never a
/// ready call that changes state ("who lives in Oslo?" got
/// `create_directory`, the first tool of its catalog).
fn no_match(catalog: &crate::catalog::Catalog, task: &str, runnable: &Runnable) -> Value {
    let harmless = || {
        catalog
            .modes()
            .iter()
            .find(|m| !crate::select::changes_state(m.manifest()) && runnable.can_run(m))
    };
    let general = catalog.get(FALLBACK_MODE).filter(|m| runnable.can_run(m));
    let Some(fallback) = general.or_else(harmless) else {
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
    reply.insert(
        "next_call".into(),
        json!({
            "tool": EXECUTE,
            "arguments": {"mode": mode.name(), "request": describe::example_request(manifest)},
        }),
    );
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
fn reason(matched: &[String], has_examples: bool) -> String {
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
