//! A tool result whose structured content only repeats its text.
//!
//! Some servers (server-filesystem among them) send a text result twice:
//! as text blocks and as structured content `{"content": "<the text>"}`.
//! Taking the structured copy turned a file's text into JSON: a handle of
//! escaped line breaks served as `application/json`, a script reading a
//! file got `{"content": "..."}`. Where zenmode picks one form of a result
//! (handles, scripts), such a copy counts as text.

use serde_json::Value;

/// Whether `structured` is `text` wrapped in an object of one field.
pub fn repeats_text(structured: &Value, text: &str) -> bool {
    match structured.as_object() {
        Some(fields) if fields.len() == 1 => fields
            .values()
            .next()
            .and_then(Value::as_str)
            .is_some_and(|only| only == text),
        _ => false,
    }
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
        assert!(!repeats_text(&json!("a"), "a"));
    }
}
