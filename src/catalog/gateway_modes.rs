//! Modes from a gateway upstream's `tools/list`: one mode per tool, named
//! `<prefix>__<tool>` (proxies should prefix, so names from two servers
//! never clash), run by the `upstream` executor.
//!
//! This is only the conversion; fetching, caching and approving catalogs
//! belong to the gateway service.

use serde_json::{Map, Value, value::RawValue};

use super::{
    Category, MAX_SUMMARY_CHARS, Manifest, Mode, Origin, first_sentence, tool_examples::ForTool,
};

/// Between the prefix and the upstream tool's own name.
pub const SEPARATOR: &str = "__";

/// The longest tool name MCP allows.
pub const MAX_TOOL_NAME_CHARS: usize = 128;

/// The executor key of every gateway mode.
pub const EXECUTOR_KEY: &str = "upstream";

/// The mode name of `tool` on the server with `prefix`.
pub fn mode_name(prefix: &str, tool: &str) -> String {
    format!("{prefix}{SEPARATOR}{tool}")
}

/// Whether `name` only uses the characters MCP allows in tool names.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_TOOL_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// One upstream tool as a mode; `Err` says why the tool cannot be offered.
/// `examples`: the tool's example requests and what users call its server
/// (`tool_examples.rs`).
pub fn upstream_mode(
    server: &str,
    prefix: &str,
    tool: &Value,
    examples: ForTool,
) -> Result<Mode, String> {
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool has no name")?;
    let text = RawValue::from_string(tool.to_string()).map_err(|e| e.to_string())?;
    upstream_mode_from_text(server, prefix, name, text, examples)
}

/// The same, from the tool's JSON text: only the name is checked now, and
/// the text is parsed when the mode is first used (start-up from a cache
/// reads names only).
pub fn upstream_mode_from_text(
    server: &str,
    prefix: &str,
    name: &str,
    definition: Box<RawValue>,
    examples: ForTool,
) -> Result<Mode, String> {
    if name.trim().is_empty() {
        return Err("a tool has no name".to_owned());
    }
    let mode_name = mode_name(prefix, name);
    if !is_valid_tool_name(&mode_name) {
        return Err(format!(
            "tool {name:?} gives the name {mode_name:?}, which MCP does not allow (letters, digits, _ - . and at most {MAX_TOOL_NAME_CHARS} characters)"
        ));
    }
    let server = server.to_owned();
    let origin = Origin::Upstream(server.clone());
    Ok(Mode::deferred(mode_name.clone(), origin, move || {
        let tool: Value = serde_json::from_str(definition.get()).unwrap_or(Value::Null);
        manifest(&server, &mode_name, &tool, examples.clone())
    }))
}

fn manifest(server: &str, mode_name: &str, tool: &Value, examples: ForTool) -> Manifest {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let text = |key: &str| tool.get(key).and_then(Value::as_str).map(str::to_owned);
    let object = |key: &str| tool.get(key).and_then(Value::as_object).cloned();
    let description = text("description").unwrap_or_default();
    let mut schema = object("inputSchema").unwrap_or_default();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    Manifest {
        title: text("title")
            .or_else(|| {
                tool.pointer("/annotations/title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| name.to_owned()),
        summary: first_sentence(&description, MAX_SUMMARY_CHARS),
        name: mode_name.to_owned(),
        description,
        category: Category::Imported,
        server: Some(server.to_owned()),
        // The tool's own category, where the upstream gives one (in `_meta`
        // or its annotations); strategies fall back to the server.
        topic: ["/_meta/category", "/annotations/category"]
            .iter()
            .find_map(|pointer| tool.pointer(pointer).and_then(Value::as_str))
            .filter(|category| !category.trim().is_empty())
            .map(str::to_owned),
        upstream_tool: Some(name.to_owned()),
        output_schema: tool.get("outputSchema").filter(|v| v.is_object()).cloned(),
        keywords: Vec::new(),
        examples: Vec::new(),
        tool_examples: examples.examples,
        server_called: examples.server_called,
        classifier_row: examples.classifier_row,
        annotations: object("annotations").unwrap_or_else(Map::new),
        executor: Some(EXECUTOR_KEY.to_owned()),
        summary_fields: Vec::new(),
        workflow: None,
        example_request: None,
        aliases: Vec::new(),
        field_aliases: Map::new(),
        one_shot: Map::new(),
        schema: Value::Object(schema),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_becomes_a_prefixed_mode_with_its_schema_and_annotations() {
        let tool = json!({
            "name": "read_file", "description": "Read a file. Returns text.",
            "inputSchema": {"properties": {"path": {"type": "string"}}, "required": ["path"]},
            "annotations": {"readOnlyHint": true},
            "outputSchema": {"type": "object"}
        });
        let mode = upstream_mode("files", "fs", &tool, Default::default()).unwrap();
        assert!(!mode.is_parsed(), "nothing is built before first use");
        let manifest = mode.manifest();
        assert_eq!(mode.name(), "fs__read_file");
        assert_eq!(manifest.upstream_tool.as_deref(), Some("read_file"));
        assert_eq!(manifest.server.as_deref(), Some("files"));
        assert_eq!(manifest.summary, "Read a file");
        assert_eq!(manifest.schema["type"], "object");
        assert_eq!(manifest.required(), ["path"]);
        assert_eq!(manifest.annotations["readOnlyHint"], true);
        assert_eq!(manifest.executor.as_deref(), Some(EXECUTOR_KEY));
        assert_eq!(mode.origin, Origin::Upstream("files".into()));
    }

    #[test]
    fn names_mcp_does_not_allow_are_refused() {
        assert!(upstream_mode("s", "s", &json!({"description": "x"}), Default::default()).is_err());
        let spaced =
            upstream_mode("s", "s", &json!({"name": "two words"}), Default::default()).unwrap_err();
        assert!(spaced.contains("two words"), "{spaced}");
        let long = "x".repeat(MAX_TOOL_NAME_CHARS);
        assert!(upstream_mode("s", "s", &json!({ "name": long }), Default::default()).is_err());
        assert!(is_valid_tool_name("github__get-issue.v2"));
    }
}
