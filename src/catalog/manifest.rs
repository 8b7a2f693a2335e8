//! The on-disk shape of a mode manifest (`modes/<name>.json`) and its checks.
//!
//! Parsing only checks what can be checked without compiling the schema, so
//! start-up stays cheap; `zenmode modes check` goes further (see `crate::cli::modes::check`).

use std::sync::LazyLock;

use serde::Deserialize;

use super::{
    Category,
    shared::{SHARED_KEY, inline_shared, parse_definitions},
};

/// The definitions manifests may name with `$shared`.
static SHARED_DEFINITIONS: LazyLock<Map<String, Value>> = LazyLock::new(|| {
    parse_definitions(include_str!("../../modes/shared/properties.json"))
        .expect("build.rs has already read modes/shared/properties.json")
});
use serde_json::{Map, Value};

/// The longest `summary` a manifest may carry: it is shown in compact listings.
pub const MAX_SUMMARY_CHARS: usize = 80;

/// The first sentence (or line) of `text`, cut to at most `max_chars` characters.
pub fn first_sentence(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            c == '\n' || (c == '.' && text[i + 1..].starts_with(|n: char| n.is_whitespace()))
        })
        .map_or(text.len(), |(i, _)| i);
    let sentence = text[..end].trim();
    if sentence.chars().count() <= max_chars {
        return sentence.to_owned();
    }
    let mut cut: String = sentence.chars().take(max_chars - 1).collect();
    if let Some(space) = cut.rfind(' ') {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

/// A mode manifest exactly as written in `modes/<name>.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub title: String,
    pub summary: String,
    pub description: String,
    pub category: Category,
    /// The server an imported tool comes from (`None` for zenmode's own modes).
    #[serde(default)]
    pub server: Option<String>,
    /// The server's own grouping of the tool (free text), where it has one.
    #[serde(default)]
    pub topic: Option<String>,
    /// The tool's own name on its upstream server (gateway modes only; the
    /// mode itself is named `<prefix>__<tool>`).
    #[serde(default)]
    pub upstream_tool: Option<String>,
    /// The upstream tool's `outputSchema`, passed on unchanged when listed.
    #[serde(default)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub examples: Vec<String>,
    /// Example requests for another server's tool (shipped for well-known
    /// servers, or learned from this user's sessions: `tool_examples.rs`).
    /// Unlike `examples`, they do not make a mode one of zenmode's own: the
    /// tool is still read by its name and annotations for what it does.
    #[serde(skip)]
    pub tool_examples: std::sync::Arc<[String]>,
    /// What users call the tool's server, besides its name ("jira" and
    /// "confluence" for Atlassian's): a request that names it asks for
    /// that server's tools.
    #[serde(skip)]
    pub server_called: std::sync::Arc<[String]>,
    /// The tool's row in the tool classifier, fitted on its shipped
    /// examples (`tool_classifier.rs`).
    #[serde(skip)]
    pub classifier_row: Option<u32>,
    #[serde(default)]
    pub annotations: Map<String, Value>,
    /// Registry key of the executor; `None` for modes imported from a foreign catalog.
    #[serde(default)]
    pub executor: Option<String>,
    /// Optional properties worth showing in compact field summaries.
    #[serde(default)]
    pub summary_fields: Vec<String>,
    /// Prompts and rules for the workflow executor (workflow modes only).
    /// Kept as JSON here: the catalog knows nothing about executors, and the
    /// workflow executor reads it into its own type when it starts (and
    /// `modes check` does so for every mode).
    #[serde(default)]
    pub workflow: Option<Value>,
    /// A request that validates against `schema`; `None` only for foreign tools.
    #[serde(default)]
    pub example_request: Option<Value>,
    /// Other names the mode answers to, such as a design document's own
    /// name for it (`security` for `secaudit`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Other names for request fields: alias -> the schema property it fills
    /// when the request does not give that property itself.
    #[serde(default)]
    pub field_aliases: Map<String, Value>,
    /// Values that make a one-step call of a multi-step mode: filled in only
    /// when the request gives none of these fields.
    #[serde(default)]
    pub one_shot: Map<String, Value>,
    /// The request schema, always a JSON object (checked at parse time).
    pub schema: Value,
}

/// Words in a tool name that mark it as destructive when its server gives
/// no `destructiveHint`.
const DESTRUCTIVE_WORDS: [&str; 5] = ["delete", "remove", "reset", "drop", "overwrite"];

/// Whether a tool's name says it deletes or overwrites something (for
/// tools whose server gives no `destructiveHint`).
pub fn named_destructive(tool: &str) -> bool {
    tool.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| DESTRUCTIVE_WORDS.contains(&word))
}

impl Manifest {
    /// Whether calling this tool may delete or overwrite something: its
    /// server's `destructiveHint`, or a name that says so. zenmode's own
    /// modes never do.
    pub fn destructive(&self) -> bool {
        if self.annotations.get("destructiveHint") == Some(&Value::Bool(true)) {
            return true;
        }
        named_destructive(self.upstream_tool.as_deref().unwrap_or(&self.name))
    }

    /// Parses a manifest and checks the rules that need no schema compilation.
    ///
    /// `expected_name` is the file stem when the manifest comes from a file.
    /// Properties written as `{"$shared": NAME}` get the shared definition
    /// NAME (embedded manifests arrive with them already inlined).
    pub fn parse(text: &str, expected_name: Option<&str>) -> Result<Self, String> {
        let manifest: Manifest = if text.contains(SHARED_KEY) {
            let mut value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
            inline_shared(&mut value, &SHARED_DEFINITIONS)?;
            serde_json::from_value(value)
        } else {
            serde_json::from_str(text)
        }
        .map_err(|e| e.to_string())?;
        manifest.check_shape(expected_name)?;
        Ok(manifest)
    }

    fn check_shape(&self, expected_name: Option<&str>) -> Result<(), String> {
        if !is_valid_mode_name(&self.name) {
            return Err(format!(
                "name {:?} must be lower-case letters, digits and underscores, starting with a letter",
                self.name
            ));
        }
        if let Some(expected) = expected_name
            && expected != self.name
        {
            return Err(format!(
                "name {:?} does not match the file name {expected:?}.json",
                self.name
            ));
        }
        let summary_chars = self.summary.chars().count();
        if summary_chars > MAX_SUMMARY_CHARS || self.summary.contains('\n') {
            return Err(format!(
                "summary must be one line of at most {MAX_SUMMARY_CHARS} characters (it has {summary_chars})"
            ));
        }
        if !self.schema.is_object() || self.schema["type"] != "object" {
            return Err("schema must be an object with \"type\": \"object\"".to_owned());
        }
        let properties = self.properties();
        let is_property = |field: &str| properties.is_some_and(|p| p.contains_key(field));
        for (alias, field) in &self.field_aliases {
            let Some(field) = field.as_str().filter(|f| is_property(f)) else {
                return Err(format!(
                    "field_aliases maps {alias:?} to {field}, which is not a schema property"
                ));
            };
            if is_property(alias) {
                return Err(format!(
                    "field_aliases: {alias:?} (for {field:?}) is already a schema property"
                ));
            }
        }
        if let Some(field) = self.one_shot.keys().find(|f| !is_property(f)) {
            return Err(format!(
                "one_shot names {field:?}, which is not a schema property"
            ));
        }
        for alias in &self.aliases {
            if !is_valid_mode_name(alias) || *alias == self.name {
                return Err(format!("alias {alias:?} is not a usable mode name"));
            }
        }
        for field in &self.summary_fields {
            if !properties.is_some_and(|p| p.contains_key(field)) {
                return Err(format!(
                    "summary_fields names {field:?}, which is not a schema property"
                ));
            }
        }
        Ok(())
    }

    /// The schema's `properties` object, if any.
    pub fn properties(&self) -> Option<&Map<String, Value>> {
        self.schema.get("properties").and_then(Value::as_object)
    }

    /// Rewrites a request in the mode's own terms: aliased fields under their
    /// real names, and the one-step values when the request, as sent, names
    /// none of them and none of the required fields (it speaks another
    /// vocabulary, such as design 004's). A field the request names itself
    /// is never overwritten.
    pub fn prepare_request(&self, request: &mut Value) {
        let Value::Object(fields) = request else {
            return;
        };
        let own_terms = self.required().into_iter().any(|f| fields.contains_key(f))
            || self.one_shot.keys().any(|f| fields.contains_key(f));
        for (alias, field) in &self.field_aliases {
            let Some(field) = field.as_str() else {
                continue;
            };
            if !fields.contains_key(field)
                && let Some(value) = fields.remove(alias)
            {
                fields.insert(field.to_owned(), value);
            }
        }
        if !own_terms {
            for (field, value) in &self.one_shot {
                fields.insert(field.clone(), value.clone());
            }
        }
    }

    /// The schema's `required` list, in schema order.
    pub fn required(&self) -> Vec<&str> {
        self.schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
}

/// Mode names double as MCP tool names, so keep them to a portable alphabet.
pub fn is_valid_mode_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_sentence_stops_at_period_or_newline() {
        assert_eq!(first_sentence("Get a file. Then more.", 80), "Get a file");
        assert_eq!(first_sentence("Line one\nline two", 80), "Line one");
        assert_eq!(
            first_sentence("Version 1.2 is here", 80),
            "Version 1.2 is here"
        );
        let long = first_sentence(&"word ".repeat(40), 20);
        assert!(long.chars().count() <= 20 && long.ends_with('…'), "{long}");
    }

    use super::*;

    fn minimal(name: &str, summary: &str) -> String {
        serde_json::json!({
            "name": name, "title": "T", "summary": summary, "description": "D",
            "category": "utility", "schema": {"type": "object", "properties": {}}
        })
        .to_string()
    }

    #[test]
    fn accepts_a_minimal_manifest() {
        let manifest = Manifest::parse(&minimal("demo", "Does a thing"), Some("demo")).unwrap();
        assert_eq!(manifest.name, "demo");
        assert!(manifest.required().is_empty());
    }

    #[test]
    fn rejects_a_name_that_differs_from_the_file() {
        let err = Manifest::parse(&minimal("demo", "s"), Some("other")).unwrap_err();
        assert!(err.contains("does not match the file name"), "{err}");
    }

    #[test]
    fn rejects_a_long_summary() {
        let err = Manifest::parse(&minimal("demo", &"x".repeat(81)), None).unwrap_err();
        assert!(err.contains("at most 80"), "{err}");
    }

    #[test]
    fn rejects_unknown_keys_and_bad_names() {
        let text = minimal("demo", "s").replace("\"title\"", "\"titel\"");
        assert!(Manifest::parse(&text, None).is_err());
        assert!(!is_valid_mode_name("Debug"));
        assert!(!is_valid_mode_name("9lives"));
        assert!(is_valid_mode_name("code_review2"));
    }

    #[test]
    fn shared_definitions_are_inlined_and_bad_references_refused() {
        let with_reference = |reference: Value| {
            serde_json::json!({
                "name": "demo", "title": "T", "summary": "s", "description": "D",
                "category": "utility",
                "schema": {"type": "object", "properties": {"continuation_id": reference}}
            })
            .to_string()
        };
        let manifest = Manifest::parse(
            &with_reference(serde_json::json!({"$shared": "continuation_id"})),
            None,
        )
        .unwrap();
        let property = &manifest.properties().unwrap()["continuation_id"];
        assert_eq!(property, &SHARED_DEFINITIONS["continuation_id"]);
        assert_eq!(property["type"], "string");

        let unknown = Manifest::parse(
            &with_reference(serde_json::json!({"$shared": "nope"})),
            None,
        )
        .unwrap_err();
        assert!(
            unknown.contains("no shared definition \"nope\""),
            "{unknown}"
        );
        let mixed = Manifest::parse(
            &with_reference(serde_json::json!({"$shared": "images", "type": "string"})),
            None,
        )
        .unwrap_err();
        assert!(mixed.contains("no other key"), "{mixed}");
    }

    #[test]
    fn rejects_summary_fields_that_are_not_properties() {
        let text = serde_json::json!({
            "name": "demo", "title": "T", "summary": "s", "description": "D",
            "category": "utility", "summary_fields": ["ghost"],
            "schema": {"type": "object", "properties": {"real": {"type": "string"}}}
        })
        .to_string();
        let err = Manifest::parse(&text, None).unwrap_err();
        assert!(err.contains("ghost"), "{err}");
    }
}
