//! Helpers every strategy uses: a mode as a tool, one-line summaries,
//! categories for browsing, argument parsing with the schema in the error,
//! "did you mean", and calling a mode by its tool name.

use serde_json::{Map, Value, json};

use super::strategy::UnknownTool;
use crate::{
    call::CallContext,
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome},
};

/// A mode's category for browsing, with a line describing it: the tool's
/// own category where it carries one (a catalog entry's `category`, an
/// upstream's `_meta` or annotations), else the server it comes from, else
/// (zenmode's own modes) the manifest's category.
pub fn category_of(mode: &Mode) -> (String, String) {
    let manifest = mode.manifest();
    match (&manifest.topic, &manifest.server) {
        (Some(topic), Some(server)) => (
            topic.clone(),
            format!("Tools of the {server} server filed under {topic}"),
        ),
        (Some(topic), None) => (topic.clone(), format!("Tools filed under {topic}")),
        (None, Some(server)) => (server.clone(), format!("Tools of the {server} server")),
        (None, None) => (
            manifest.category.as_str().to_owned(),
            manifest.category.description().to_owned(),
        ),
    }
}

/// The `tools/list` entry for a mode: everything comes from its manifest.
pub fn mode_tool(mode: &Mode) -> Value {
    let manifest = mode.manifest();
    let mut tool = Map::new();
    tool.insert("name".into(), json!(manifest.name));
    tool.insert("title".into(), json!(manifest.title));
    tool.insert("description".into(), json!(manifest.description));
    tool.insert("inputSchema".into(), mode.schema().clone());
    if !manifest.annotations.is_empty() {
        tool.insert(
            "annotations".into(),
            Value::Object(manifest.annotations.clone()),
        );
    }
    Value::Object(tool)
}

/// What a client hands the model: `[{name, description, input_schema}]`.
pub fn model_facing(tools: &[Value]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool["name"],
                    "description": tool["description"],
                    "input_schema": tool["inputSchema"],
                })
            })
            .collect(),
    )
}

/// The first sentence of a description, at most `max` characters: what
/// browsing replies show instead of the whole text.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text
        .split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .lines()
        .next()
        .unwrap_or_default();
    if first.chars().count() <= max {
        first.to_owned()
    } else {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Names in `catalog` closest to `name`, for "did you mean" replies: the
/// catalog's rule, which leaves out other servers' destructive tools.
pub fn suggestions(catalog: &Catalog, name: &str) -> Vec<String> {
    catalog
        .suggestions(name, 3)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Parses meta-tool arguments into `T`, or explains what was wrong with
/// them, quoting the tool's input schema.
pub fn parse_arguments<T: serde::de::DeserializeOwned>(
    tools: &[Value],
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, Outcome> {
    serde_json::from_value(Value::Object(arguments)).map_err(|e| {
        let schema = tools
            .iter()
            .find(|t| t["name"] == tool)
            .map(|t| t["inputSchema"].clone())
            .unwrap_or(Value::Null);
        Outcome::error(json!({
            "error": "invalid_arguments",
            "message": format!("{tool}: {e}"),
            "input_schema": schema,
        }))
    })
}

/// Meta tools defined as JSON data beside a strategy's file.
pub fn meta_tools(json: &str) -> Vec<Value> {
    serde_json::from_str(json).unwrap_or_else(|e| {
        // Unreachable for a tested build: every strategy's tests list its tools.
        panic!("a meta tool definition file is invalid JSON: {e}")
    })
}

/// A mode called under its own tool name: its arguments are the request.
pub(crate) async fn call_mode_by_name(
    engine: &Engine,
    name: &str,
    arguments: Map<String, Value>,
    call: &CallContext,
) -> Result<Outcome, UnknownTool> {
    engine
        .execute(name, Value::Object(arguments), None, call)
        .await
        .map_err(|_| UnknownTool(name.to_owned()))
}
