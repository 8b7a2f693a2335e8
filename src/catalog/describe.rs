//! What a mode's schema tells the model, derived from the manifest on demand:
//! compact field summaries, an example request, and readable validation errors.
//!
//! Nothing here is written by hand per mode: it all comes from the manifest.

use serde_json::{Map, Value, json};

use crate::catalog::{Manifest, Mode};

/// The longest phrase kept from a property description in compact summaries.
const MAX_PHRASE_CHARS: usize = 60;
/// Enums with more values than this are summarized by their first few.
const MAX_ENUM_VALUES: usize = 8;

/// Which properties a compact field summary covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldSet {
    /// Required fields plus the manifest's `summary_fields`.
    Key,
    /// Every property.
    All,
}

/// Compact summaries of a mode's fields, `{"field": "type - short phrase"}`,
/// split into required and optional, each in schema order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSummary {
    pub required: Map<String, Value>,
    pub optional: Map<String, Value>,
}

pub fn field_summary(manifest: &Manifest, which: FieldSet) -> FieldSummary {
    let mut summary = FieldSummary::default();
    let Some(properties) = manifest.properties() else {
        return summary;
    };
    let required = manifest.required();
    for (name, property) in properties {
        let line = Value::String(describe_property(property));
        if required.contains(&name.as_str()) {
            summary.required.insert(name.clone(), line);
        } else if which == FieldSet::All || manifest.summary_fields.iter().any(|f| f == name) {
            summary.optional.insert(name.clone(), line);
        }
    }
    summary
}

/// "integer>=1 - Which step this is" style one-liner for one property.
fn describe_property(property: &Value) -> String {
    let kind = type_label(property);
    let phrase = property
        .get("description")
        .and_then(Value::as_str)
        .map(|d| short_phrase(d, MAX_PHRASE_CHARS))
        .unwrap_or_default();
    if phrase.is_empty() {
        kind
    } else {
        format!("{kind} - {phrase}")
    }
}

fn type_label(property: &Value) -> String {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values
            .iter()
            .take(MAX_ENUM_VALUES)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
        let more = if values.len() > MAX_ENUM_VALUES {
            "|…"
        } else {
            ""
        };
        return format!("{}{more}", shown.join("|"));
    }
    let base = match property.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".to_owned(),
    };
    if base == "array"
        && let Some(item_type) = property
            .get("items")
            .and_then(|items| items.get("type"))
            .and_then(Value::as_str)
    {
        return format!("{item_type}[]");
    }
    if let Some(minimum) = property.get("minimum") {
        return format!("{base}>={minimum}");
    }
    base
}

/// The first sentence or clause of a description, cut to `max_chars`.
pub fn short_phrase(description: &str, max_chars: usize) -> String {
    let text = description.trim();
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, ';' | '\n')
                || (matches!(c, '.' | ':')
                    && text[i + 1..].starts_with(|n: char| n.is_whitespace()))
        })
        .map_or(text.len(), |(i, _)| i);
    let phrase = text[..end].trim().trim_end_matches('.');
    if phrase.chars().count() <= max_chars {
        return phrase.to_owned();
    }
    let mut cut: String = phrase.chars().take(max_chars - 1).collect();
    if let Some(space) = cut.rfind(' ') {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

/// The manifest's example request, or one synthesized from the schema
/// (required fields only) for modes that have none, such as imported tools.
pub fn example_request(manifest: &Manifest) -> Value {
    if let Some(example) = &manifest.example_request {
        return example.clone();
    }
    let mut example = Map::new();
    if let Some(properties) = manifest.properties() {
        for name in manifest.required() {
            if let Some(property) = properties.get(name) {
                example.insert(name.to_owned(), placeholder(name, property));
            }
        }
    }
    Value::Object(example)
}

fn placeholder(name: &str, property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    let kind = match property.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("string"),
        _ => "string",
    };
    match kind {
        "integer" | "number" => property.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => json!({}),
        "null" => Value::Null,
        _ => Value::String(format!("<{name}>")),
    }
}

/// One schema violation: where it is (a JSON pointer into the request) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Violation {
    pub pointer: String,
    pub problem: String,
}

/// Every violation of `request` against the mode's schema (empty when valid).
///
/// Errors when the schema itself does not compile.
pub fn violations(mode: &Mode, request: &Value) -> Result<Vec<Violation>, String> {
    let validator = mode.validator().as_ref().map_err(Clone::clone)?;
    Ok(validator
        .iter_errors(request)
        .map(|error| Violation {
            pointer: error.instance_path().as_str().to_owned(),
            problem: error.to_string(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(schema: Value, example: Option<Value>) -> Manifest {
        let mut m: Manifest = serde_json::from_value(json!({
            "name": "demo", "title": "Demo", "summary": "s", "description": "d",
            "category": "utility", "summary_fields": ["note"], "schema": schema
        }))
        .unwrap();
        m.example_request = example;
        m
    }

    fn demo_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "step": {"type": "string", "description": "What this step does. More detail here."},
                "count": {"type": "integer", "minimum": 1, "description": "How many; at least one"},
                "level": {"type": "string", "enum": ["low", "high"], "description": "Level"},
                "note": {"type": "string", "description": "An optional note"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags"}
            },
            "required": ["step", "count", "level"],
            "additionalProperties": false
        })
    }

    #[test]
    fn key_summary_has_required_and_summary_fields_only() {
        let m = manifest(demo_schema(), None);
        let summary = field_summary(&m, FieldSet::Key);
        let required: Vec<&String> = summary.required.keys().collect();
        let optional: Vec<&String> = summary.optional.keys().collect();
        assert_eq!(required, ["step", "count", "level"]);
        assert_eq!(optional, ["note"]);
        assert_eq!(summary.required["step"], "string - What this step does");
        assert_eq!(summary.required["count"], "integer>=1 - How many");
        assert_eq!(summary.required["level"], "low|high - Level");
        let all = field_summary(&m, FieldSet::All);
        assert_eq!(all.optional["tags"], "string[] - Tags");
    }

    #[test]
    fn synthesized_example_validates() {
        let m = manifest(demo_schema(), None);
        let example = example_request(&m);
        assert_eq!(
            example,
            json!({"step": "<step>", "count": 1, "level": "low"})
        );
        let mode = Mode::new(m, crate::catalog::Origin::Builtin);
        assert_eq!(violations(&mode, &example).unwrap(), []);
    }

    #[test]
    fn violations_list_every_problem_with_pointers() {
        let mode = Mode::new(
            manifest(demo_schema(), None),
            crate::catalog::Origin::Builtin,
        );
        let found = violations(&mode, &json!({"count": 0, "level": "mid", "stray": 1})).unwrap();
        let pointers: Vec<&str> = found.iter().map(|v| v.pointer.as_str()).collect();
        assert!(pointers.contains(&"/count"), "{found:?}");
        assert!(pointers.contains(&"/level"), "{found:?}");
        assert!(
            found.iter().any(|v| v.problem.contains("step")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|v| v.problem.contains("stray")),
            "{found:?}"
        );
    }

    #[test]
    fn short_phrase_cuts_cleanly() {
        assert_eq!(
            short_phrase("Absolute paths: one per file", 60),
            "Absolute paths"
        );
        assert_eq!(short_phrase("Use v1.2 here", 60), "Use v1.2 here");
        let cut = short_phrase(&"long words ".repeat(20), 30);
        assert!(cut.ends_with('…') && cut.chars().count() <= 30, "{cut}");
    }
}
