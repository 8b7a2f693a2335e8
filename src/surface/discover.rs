//! The `discover` strategy (design 003): five fixed tools over the whole
//! catalog.
//!
//! - `discover`: filter by category, tag or words, page through compact
//!   summaries (`commands`), and see the whole taxonomy (categories, tags);
//! - `detail`: the full definitions of 1 to 10 tools, in the order asked,
//!   a `COMMAND_NOT_FOUND` entry for each unknown name;
//! - `call`, `batch`, `pipe`: see [`super::dispatch`].
//!
//! Every answer is a `CommandResult` (`success`, `data`, `reasoning`,
//! `confidence`, `metadata.executionTimeMs`). With `--tool-prefix afd-`
//! the tools are `afd-discover`, `afd-detail` and so on, as in the design.

use std::{borrow::Cow, collections::BTreeSet, time::Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    SessionView, Strategy, UnknownTool, category_of, dispatch, mode_tool, parse_arguments,
    suggestions,
};
use crate::{
    call::CallContext,
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome},
};

pub const DISCOVER: &str = "discover";
pub const DETAIL: &str = "detail";
pub use dispatch::{BATCH, CALL, PIPE};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;
const MAX_DETAIL: usize = 10;
/// Keywords of a mode that become its tags (the most telling come first).
const KEYWORD_TAGS: usize = 5;
/// A summary's description: its first sentence, at most this long.
const SUMMARY_CHARS: usize = 120;

const INSTRUCTIONS: &str = "Call discover (with search words, a category or a tag) to find tools, detail to read their schemas, then call to run one. batch runs several calls; pipe chains them, quoting earlier results as \"$N\" or \"$N/field\".";

pub struct Discover {
    tools: Vec<Value>,
    prefix: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DiscoverArgs {
    category: Option<String>,
    #[serde(default)]
    tag: OneOrMany,
    tag_mode: Option<TagMode>,
    search: Option<String>,
    include_mutation: Option<bool>,
    limit: Option<i64>,
    offset: Option<i64>,
}

/// One string or a list of them.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TagMode {
    Any,
    All,
}

/// `command` as the design names it; `names` as zenmode first did.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetailArgs {
    #[serde(default)]
    command: OneOrMany,
    #[serde(default)]
    names: OneOrMany,
}

/// Whether a mode changes anything: everything not marked read-only.
fn mutates(mode: &Mode) -> bool {
    mode.manifest().annotations.get("readOnlyHint") != Some(&Value::Bool(true))
}

/// A mode's tags: its category, what its annotations say, the server and
/// topic of an imported tool, and its first keywords (an imported tool's
/// own tags).
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

/// The design's search: every word of the query appears, as a substring,
/// in the tool's name or description (case ignored).
fn matches_search(mode: &Mode, words: &[String]) -> bool {
    let target = format!("{} {}", mode.name(), mode.manifest().description).to_lowercase();
    words.iter().all(|word| target.contains(word.as_str()))
}

/// The design's summary text: the first sentence, or the start of the text
/// cut at `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let text = text.trim();
    let first = text.split(". ").next().unwrap_or(text).trim();
    let first = first.lines().next().unwrap_or_default();
    if first.chars().count() <= max {
        first.trim_end_matches('.').to_owned()
    } else {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

impl Discover {
    pub fn new(_catalog: &Catalog, prefix: &str) -> Self {
        let read_only =
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
        let mut tools = vec![
            json!({
                "name": DISCOVER,
                "title": "Find tools",
                "description": "Browse the tools: one line each, narrowed by category, tag or words, a page at a time, with every category and tag there is.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "category": {"type": "string", "description": "Only this category"},
                        "tag": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}], "description": "Only tools with this tag (or these tags)"},
                        "tagMode": {"type": "string", "enum": ["any", "all"], "description": "With several tags: any (default) or all must match"},
                        "search": {"type": "string", "description": "Words that must all appear in the name or description"},
                        "includeMutation": {"type": "boolean", "description": "Add whether each tool changes state (default false)"},
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
                "description": "Full definitions (input schema, whether it changes things, category, tags) of one tool or up to ten, in the order named.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "command": {
                            "oneOf": [
                                {"type": "string", "minLength": 1},
                                {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": MAX_DETAIL}
                            ],
                            "description": "A tool name, or a list of 1 to 10"
                        },
                        "names": {"description": "Same as command"}
                    },
                    "additionalProperties": false
                },
                "annotations": read_only
            }),
        ];
        tools.extend(dispatch::tools(""));
        Discover {
            tools,
            prefix: prefix.to_owned(),
        }
    }

    fn discover(&self, engine: &Engine, args: DiscoverArgs) -> Outcome {
        let started = Instant::now();
        let catalog = engine.catalog();
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT as i64);
        let offset = args.offset.unwrap_or(0);
        if !(1..=MAX_LIMIT as i64).contains(&limit) || offset < 0 {
            return dispatch::failure(
                "VALIDATION_ERROR",
                format!(
                    "limit must be between 1 and {MAX_LIMIT} (got {limit}) and offset 0 or more (got {offset})"
                ),
                format!("Call {}{DISCOVER} with limit 1-{MAX_LIMIT}.", self.prefix),
                None,
                started,
            );
        }
        let categories: BTreeSet<String> =
            catalog.modes().iter().map(|m| category_of(m).0).collect();
        let wanted_tags = args.tag.into_vec();
        let tag_mode = args.tag_mode.unwrap_or(TagMode::Any);
        let include_mutation = args.include_mutation.unwrap_or(false);
        let words: Vec<String> = args
            .search
            .as_deref()
            .unwrap_or_default()
            .to_lowercase()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let filtered: Vec<&Mode> = catalog
            .modes()
            .iter()
            .map(|m| m.as_ref())
            .filter(|mode| {
                args.category
                    .as_deref()
                    .is_none_or(|c| category_of(mode).0.eq_ignore_ascii_case(c.trim()))
            })
            .filter(|mode| matches_search(mode, &words))
            .filter(|mode| {
                let tags = tags(mode);
                wanted_tags.is_empty()
                    || match tag_mode {
                        TagMode::Any => wanted_tags.iter().any(|t| tags.contains(t)),
                        TagMode::All => wanted_tags.iter().all(|t| tags.contains(t)),
                    }
            })
            .collect();
        let commands: Vec<Value> = filtered
            .iter()
            .skip(offset as usize)
            .take(limit as usize)
            .map(|mode| {
                let mut summary = json!({
                    "name": mode.name(),
                    "description": first_sentence(&mode.manifest().description, SUMMARY_CHARS),
                    "category": category_of(mode).0,
                });
                if include_mutation {
                    summary["mutation"] = json!(mutates(mode));
                }
                summary
            })
            .collect();
        let all_tags: BTreeSet<String> = catalog.modes().iter().flat_map(|m| tags(m)).collect();
        let returned = commands.len();
        let has_more = (offset as usize) + returned < filtered.len();
        let reasoning = format!(
            "{returned} shown of {} matching ({} in all){}{}",
            filtered.len(),
            catalog.len(),
            args.category
                .as_deref()
                .map(|c| format!(", category '{c}'"))
                .unwrap_or_default(),
            if has_more {
                format!("; the next page starts at offset {}", offset + limit)
            } else {
                String::new()
            }
        );
        dispatch::success(
            json!({
                "commands": commands,
                "total": catalog.len(),
                "filtered": filtered.len(),
                "returned": returned,
                "hasMore": has_more,
                "availableCategories": categories,
                "availableTags": all_tags,
            }),
            reasoning,
            started,
        )
    }

    fn detail(&self, engine: &Engine, args: DetailArgs) -> Outcome {
        let started = Instant::now();
        let catalog = engine.catalog();
        let mut names = args.command.into_vec();
        names.extend(args.names.into_vec());
        if names.is_empty() || names.len() > MAX_DETAIL || names.iter().any(|n| n.is_empty()) {
            return dispatch::failure(
                "VALIDATION_ERROR",
                format!(
                    "command takes one name or a list of 1 to {MAX_DETAIL} names (got {})",
                    names.len()
                ),
                format!(
                    "Call {}{DETAIL} with {{\"command\": \"NAME\"}} or {{\"command\": [\"A\", \"B\"]}}.",
                    self.prefix
                ),
                None,
                started,
            );
        }
        let mut found = 0;
        let entries: Vec<Value> = names
            .iter()
            .map(|name| match catalog.get(name) {
                Some(mode) => {
                    found += 1;
                    let manifest = mode.manifest();
                    let tool = mode_tool(mode);
                    let mut entry = json!({
                        "name": mode.name(),
                        "found": true,
                        "title": tool["title"],
                        "description": manifest.description,
                        "category": category_of(mode).0,
                        "tags": tags(mode),
                        "mutation": mutates(mode),
                        "inputSchema": tool["inputSchema"],
                        "callable": manifest
                            .executor
                            .as_deref()
                            .is_some_and(crate::executor::is_registered),
                    });
                    if let Some(destructive) = manifest.annotations.get("destructiveHint") {
                        entry["destructive"] = destructive.clone();
                    }
                    if !manifest.annotations.is_empty() {
                        entry["annotations"] = Value::Object(manifest.annotations.clone());
                    }
                    entry
                }
                None => json!({
                    "name": name,
                    "found": false,
                    "error": {
                        "code": "COMMAND_NOT_FOUND",
                        "message": format!("'{name}' is not a command here"),
                        "suggestion": dispatch::not_found_suggestion(&suggestions(&catalog, name), &self.prefix),
                    }
                }),
            })
            .collect();
        dispatch::success(
            Value::Array(entries),
            format!("{found} of {} names are tools", names.len()),
            started,
        )
    }
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
            _ => {
                return dispatch::handle(engine, &self.prefix, name, arguments, call)
                    .await
                    .ok_or_else(|| UnknownTool(name.to_owned()));
            }
        })
    }
}
