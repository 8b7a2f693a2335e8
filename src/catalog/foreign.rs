//! Imports a `tools/list`-shaped catalog (`{"tools":[{name, description, inputSchema}]}`)
//! as modes, so other servers' tools can be measured, ranked and described.
//!
//! Imported modes have no executor: executing one says so.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    Category, LoadError, MAX_SUMMARY_CHARS, Manifest, Mode, Origin, first_sentence,
    tool_examples::{ExampleSource, ForTool},
};

#[derive(Deserialize)]
struct ToolsList {
    tools: Vec<ForeignTool>,
}

#[derive(Deserialize)]
struct ForeignTool {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "inputSchema")]
    input_schema: Option<Map<String, Value>>,
    #[serde(default)]
    annotations: Option<Map<String, Value>>,
    /// Which server the tool came from (catalogs that merge several servers).
    #[serde(default)]
    server: Option<String>,
    /// The server's own grouping of its tools, where it has one.
    #[serde(default)]
    category: Option<String>,
    /// Free labels for filtering (`discover`'s tags).
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

pub(super) fn load(path: &Path) -> Result<Vec<Mode>, LoadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LoadError::new(path.display(), format!("cannot read catalog: {e}")))?;
    let list: ToolsList = serde_json::from_str(&text).map_err(|e| {
        LoadError::new(
            path.display(),
            format!("not a tools/list catalog ({{\"tools\":[...]}}): {e}"),
        )
    })?;
    // Without a `server` field, a tool comes from the server the file is named after.
    let source = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("catalog")
        .to_owned();
    if list.tools.iter().any(|tool| tool.name.trim().is_empty()) {
        return Err(LoadError::new(path.display(), "a tool has an empty name"));
    }
    let examples = examples_by_server(&list.tools, &source);
    Ok(list
        .tools
        .into_iter()
        .map(|tool| {
            let (server, own) = server_and_own_name(&tool, &source);
            let tool_examples = examples
                .get(server)
                .map(|source| source.examples(own))
                .unwrap_or_default();
            Mode::new(
                into_manifest(tool, &source, tool_examples),
                Origin::ForeignCatalog(path.to_owned()),
            )
        })
        .collect())
}

/// The server a catalog's tool comes from (its `server` field, else the
/// prefix of a `<server>__<tool>` name, else the file's), and its name there.
/// A catalog that nests servers (`"server": "hub/weather"`) prefixes each
/// level (`hub__weather__forecast`): the tool's own name is past them all.
fn server_and_own_name<'t>(tool: &'t ForeignTool, source: &'t str) -> (&'t str, &'t str) {
    use super::gateway_modes::SEPARATOR;
    let prefixed = tool.name.split_once(SEPARATOR);
    match (&tool.server, prefixed) {
        (Some(server), _) => {
            let levels = server.split('/').collect::<Vec<_>>().join(SEPARATOR) + SEPARATOR;
            (
                server,
                tool.name.strip_prefix(&levels).unwrap_or(&tool.name),
            )
        }
        (None, Some((prefix, own))) => (prefix, own),
        (None, None) => (source, &tool.name),
    }
}

/// Each server's shipped examples, matched by the tools it has in the file.
fn examples_by_server<'t>(
    tools: &'t [ForeignTool],
    source: &'t str,
) -> std::collections::HashMap<String, ExampleSource> {
    let mut by_server: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for tool in tools {
        let (server, own) = server_and_own_name(tool, source);
        by_server.entry(server).or_default().push(own);
    }
    by_server
        .into_iter()
        .map(|(server, names)| {
            let source = ExampleSource::for_server(&[server], &names);
            (server.to_owned(), source)
        })
        .collect()
}

fn into_manifest(tool: ForeignTool, source: &str, examples: ForTool) -> Manifest {
    let description = tool.description.unwrap_or_default();
    let mut schema = tool.input_schema.unwrap_or_default();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    Manifest {
        title: tool.title.unwrap_or_else(|| tool.name.clone()),
        summary: first_sentence(&description, MAX_SUMMARY_CHARS),
        name: tool.name,
        description,
        category: Category::Imported,
        server: Some(tool.server.unwrap_or_else(|| source.to_owned())),
        // The tool's own category: the catalog entry's, else its `_meta`'s
        // or its annotations'.
        topic: tool
            .category
            .or_else(|| {
                [&tool.meta, &tool.annotations]
                    .into_iter()
                    .flatten()
                    .find_map(|m| m.get("category").and_then(Value::as_str))
                    .map(str::to_owned)
            })
            .filter(|c| !c.trim().is_empty()),
        upstream_tool: None,
        output_schema: None,
        keywords: tool.tags,
        examples: Vec::new(),
        tool_examples: examples.examples,
        server_called: examples.server_called,
        classifier_row: examples.classifier_row,
        annotations: tool.annotations.unwrap_or_default(),
        executor: None,
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

    #[test]
    fn imports_the_github_catalog() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/catalogs/github.json");
        let modes = load(&path).expect("github catalog loads");
        assert_eq!(modes.len(), 117);
        assert!(modes.iter().all(|m| m.manifest().executor.is_none()));
        assert!(
            modes
                .iter()
                .all(|m| m.manifest().summary.chars().count() <= MAX_SUMMARY_CHARS)
        );
    }

    /// The union catalog nests LiveMCPBench's servers
    /// (`"server": "livemcptool/weather"`, names `livemcptool__weather__...`):
    /// their tools still find the examples shipped for those servers, and
    /// the classifier's rows.
    #[test]
    fn tools_of_nested_servers_get_their_servers_examples() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/catalogs/union_all.json");
        let modes = load(&path).expect("the union loads");
        let nested: Vec<_> = modes
            .iter()
            .filter(|m| m.manifest().name.starts_with("livemcptool__"))
            .collect();
        assert!(nested.len() > 500, "{}", nested.len());
        let with_examples = nested
            .iter()
            .filter(|m| {
                !m.manifest().tool_examples.is_empty() && m.manifest().classifier_row.is_some()
            })
            .count();
        assert!(
            with_examples * 10 >= nested.len() * 9,
            "{with_examples} of {} nested tools have examples and a classifier row",
            nested.len()
        );
    }

    #[test]
    fn rejects_a_file_that_is_not_a_tools_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, r#"{"items": []}"#).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(
            err.contains("bad.json") && err.contains("tools/list"),
            "{err}"
        );
    }
}
