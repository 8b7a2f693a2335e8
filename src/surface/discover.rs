//! The `discover` strategy: five fixed tools over the whole catalog.
//!
//! - `discover`: filter by category, tag or words, page through compact
//!   summaries, and see the whole taxonomy (categories and tags);
//! - `detail`: the full definitions of up to ten tools, in the order asked;
//! - `call`: validate and run one tool;
//! - `batch`: several calls, each answered on its own (partial success);
//! - `pipe`: calls in sequence, where a later input may quote an earlier
//!   result; it stops at the first failure and names the step.
//!
//! In a `pipe` input, a string that is exactly `$N` stands for the whole
//! result of step N (counting from 1), and `$N/pointer` for the part of it
//! at that JSON pointer, e.g. `"$1/continuation_id"`. Only earlier steps can
//! be quoted.

use std::{borrow::Cow, collections::BTreeSet};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    SessionView, Strategy, UnknownTool, mode_tool, one_line, parse_arguments, suggestions,
};
use crate::{
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome},
    services::CallContext,
};

pub const DISCOVER: &str = "discover";
pub const DETAIL: &str = "detail";
pub const CALL: &str = "call";
pub const BATCH: &str = "batch";
pub const PIPE: &str = "pipe";

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;
const MAX_DETAIL: usize = 10;
const MAX_CALLS: usize = 20;
/// Keywords of a mode that become its tags (the most telling come first).
const KEYWORD_TAGS: usize = 5;

const INSTRUCTIONS: &str = "Call discover (with search words, a category or a tag) to find tools, detail to read their schemas, then call to run one. batch runs several calls; pipe chains them, quoting earlier results as \"$N\" or \"$N/field\".";

pub struct Discover {
    tools: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DiscoverArgs {
    category: Option<String>,
    #[serde(default)]
    tag: Tags,
    tag_mode: Option<TagMode>,
    search: Option<String>,
    include_mutation: Option<bool>,
    limit: Option<i64>,
    offset: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Tags {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TagMode {
    Any,
    All,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetailArgs {
    names: Vec<String>,
}

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

/// Whether a mode changes anything: everything not marked read-only.
fn mutates(mode: &Mode) -> bool {
    mode.manifest().annotations.get("readOnlyHint") != Some(&Value::Bool(true))
}

/// A mode's tags: its category, what its annotations say, the server and
/// topic of an imported tool, and a built-in mode's first keywords.
fn tags(mode: &Mode) -> Vec<String> {
    let manifest = mode.manifest();
    let mut tags = vec![manifest.category.as_str().to_owned()];
    let hint = |key: &str| manifest.annotations.get(key) == Some(&Value::Bool(true));
    tags.push(
        if hint("readOnlyHint") {
            "read-only"
        } else {
            "mutating"
        }
        .to_owned(),
    );
    if hint("destructiveHint") {
        tags.push("destructive".to_owned());
    }
    if hint("openWorldHint") {
        tags.push("open-world".to_owned());
    }
    tags.extend(manifest.server.iter().chain(&manifest.topic).cloned());
    for keyword in manifest.keywords.iter().take(KEYWORD_TAGS) {
        if !tags.contains(keyword) {
            tags.push(keyword.clone());
        }
    }
    tags
}

fn call_schema() -> Value {
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

impl Discover {
    pub fn new(_catalog: &Catalog) -> Self {
        let read_only =
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
        let runs = json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": true});
        let tools = vec![
            json!({
                "name": DISCOVER,
                "title": "Find tools",
                "description": "Search and filter the available tools; returns one-line summaries, paging counts and every category and tag.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "description": "Only this category"},
                        "tag": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}], "description": "Only tools with this tag (or these tags)"},
                        "tagMode": {"type": "string", "enum": ["any", "all"], "description": "With several tags: any (default) or all must match"},
                        "search": {"type": "string", "description": "Words describing the task"},
                        "includeMutation": {"type": "boolean", "description": "Include tools that change things (default true)"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Page size (default 50)"},
                        "offset": {"type": "integer", "minimum": 0, "description": "Skip this many results"}
                    },
                    "additionalProperties": false
                },
                "annotations": read_only
            }),
            json!({
                "name": DETAIL,
                "title": "Tool definitions",
                "description": "Full definitions (schema, annotations, whether it changes things) of 1 to 10 tools, in the order given.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_DETAIL, "description": "Tool names"}},
                    "required": ["names"],
                    "additionalProperties": false
                },
                "annotations": read_only
            }),
            json!({
                "name": CALL,
                "title": "Run a tool",
                "description": "Validate the input against the tool's schema and run it.",
                "inputSchema": call_schema(),
                "annotations": runs
            }),
            json!({
                "name": BATCH,
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
                "name": PIPE,
                "title": "Chain tools",
                "description": "Run up to 20 calls in order; an input string \"$N\" or \"$N/field\" is replaced by step N's result (or that field of it). Stops at the first failure.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"steps": {"type": "array", "items": call_schema(), "minItems": 1, "maxItems": MAX_CALLS, "description": "The steps, first to last"}},
                    "required": ["steps"],
                    "additionalProperties": false
                },
                "annotations": runs
            }),
        ];
        Discover { tools }
    }

    fn discover(&self, engine: &Engine, args: DiscoverArgs) -> Outcome {
        let catalog = engine.catalog();
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT as i64);
        if !(1..=MAX_LIMIT as i64).contains(&limit) {
            return Outcome::failure(
                "invalid_arguments",
                format!("limit must be between 1 and {MAX_LIMIT} (got {limit})"),
            );
        }
        let offset = args.offset.unwrap_or(0);
        if offset < 0 {
            return Outcome::failure(
                "invalid_arguments",
                format!("offset must be 0 or more (got {offset})"),
            );
        }
        let categories: BTreeSet<&str> = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().category.as_str())
            .collect();
        if let Some(category) = &args.category
            && !categories.contains(category.as_str())
        {
            return Outcome::error(json!({
                "error": "unknown_category",
                "message": format!("There is no category {category:?}."),
                "availableCategories": categories,
            }));
        }
        let wanted_tags: Vec<String> = match args.tag {
            Tags::None => Vec::new(),
            Tags::One(tag) => vec![tag],
            Tags::Many(tags) => tags,
        };
        let tag_mode = args.tag_mode.unwrap_or(TagMode::Any);
        let include_mutation = args.include_mutation.unwrap_or(true);
        // With search words, the ranking orders the tools and drops those
        // that match nothing; without, catalog order.
        let order: Vec<&Mode> = match args.search.as_deref().map(str::trim) {
            Some(words) if !words.is_empty() => catalog
                .index()
                .ranking(super::zen::select_mode::analysed_part(words))
                .ranked
                .iter()
                .map(|r| catalog.modes()[r.mode_index].as_ref())
                .collect(),
            _ => catalog.modes().iter().map(|m| m.as_ref()).collect(),
        };
        let filtered: Vec<(&Mode, Vec<String>)> = order
            .into_iter()
            .filter(|mode| {
                args.category
                    .as_deref()
                    .is_none_or(|c| mode.manifest().category.as_str() == c)
            })
            .filter(|mode| include_mutation || !mutates(mode))
            .map(|mode| (mode, tags(mode)))
            .filter(|(_, tags)| {
                wanted_tags.is_empty()
                    || match tag_mode {
                        TagMode::Any => wanted_tags.iter().any(|t| tags.contains(t)),
                        TagMode::All => wanted_tags.iter().all(|t| tags.contains(t)),
                    }
            })
            .collect();
        let page: Vec<Value> = filtered
            .iter()
            .skip(offset as usize)
            .take(limit as usize)
            .map(|(mode, tags)| {
                json!({
                    "name": mode.name(),
                    "summary": one_line(&mode.manifest().summary, 120),
                    "category": mode.manifest().category.as_str(),
                    "tags": tags,
                    "mutation": mutates(mode),
                })
            })
            .collect();
        let all_tags: BTreeSet<String> = catalog.modes().iter().flat_map(|m| tags(m)).collect();
        let returned = page.len();
        Outcome::ok(json!({
            "tools": page,
            "total": catalog.len(),
            "filtered": filtered.len(),
            "returned": returned,
            "offset": offset,
            "hasMore": (offset as usize) + returned < filtered.len(),
            "availableCategories": categories,
            "availableTags": all_tags,
        }))
    }

    fn detail(&self, engine: &Engine, args: DetailArgs) -> Outcome {
        let catalog = engine.catalog();
        if args.names.is_empty() || args.names.len() > MAX_DETAIL {
            return Outcome::failure(
                "invalid_arguments",
                format!(
                    "names takes 1 to {MAX_DETAIL} tool names (got {})",
                    args.names.len()
                ),
            );
        }
        let tools: Vec<Value> = args
            .names
            .iter()
            .map(|name| match catalog.get(name) {
                Some(mode) => {
                    let mut tool = mode_tool(mode);
                    tool["found"] = json!(true);
                    tool["mutation"] = json!(mutates(mode));
                    tool["callable"] = json!(
                        mode.manifest()
                            .executor
                            .as_deref()
                            .is_some_and(crate::executor::is_registered)
                    );
                    tool
                }
                None => {
                    json!({"name": name, "found": false, "suggestions": suggestions(&catalog, name)})
                }
            })
            .collect();
        Outcome::ok(json!({"tools": tools}))
    }

    async fn run(&self, engine: &Engine, call: &CallArgs, context: &CallContext) -> Outcome {
        let outcome = match engine
            .execute(
                &call.command,
                Value::Object(call.input.clone()),
                None,
                context,
            )
            .await
        {
            Ok(outcome) => outcome,
            Err(unknown) => {
                return Outcome::error(json!({
                    "error": "unknown_tool",
                    "message": format!("There is no tool {:?}; call {DISCOVER} to find one.", unknown.name),
                    "suggestions": unknown.closest,
                }));
            }
        };
        if outcome.is_error && outcome.body["error"] == "invalid_request" {
            let mut body = outcome.body;
            body["hint"] = json!(format!(
                "Call {DETAIL} with {{\"names\": [\"{}\"]}} to read the tool's schema.",
                call.command
            ));
            return Outcome::error(body);
        }
        outcome
    }

    async fn batch(&self, engine: &Engine, args: BatchArgs, context: &CallContext) -> Outcome {
        if args.calls.is_empty() || args.calls.len() > MAX_CALLS {
            return Outcome::failure(
                "invalid_arguments",
                format!(
                    "calls takes 1 to {MAX_CALLS} calls (got {})",
                    args.calls.len()
                ),
            );
        }
        let mut results = Vec::new();
        let mut failed = 0;
        for call in &args.calls {
            let outcome = self.run(engine, call, context).await;
            failed += usize::from(outcome.is_error);
            results.push(
                json!({"command": call.command, "ok": !outcome.is_error, "result": outcome.body}),
            );
        }
        let body =
            json!({"results": results, "succeeded": args.calls.len() - failed, "failed": failed});
        // Partial success is still a success; only a batch where every call
        // failed is reported as an error.
        if failed == args.calls.len() {
            Outcome::error(body)
        } else {
            Outcome::ok(body)
        }
    }

    async fn pipe(&self, engine: &Engine, args: PipeArgs, context: &CallContext) -> Outcome {
        if args.steps.is_empty() || args.steps.len() > MAX_CALLS {
            return Outcome::failure(
                "invalid_arguments",
                format!(
                    "steps takes 1 to {MAX_CALLS} calls (got {})",
                    args.steps.len()
                ),
            );
        }
        let mut results: Vec<Value> = Vec::new();
        for (index, step) in args.steps.iter().enumerate() {
            let number = index + 1;
            let mut input = Value::Object(step.input.clone());
            if let Err(problem) = substitute(&mut input, &results) {
                return Outcome::error(json!({
                    "error": "bad_reference",
                    "message": format!("step {number} ({}): {problem}", step.command),
                    "failed_step": number,
                    "completed": results.len(),
                }));
            }
            let call = CallArgs {
                command: step.command.clone(),
                input: match input {
                    Value::Object(map) => map,
                    _ => Map::new(),
                },
            };
            let outcome = self.run(engine, &call, context).await;
            if outcome.is_error {
                return Outcome::error(json!({
                    "error": "pipe_failed",
                    "message": format!("step {number} ({}) failed; the steps after it did not run", step.command),
                    "failed_step": number,
                    "completed": results.len(),
                    "result": outcome.body,
                }));
            }
            results.push(outcome.body);
        }
        Outcome::ok(json!({"steps": results.len(), "result": results.last(), "results": results}))
    }
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

#[async_trait]
impl Strategy for Discover {
    fn name(&self) -> &'static str {
        "discover"
    }

    fn tools(&self, _: SessionView<'_>) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.tools)
    }

    fn instructions(&self) -> &'static str {
        INSTRUCTIONS
    }

    async fn call(
        &self,
        engine: &Engine,
        _: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        Ok(match name {
            DISCOVER => match parse_arguments(&self.tools, name, arguments) {
                Ok(args) => self.discover(engine, args),
                Err(outcome) => outcome,
            },
            DETAIL => match parse_arguments(&self.tools, name, arguments) {
                Ok(args) => self.detail(engine, args),
                Err(outcome) => outcome,
            },
            CALL => match parse_arguments::<CallArgs>(&self.tools, name, arguments) {
                Ok(args) => self.run(engine, &args, call).await,
                Err(outcome) => outcome,
            },
            BATCH => match parse_arguments(&self.tools, name, arguments) {
                Ok(args) => self.batch(engine, args, call).await,
                Err(outcome) => outcome,
            },
            PIPE => match parse_arguments(&self.tools, name, arguments) {
                Ok(args) => self.pipe(engine, args, call).await,
                Err(outcome) => outcome,
            },
            _ => return Err(UnknownTool(name.to_owned())),
        })
    }
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
