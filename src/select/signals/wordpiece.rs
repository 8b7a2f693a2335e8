//! BERT's uncased WordPiece tokenizer, for the embedding signal.
//!
//! The static token table (`token_table.rs`) was distilled from
//! all-MiniLM-L6-v2, so a text must be cut into exactly the pieces that
//! model's tokenizer makes: clean and lower-case the text, strip accents,
//! give every CJK character and every punctuation mark a token of its own,
//! then split each word greedily into the longest pieces the vocabulary
//! knows (`play`, `##ing`). A word it cannot cut becomes `[UNK]`.
//! `tests/data/wordpiece_cases.jsonl` (written by the reference tokenizer)
//! keeps this file honest.

use rustc_hash::FxHashMap as HashMap;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// Words longer than this (in chars) are one `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// A vocabulary and the rules to cut text with it.
#[derive(Debug)]
pub struct WordPiece<'v> {
    ids: HashMap<&'v str, u32>,
    unknown: u32,
}

impl<'v> WordPiece<'v> {
    /// `tokens[i]` is the piece with id `i`; continuation pieces start with `##`.
    pub fn new(tokens: impl IntoIterator<Item = &'v str>) -> Option<Self> {
        let ids: HashMap<&str, u32> = tokens
            .into_iter()
            .enumerate()
            .map(|(id, token)| (token, id as u32))
            .collect();
        let unknown = *ids.get("[UNK]")?;
        Some(WordPiece { ids, unknown })
    }

    /// How many tokens the vocabulary has.
    pub fn vocabulary_size(&self) -> usize {
        self.ids.len()
    }

    /// The token ids of `text`, without `[CLS]`/`[SEP]`.
    pub fn encode(&self, text: &str, out: &mut Vec<u32>) {
        let mut word = String::new();
        let mut piece = String::new();
        for c in normalized(text) {
            if c.is_whitespace() {
                self.push_word(&mut word, &mut piece, out);
            } else if is_punctuation(c) || is_cjk(c) {
                self.push_word(&mut word, &mut piece, out);
                word.push(c);
                self.push_word(&mut word, &mut piece, out);
            } else {
                word.push(c);
            }
        }
        self.push_word(&mut word, &mut piece, out);
    }

    /// Greedy longest-match-first over one word; clears `word`.
    fn push_word(&self, word: &mut String, piece: &mut String, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        let mark = out.len();
        if word.chars().count() > MAX_WORD_CHARS {
            out.push(self.unknown);
            word.clear();
            return;
        }
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end = previous_boundary(word, end);
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(mark);
                    out.push(self.unknown);
                    break;
                }
            }
        }
        word.clear();
    }
}

fn previous_boundary(word: &str, end: usize) -> usize {
    let mut end = end - 1;
    while !word.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Cleaned, accent-stripped, lower-cased chars: BERT's normalizer.
fn normalized(text: &str) -> impl Iterator<Item = char> + '_ {
    text.chars()
        .filter(|&c| c != '\0' && c != '\u{fffd}' && !is_control(c))
        .map(|c| if is_whitespace(c) { ' ' } else { c })
        .nfd()
        .filter(|&c| get_general_category(c) != GeneralCategory::NonspacingMark)
        .flat_map(char::to_lowercase)
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
        || get_general_category(c) == GeneralCategory::SpaceSeparator
}

fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
    )
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            GeneralCategory::ConnectorPunctuation
                | GeneralCategory::DashPunctuation
                | GeneralCategory::ClosePunctuation
                | GeneralCategory::FinalPunctuation
                | GeneralCategory::InitialPunctuation
                | GeneralCategory::OtherPunctuation
                | GeneralCategory::OpenPunctuation
        )
}

/// The CJK Unified Ideograph blocks BERT splits into single characters
/// (not Hangul or kana, which it treats like any letters).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> WordPiece<'static> {
        WordPiece::new([
            "[PAD]", "[UNK]", "play", "##ing", "##s", "the", ",", "cafe", "中", "!", "un", "##aff",
            "##able",
        ])
        .unwrap()
    }

    fn encode(text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        tokenizer().encode(text, &mut out);
        out
    }

    #[test]
    fn splits_words_into_the_longest_known_pieces() {
        assert_eq!(encode("Playing plays"), vec![2, 3, 2, 4]);
        assert_eq!(encode("unaffable"), vec![10, 11, 12]);
    }

    #[test]
    fn punctuation_cjk_and_accents() {
        assert_eq!(encode("the,Café!"), vec![5, 6, 7, 9]);
        assert_eq!(encode("中中"), vec![8, 8]);
    }

    #[test]
    fn unknown_words_become_one_unk() {
        assert_eq!(encode("playzzz the"), vec![1, 5]);
        assert_eq!(encode(&"a".repeat(101)), vec![1]);
        assert!(encode("\u{0}\u{200b}  ").is_empty());
    }
}
