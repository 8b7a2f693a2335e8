//! Text normalization shared by the index and the queries.
//!
//! Words are split on every non-alphanumeric character and on camelCase humps,
//! then lower-cased, so matching is always whole-word: "or" never matches
//! inside "refactor" or "error".

/// Words too common to carry meaning in a task description.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
    "get", "i", "if", "in", "into", "is", "it", "its", "let", "me", "my", "of", "on", "or", "our",
    "please", "should", "so", "some", "that", "the", "their", "them", "then", "there", "these",
    "this", "to", "us", "was", "we", "what", "when", "which", "will", "with", "would", "you",
    "your",
];

/// Splits `text` into lower-case whole words, dropping stopwords and single
/// letters (the "s" of "here's").
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        for piece in split_camel_case(raw) {
            let word = piece.to_lowercase();
            let meaningful = word.chars().count() > 1
                || (!word.is_empty() && word.chars().all(|c| c.is_ascii_digit()));
            if meaningful && !STOPWORDS.contains(&word.as_str()) {
                out.push(word);
            }
        }
    }
    out
}

/// "listModels" -> ["list", "Models"]; all-caps and all-lower words stay whole.
fn split_camel_case(word: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    for window in chars.windows(2) {
        let (_, previous) = window[0];
        let (index, current) = window[1];
        if previous.is_lowercase() && current.is_uppercase() {
            pieces.push(&word[start..index]);
            start = index;
        }
    }
    pieces.push(&word[start..]);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_word_boundaries_only() {
        assert_eq!(
            words("Refactor the error-handling"),
            ["refactor", "error", "handling"]
        );
        assert!(!words("refactor for error").contains(&"or".to_owned()));
    }

    #[test]
    fn splits_identifiers() {
        assert_eq!(words("relevant_files"), ["relevant", "files"]);
        assert_eq!(
            words("listModels HTTPServer"),
            ["list", "models", "httpserver"]
        );
    }

    #[test]
    fn drops_stopwords_and_keeps_digits() {
        assert_eq!(words("Can you fix the HTTP 500?"), ["fix", "http", "500"]);
    }
}
