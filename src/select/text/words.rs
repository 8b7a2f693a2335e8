//! Tokenization shared by the index and the queries.
//!
//! Words are split on every non-alphanumeric character and on camelCase humps,
//! then lower-cased, so matching is always whole-word: "or" never matches
//! inside "refactor" or "error". Apostrophes are dropped inside a word
//! ("what's" -> "whats", "don't" -> "dont") so contractions stay one word.
//!
//! [`runs`] also keeps adjacency: a run is a stretch of content words with no
//! stopword or clause punctuation between them. Phrase bigrams ("unit tests",
//! "call graph") are only formed inside a run, so "root cause of the crash"
//! never yields the pseudo-phrase "cause crash".

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

/// Words too common to carry meaning in a task description. They also break
/// runs, which keeps phrases honest. Words that look common but separate modes
/// ("not", "who", "why", "how") are deliberately kept: IDF weighs them.
const STOPWORDS: &[&str] = &[
    "a", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "got", "had", "has", "have", "here", "heres", "i",
    "id", "if", "im", "in", "into", "is", "it", "its", "ive", "just", "let", "lets", "me", "my",
    "of", "on", "or", "our", "please", "should", "so", "some", "than", "that", "thats", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "up", "us", "was",
    "we", "were", "what", "whats", "when", "which", "will", "with", "would", "you", "your",
    "youre",
];

/// Characters that end a clause: no phrase is formed across them.
fn breaks_run(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '<'
            | '>'
            | '"'
            | '|'
            | '\n'
            | '`'
            | '='
    )
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '’' | '‘')
}

/// Whether `word` (already lower-case) is a stopword.
pub fn is_stopword(word: &str) -> bool {
    // Called for every word of every text an index holds; a hash probe
    // beats a binary search's string comparisons.
    static SET: LazyLock<FxHashSet<&'static str>> =
        LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(word)
}

/// Splits `text` into runs of adjacent lower-case content words.
///
/// Stopwords, single letters and clause punctuation end a run; whitespace,
/// hyphens, slashes and underscores do not ("pre-commit", "relevant_files").
pub fn runs(text: &str) -> Vec<Vec<String>> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut raw = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            raw.push(c);
            continue;
        }
        // "don't": an apostrophe between letters joins them.
        if is_apostrophe(c) && !raw.is_empty() && chars.peek().is_some_and(|n| n.is_alphanumeric())
        {
            continue;
        }
        push_raw_word(&mut raw, &mut current, &mut runs);
        if breaks_run(c) {
            end_run(&mut current, &mut runs);
        }
    }
    push_raw_word(&mut raw, &mut current, &mut runs);
    end_run(&mut current, &mut runs);
    runs
}

/// Lower-case whole content words, in order, without adjacency.
pub fn words(text: &str) -> Vec<String> {
    runs(text).into_iter().flatten().collect()
}

fn push_raw_word(raw: &mut String, current: &mut Vec<String>, runs: &mut Vec<Vec<String>>) {
    if raw.is_empty() {
        return;
    }
    // Lower-cased into one buffer; a String is allocated only for a kept word.
    let mut lower = String::new();
    let mut start = 0;
    let mut previous: Option<char> = None;
    for (index, c) in raw.char_indices() {
        if previous.is_some_and(char::is_lowercase) && c.is_uppercase() {
            push_piece(&raw[start..index], &mut lower, current, runs);
            start = index;
        }
        previous = Some(c);
    }
    push_piece(&raw[start..], &mut lower, current, runs);
    raw.clear();
}

/// One camelCase piece: kept (lower-cased) or, as a stopword or a single
/// letter, the end of the run.
fn push_piece(
    piece: &str,
    lower: &mut String,
    current: &mut Vec<String>,
    runs: &mut Vec<Vec<String>>,
) {
    lower.clear();
    if piece.is_ascii() {
        lower.push_str(piece);
        lower.make_ascii_lowercase();
    } else {
        lower.extend(piece.chars().flat_map(char::to_lowercase));
    }
    let mut chars = lower.chars();
    let single = chars.next().is_some() && chars.next().is_none();
    let meaningful = !lower.is_empty() && (!single || lower.chars().all(|c| c.is_ascii_digit()));
    if meaningful && !is_stopword(lower) {
        current.push(lower.clone());
    } else {
        end_run(current, runs);
    }
}

fn end_run(current: &mut Vec<String>, runs: &mut Vec<Vec<String>>) {
    if !current.is_empty() {
        runs.push(std::mem::take(current));
    }
}

/// A tool name as words: `getUserRepos` -> `get User Repos`,
/// `ChaDri.change_drink` -> `Cha Dri change drink` (separators become spaces,
/// a capital after a lower-case letter or digit starts a word).
///
/// Unlike [`words`], it keeps stopwords, single letters and case: the
/// embedding reads the name as text (measured: [`words`] here cost a query
/// on bfcl_multiple and on GitHub).
pub fn split_identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut previous: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '.' | '-' | '/') {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            previous = None;
            continue;
        }
        if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            out.push(' ');
        }
        out.push(c);
        previous = Some(c);
    }
    out.trim_end().to_owned()
}

/// Short forms people type for words the sentence model reads far better
/// spelled out (a request with "PRs" scored 0.17 against GitHub's
/// `list_pull_requests`, with "pull requests" 0.49). Only whole words,
/// any case; nothing ambiguous ("sub", "mrs", "ci").
const SPELLED_OUT: &[(&str, &str)] = &[
    ("pr", "pull request"),
    ("prs", "pull requests"),
    ("mr", "merge request"),
    ("repo", "repository"),
    ("repos", "repositories"),
    ("db", "database"),
    ("dbs", "databases"),
    ("dir", "directory"),
    ("dirs", "directories"),
    ("msg", "message"),
    ("msgs", "messages"),
    ("dm", "direct message"),
    ("dms", "direct messages"),
    ("k8s", "kubernetes"),
    ("gh", "github"),
    ("img", "image"),
    ("imgs", "images"),
    ("perms", "permissions"),
    ("deps", "dependencies"),
    ("txn", "transaction"),
    ("txns", "transactions"),
];

/// `text` with the short forms of [`SPELLED_OUT`] written in full, for the
/// sentence model; unchanged (borrowed) when it has none.
pub fn spelled_out(text: &str) -> std::borrow::Cow<'_, str> {
    let long_form = |word: &str| {
        SPELLED_OUT
            .iter()
            .find(|(short, _)| word.eq_ignore_ascii_case(short))
            .map(|&(_, long)| long)
    };
    let is_word_char = |c: char| c.is_ascii_alphanumeric();
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    let bytes = text.as_bytes();
    while at < text.len() {
        let c = text[at..].chars().next().unwrap_or(' ');
        if !is_word_char(c) {
            at += c.len_utf8();
            continue;
        }
        let start = at;
        while at < text.len() && is_word_char(bytes[at] as char) {
            at += 1;
        }
        // Not part of a path, an address or an identifier (`src/pr.rs`,
        // `pr-42`, `db_url`).
        let before = text[..start].chars().next_back();
        let after = text[at..].chars().next();
        let joins = |c: Option<char>| matches!(c, Some('/' | '.' | '_' | '-' | '@' | '\\' | '#'));
        let sentence_end =
            after == Some('.') && !text[at + 1..].starts_with(|c: char| c.is_ascii_alphanumeric());
        let inside = joins(before) || (joins(after) && !sentence_end);
        if let Some(long) = long_form(&text[start..at]).filter(|_| !inside) {
            out.push_str(&text[copied..start]);
            out.push_str(long);
            copied = at;
        }
    }
    if copied == 0 {
        std::borrow::Cow::Borrowed(text)
    } else {
        out.push_str(&text[copied..]);
        std::borrow::Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_are_spelled_out_for_the_model_outside_paths_and_names() {
        assert_eq!(
            spelled_out("List open PRs in acme/api, and the repo's DB."),
            "List open pull requests in acme/api, and the repository's database."
        );
        assert_eq!(
            spelled_out("dm Ana: PR 42 is merged"),
            "direct message Ana: pull request 42 is merged"
        );
        for unchanged in [
            "open src/pr.rs",
            "set db_url",
            "branch pr-42",
            "ping @gh",
            "the prism repository",
        ] {
            assert!(
                matches!(spelled_out(unchanged), std::borrow::Cow::Borrowed(_)),
                "{unchanged}"
            );
        }
    }

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
        assert_eq!(words("getIssueComments"), ["get", "issue", "comments"]);
    }

    #[test]
    fn drops_stopwords_and_keeps_digits() {
        assert_eq!(words("Can you fix the HTTP 500?"), ["fix", "http", "500"]);
    }

    #[test]
    fn keeps_contractions_whole() {
        assert_eq!(words("don't panic, it's fine"), ["dont", "panic", "fine"]);
        assert_eq!(words("what’s wrong"), ["wrong"]);
    }

    #[test]
    fn runs_break_at_stopwords_and_punctuation() {
        assert_eq!(
            runs("root cause of the crash. Unit tests, pre-commit"),
            vec![
                vec!["root", "cause"],
                vec!["crash"],
                vec!["unit", "tests"],
                vec!["pre", "commit"]
            ]
        );
    }

    #[test]
    fn odd_input_does_not_panic() {
        for text in [
            "",
            "   ",
            "'",
            "a'",
            "'b",
            "ÄÖÜ ß İstanbul",
            "🦀🦀",
            "x\u{0}y",
            "ǅemal",
        ] {
            let _ = runs(text);
        }
        assert!(words("").is_empty());
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(split_identifier("getUserRepos"), "get User Repos");
        assert_eq!(
            split_identifier("ChaDri.change_drink"),
            "Cha Dri change drink"
        );
        assert_eq!(
            split_identifier("Payment_1_MakePayment"),
            "Payment 1 Make Payment"
        );
        assert_eq!(split_identifier("__x__"), "x");
    }
}
