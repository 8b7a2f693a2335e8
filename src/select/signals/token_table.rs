//! The distilled token table: a static token-embedding table distilled
//! from all-MiniLM-L6-v2, the meaning signal's fast encoder.
//!
//! Lexical signals only see shared words; "reserve a plane ticket" and
//! `book_flight` share none. A sentence-embedding model sees the shared
//! meaning, but running one costs milliseconds per query. The table in
//! `data/embedding/` holds, for each of the model's 30,522 WordPiece tokens,
//! the model's output for that token alone, reduced by PCA, re-weighted so
//! frequent tokens count less, refined so that sums of token vectors land
//! near the full model's sentence embeddings, and stored as int8 with one
//! scale per token (`scripts/embedding/distill.py`, then `refine.py`,
//! rebuild it). A text's
//! vector is the sum of its tokens' vectors, normalized: one table lookup
//! and a multiply-add per dimension per token.
//!
//! The table is compiled into the binary and parsed on first use only, so a
//! process whose catalog has example phrasings for every mode (the built-in
//! modes) never touches it.
//!
//! Kept apart from the meaning signal (`embedding.rs`) because the full model
//! (`transformer.rs`) needs the table too (its tokenizer, and [`normalize`]):
//! both build on this file, and neither calls back into the other.

use std::sync::OnceLock;

use super::wordpiece::WordPiece;

/// The distilled table; its format is described at [`TokenTable::parse`].
static TABLE_BYTES: &[u8] = include_bytes!("../../../data/embedding/minilm_l6_static.bin");
const MAGIC: &[u8; 8] = b"ZENEMB01";
/// Tokens of a mode's text that count: MiniLM itself reads at most 256.
pub const MAX_TEXT_TOKENS: usize = 256;

/// Rows shorter than this share of the median row are filler words, which
/// the word-by-word match skips: they barely move its average, and skipping
/// them halves its cost.
const FILLER_SHARE_OF_MEDIAN: f32 = 0.4;

#[derive(Debug)]
pub(super) struct RowLengths {
    lengths: Vec<f32>,
    pub(super) inverse: Vec<f32>,
    filler: f32,
}

/// Token vectors and the tokenizer that indexes them.
#[derive(Debug)]
pub struct TokenTable {
    tokenizer: WordPiece<'static>,
    dims: usize,
    scales: &'static [u8],
    vectors: &'static [u8],
    /// Per token: a number or a piece of one. Numbers in a request are
    /// values (ids, sizes, dates), not what it asks for, and as rare tokens
    /// they would weigh a lot.
    numeric: Vec<bool>,
    /// Per token: the reciprocal length of its int8 row (0 for an all-zero
    /// row), so a cosine with a unit vector needs no dequantized copy; and
    /// the length below which a token is filler. Computed on first use.
    lengths: OnceLock<RowLengths>,
}

/// The compiled-in table, parsed on first use; `None` if it is damaged
/// (which a unit test rules out for the shipped file).
pub fn table() -> Option<&'static TokenTable> {
    static TABLE: OnceLock<Option<TokenTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| TokenTable::parse(TABLE_BYTES))
        .as_ref()
}

/// Parses the compiled-in table afresh (what the first use costs; for the
/// benchmark).
pub fn parse_compiled() -> Option<TokenTable> {
    TokenTable::parse(TABLE_BYTES)
}

impl TokenTable {
    /// Layout, little-endian: the magic `ZENEMB01`; u32 token count; u32
    /// dimensions; per token a u8 length and its UTF-8 text; per token an f32
    /// scale; per token `dimensions` int8 components.
    pub fn parse(bytes: &'static [u8]) -> Option<TokenTable> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let (count, rest) = read_u32(rest)?;
        let (dims, mut rest) = read_u32(rest)?;
        let (count, dims) = (count as usize, dims as usize);
        let mut tokens = Vec::with_capacity(count);
        for _ in 0..count {
            let (&len, tail) = rest.split_first()?;
            let (text, tail) = tail.split_at_checked(len as usize)?;
            tokens.push(std::str::from_utf8(text).ok()?);
            rest = tail;
        }
        let (scales, rest) = rest.split_at_checked(count.checked_mul(4)?)?;
        let vectors = rest.get(..count.checked_mul(dims)?)?;
        if dims == 0 || rest.len() != vectors.len() {
            return None;
        }
        let numeric = tokens
            .iter()
            .map(|token| {
                let digits = token.strip_prefix("##").unwrap_or(token);
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            })
            .collect();
        Some(TokenTable {
            numeric,
            lengths: OnceLock::new(),
            tokenizer: WordPiece::new(tokens)?,
            dims,
            scales,
            vectors,
        })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The WordPiece tokenizer over the table's vocabulary (the model's).
    pub fn tokenizer(&self) -> &WordPiece<'static> {
        &self.tokenizer
    }

    /// Adds the vectors of `text`'s first `max_tokens` tokens to `sum`
    /// (length [`TokenTable::dims`]); returns how many tokens it added.
    pub fn add_text(
        &self,
        text: &str,
        max_tokens: usize,
        ids: &mut Vec<u32>,
        sum: &mut [f32],
    ) -> usize {
        ids.clear();
        self.tokenizer.encode(text, ids);
        ids.retain(|&id| !self.numeric[id as usize]);
        ids.truncate(max_tokens);
        for &id in ids.iter() {
            self.add_row(id, sum);
        }
        ids.len()
    }

    /// The unit sum of `text`'s token vectors (`None` when it has no known
    /// token); `ids` gets the tokens that went into it.
    pub fn embed_text(&self, text: &str, ids: &mut Vec<u32>) -> Option<Vec<f32>> {
        let mut vector = vec![0.0; self.dims];
        self.add_text(text, MAX_TEXT_TOKENS, ids, &mut vector);
        normalize(&mut vector).then_some(vector)
    }

    /// Adds token `id`'s vector to `sum` (length [`TokenTable::dims`]).
    pub fn add_row(&self, id: u32, sum: &mut [f32]) {
        let scale = self.scale(id);
        for (total, &component) in sum.iter_mut().zip(self.raw_row(id)) {
            *total += scale * f32::from(component as i8);
        }
    }

    /// Token `id`'s int8 components (empty for an unknown id).
    pub(super) fn raw_row(&self, id: u32) -> &[u8] {
        let id = id as usize;
        self.vectors
            .get(id * self.dims..(id + 1) * self.dims)
            .unwrap_or_default()
    }

    pub(super) fn lengths(&self) -> &RowLengths {
        self.lengths.get_or_init(|| {
            let mut lengths: Vec<f32> = Vec::with_capacity(self.numeric.len());
            let mut inverse = Vec::with_capacity(lengths.capacity());
            for (id, row) in self.vectors.chunks_exact(self.dims).enumerate() {
                let raw = row
                    .iter()
                    .map(|&c| f32::from(c as i8).powi(2))
                    .sum::<f32>()
                    .sqrt();
                inverse.push(if raw > 0.0 { 1.0 / raw } else { 0.0 });
                lengths.push(raw * self.scale(id as u32));
            }
            let mut sorted = lengths.clone();
            let middle = sorted.len() / 2;
            let median = sorted
                .select_nth_unstable_by(middle, f32::total_cmp)
                .1
                .to_owned();
            RowLengths {
                lengths,
                inverse,
                filler: FILLER_SHARE_OF_MEDIAN * median,
            }
        })
    }

    fn scale(&self, id: u32) -> f32 {
        let id = id as usize;
        self.scales
            .get(id * 4..id * 4 + 4)
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0.0, f32::from_le_bytes)
    }

    /// Whether token `id` carries content rather than filler ("the", "can",
    /// "me"): refinement left filler rows short.
    pub fn is_content(&self, id: u32) -> bool {
        self.length(id) >= self.lengths().filler
    }

    /// The length of token `id`'s vector (0 for an unknown id).
    pub(super) fn length(&self, id: u32) -> f32 {
        self.lengths()
            .lengths
            .get(id as usize)
            .copied()
            .unwrap_or(0.0)
    }
}

fn read_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = bytes.split_at_checked(4)?;
    Some((u32::from_le_bytes(head.try_into().ok()?), rest))
}

/// Scales `vector` to unit length; false if it is all zeros.
pub fn normalize(vector: &mut [f32]) -> bool {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= f32::EPSILON || !norm.is_finite() {
        vector.iter_mut().for_each(|x| *x = 0.0);
        return false;
    }
    vector.iter_mut().for_each(|x| *x /= norm);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses() {
        let table = table().expect("data/embedding/minilm_l6_static.bin is damaged");
        assert!(table.dims() >= 64);
    }

    /// The reference tokenizer's ids for tricky texts (accents, CJK, Hangul,
    /// emoji, punctuation runs, long words); see scripts/embedding/distill.py.
    #[test]
    fn tokenizes_like_the_reference_tokenizer() {
        let table = table().unwrap();
        let cases = include_str!("../../../tests/data/wordpiece_cases.jsonl");
        for line in cases.lines() {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let text = case["text"].as_str().unwrap();
            let expected: Vec<u32> = serde_json::from_value(case["ids"].clone()).unwrap();
            let mut ids = Vec::new();
            table.tokenizer.encode(text, &mut ids);
            assert_eq!(ids, expected, "{text}");
        }
    }

    #[test]
    fn damaged_tables_are_refused() {
        assert!(TokenTable::parse(b"").is_none());
        assert!(TokenTable::parse(b"ZENEMB01\x01\x00\x00\x00").is_none());
        let truncated: &'static [u8] = &TABLE_BYTES[..TABLE_BYTES.len() - 1];
        assert!(TokenTable::parse(truncated).is_none());
    }

    #[test]
    fn filler_words_are_told_from_content_words() {
        let table = table().unwrap();
        let id = |word: &str| {
            let mut ids = Vec::new();
            table.tokenizer.encode(word, &mut ids);
            assert_eq!(ids.len(), 1, "{word}");
            ids[0]
        };
        for filler in ["the", "of", "to", "can", "me"] {
            assert!(!table.is_content(id(filler)), "{filler}");
        }
        for content in ["weather", "flight", "music", "forecast"] {
            assert!(table.is_content(id(content)), "{content}");
        }
    }
}
