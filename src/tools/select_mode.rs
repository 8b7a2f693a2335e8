//! `zen_select_mode`: recommends a mode for a task, or describes a named mode.
//!
//! The reply is built to be short (it costs the model tokens on every use):
//! the best mode gets its key fields and a ready `zen_execute` call whose
//! request is a valid example; alternatives get one line each.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{EXECUTE, SELECT_MODE, ToolOutcome, parse_arguments, unknown_mode};
use crate::{
    catalog::Mode,
    describe::{self, FieldSet},
    engine::Engine,
    select,
};

pub const DEFAULT_TOP_K: usize = 3;
pub const MAX_TOP_K: usize = 10;
/// The mode recommended when nothing in the catalog matches the task.
const FALLBACK_MODE: &str = "chat";
/// Below this confidence the reply says the match is weak.
const LOW_CONFIDENCE: f32 = 0.35;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectArgs {
    pub task_description: Option<String>,
    pub mode: Option<String>,
    pub top_k: Option<usize>,
}

pub fn call(engine: &Engine, arguments: Map<String, Value>) -> ToolOutcome {
    match parse_arguments::<SelectArgs>(SELECT_MODE, arguments) {
        Ok(args) => run(engine, &args),
        Err(outcome) => outcome,
    }
}

/// What the tool and `zenmode select` both run.
pub fn run(engine: &Engine, args: &SelectArgs) -> ToolOutcome {
    let task = args
        .task_description
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match (task, args.mode.as_deref()) {
        (_, Some(name)) => match engine.catalog().get(name) {
            Some(mode) => ToolOutcome::ok(describe_mode(mode)),
            None => unknown_mode(engine.catalog(), name),
        },
        (Some(task), None) => {
            let top_k = args.top_k.unwrap_or(DEFAULT_TOP_K).clamp(1, MAX_TOP_K);
            ToolOutcome::ok(recommend(engine, task, top_k))
        }
        (None, None) => ToolOutcome::failure(
            "invalid_arguments",
            "Give task_description (what you want to do) to get a recommendation, or mode to get that mode's fields.",
        ),
    }
}

fn recommend(engine: &Engine, task: &str, top_k: usize) -> Value {
    let catalog = engine.catalog();
    let ranked = engine.index().rank(task);
    let scores: Vec<f32> = ranked.iter().take(top_k).map(|r| r.score).collect();
    let confidences = select::confidences(&scores);

    let Some(best) = ranked.first() else {
        return no_match(engine, task);
    };
    let best_mode = &catalog.modes()[best.mode_index];
    let mut reply = Map::new();
    reply.insert("mode".into(), json!(best_mode.name()));
    reply.insert("confidence".into(), json!(round2(confidences[0])));
    if confidences[0] < LOW_CONFIDENCE {
        reply.insert("low_confidence".into(), json!(true));
    }
    reply.insert("reason".into(), json!(reason(&best.matched)));
    insert_essentials(&mut reply, best_mode, FieldSet::Key);
    let alternatives: Vec<Value> = ranked
        .iter()
        .zip(&confidences)
        .skip(1)
        .map(|(ranked, confidence)| {
            let mode = &catalog.modes()[ranked.mode_index];
            json!({
                "mode": mode.name(),
                "confidence": round2(*confidence),
                "summary": mode.manifest.summary,
                "required": mode.manifest.required(),
            })
        })
        .collect();
    if !alternatives.is_empty() {
        reply.insert("alternatives".into(), Value::Array(alternatives));
    }
    Value::Object(reply)
}

/// Nothing matched: recommend the general-purpose mode, flagged as a guess.
fn no_match(engine: &Engine, task: &str) -> Value {
    let catalog = engine.catalog();
    let Some(fallback) = catalog
        .get(FALLBACK_MODE)
        .or_else(|| catalog.modes().first())
    else {
        return json!({"error": "empty_catalog", "message": "No modes are loaded."});
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
    let manifest = &mode.manifest;
    let summary = describe::field_summary(manifest, fields);
    reply.insert("summary".into(), json!(manifest.summary));
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

fn reason(matched: &[String]) -> String {
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
