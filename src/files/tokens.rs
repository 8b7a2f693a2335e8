//! A cheap token estimate ([`estimate_tokens`]): the real tokenizers are
//! never loaded on the serving path, so budgets count a quarter of the
//! characters.

/// A cheap token estimate: a quarter of the characters, rounded up.
///
/// Good enough for budgets (English text and code average about four
/// characters per token) and free of any tokenizer, which is never loaded on
/// the serving path.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_rounds_up_by_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Characters, not bytes.
        assert_eq!(estimate_tokens("éééé"), 1);
    }
}
