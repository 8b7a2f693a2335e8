//! A tool result whose structured content only repeats its text.
//!
//! Some servers (server-filesystem among them) send a text result twice:
//! as text blocks and as structured content `{"content": "<the text>"}`.
//! Taking the structured copy turned a file's text into JSON: a handle of
//! escaped line breaks served as `application/json`, a script reading a
//! file got `{"content": "..."}`. Where zenmode picks one form of a result
//! (handles, scripts), such a copy counts as text.

use serde_json::Value;

/// The one field of such a copy: MCP's own name for a result's blocks.
/// Another one-field object holding the text (`{"echo": text}`) is a
/// tool's own shape, which a script reads by its name.
const COPY_FIELD: &str = "content";

/// Whether `structured` is `{"content": text}` and nothing else.
pub fn repeats_text(structured: &Value, text: &str) -> bool {
    structured
        .as_object()
        .filter(|fields| fields.len() == 1)
        .and_then(|fields| fields.get(COPY_FIELD))
        .and_then(Value::as_str)
        .is_some_and(|copy| copy == text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_one_field_copy_of_the_text_counts() {
        assert!(repeats_text(&json!({"content": "a\nb"}), "a\nb"));
        assert!(!repeats_text(&json!({"content": "a"}), "b"));
        assert!(!repeats_text(&json!({"content": "a", "n": 1}), "a"));
        assert!(!repeats_text(&json!({"n": 1}), "1"));
        assert!(!repeats_text(&json!({"echo": "a"}), "a"));
        assert!(!repeats_text(&json!("a"), "a"));
    }
}
