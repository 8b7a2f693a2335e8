//! The meaning signal: a static token-embedding table distilled from
//! all-MiniLM-L6-v2.
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

use std::sync::OnceLock;

use super::wordpiece::WordPiece;

/// The distilled table; its format is described at [`TokenTable::parse`].
static TABLE_BYTES: &[u8] = include_bytes!("../../data/embedding/minilm_l6_static.bin");
const MAGIC: &[u8; 8] = b"ZENEMB01";
/// Tokens of a mode's text that count: MiniLM itself reads at most 256.
pub const MAX_TEXT_TOKENS: usize = 256;

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
}

/// The compiled-in table, parsed on first use; `None` if it is damaged
/// (which a unit test rules out for the shipped file).
pub fn table() -> Option<&'static TokenTable> {
    static TABLE: OnceLock<Option<TokenTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| TokenTable::parse(TABLE_BYTES))
        .as_ref()
}

/// Ranks by the full model in `dir` from now on (every index built after
/// this call), keeping the vectors of catalog texts in `cache_dir`.
pub fn use_model(dir: &std::path::Path, cache_dir: Option<&std::path::Path>) -> Result<(), String> {
    #[cfg(feature = "transformer")]
    {
        let table = table().ok_or("the compiled-in token table is damaged")?;
        super::transformer::load(dir, cache_dir, table.tokenizer())
    }
    #[cfg(not(feature = "transformer"))]
    {
        let _ = cache_dir;
        Err(format!(
            "this zenmode was built without the `transformer` feature, so the model in {} cannot run (cargo build --release --features transformer)",
            dir.display()
        ))
    }
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
            let id = id as usize;
            let scale = f32::from_le_bytes(
                self.scales[id * 4..id * 4 + 4]
                    .try_into()
                    .unwrap_or_default(),
            );
            let row = &self.vectors[id * self.dims..(id + 1) * self.dims];
            for (total, &component) in sum.iter_mut().zip(row) {
                *total += scale * f32::from(component as i8);
            }
        }
        ids.len()
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

/// What turns a text into a vector: the compiled-in table, or the full
/// model when one was loaded (the `transformer` feature).
#[derive(Debug, Clone, Copy)]
pub enum Encoder {
    Table(&'static TokenTable),
    #[cfg(feature = "transformer")]
    Model(&'static super::transformer::Transformer),
}

impl Encoder {
    /// The full model if `--embedding-model` loaded one, else the table.
    pub fn current() -> Option<Encoder> {
        #[cfg(feature = "transformer")]
        if let Some(model) = super::transformer::loaded() {
            return Some(Encoder::Model(model));
        }
        table().map(Encoder::Table)
    }

    /// Whether this is the full model rather than the distilled table.
    pub fn is_full_model(&self) -> bool {
        !matches!(self, Encoder::Table(_))
    }

    pub fn dims(&self) -> usize {
        match self {
            Encoder::Table(table) => table.dims(),
            #[cfg(feature = "transformer")]
            Encoder::Model(model) => model.dims(),
        }
    }

    /// The text's unit vector, or `None` when it has no known token. With
    /// `keep`, the full model keeps a new vector on disk (catalog texts
    /// and probes: they come back in the next process; requests do not).
    pub fn embed(&self, text: &str, keep: bool) -> Option<Vec<f32>> {
        let _ = keep;
        match self {
            Encoder::Table(table) => {
                let mut vector = vec![0.0; table.dims()];
                let mut ids = Vec::new();
                table.add_text(text, MAX_TEXT_TOKENS, &mut ids, &mut vector);
                normalize(&mut vector).then_some(vector)
            }
            #[cfg(feature = "transformer")]
            Encoder::Model(model) => model.embed(text, keep),
        }
    }
}

/// Unit vectors for every mode of a catalog.
#[derive(Debug)]
pub struct EmbeddingIndex {
    encoder: Encoder,
    /// `modes × dims`, row-major; an all-zero row for a mode without text.
    vectors: Vec<f32>,
}

impl EmbeddingIndex {
    /// `texts` yields each mode's text, in catalog order.
    pub fn build<'t>(encoder: Encoder, texts: impl Iterator<Item = &'t str>) -> Self {
        let dims = encoder.dims();
        let mut vectors = Vec::new();
        for text in texts {
            match encoder.embed(text, true) {
                Some(vector) => vectors.extend(vector),
                None => vectors.resize(vectors.len() + dims, 0.0),
            }
        }
        EmbeddingIndex { encoder, vectors }
    }

    /// The query's unit vector, or `None` when it has no known token.
    /// `probe`: a fixed calibration text, worth keeping on disk.
    pub fn embed_query(&self, query: &str, probe: bool) -> Option<Vec<f32>> {
        self.encoder.embed(query, probe)
    }

    /// Cosine similarity of the query with every mode, in catalog order.
    pub fn similarities(&self, query: &[f32]) -> Vec<f32> {
        self.vectors
            .chunks_exact(self.encoder.dims())
            .map(|row| row.iter().zip(query).map(|(a, b)| a * b).sum())
            .collect()
    }
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
        let cases = include_str!("../../tests/data/wordpiece_cases.jsonl");
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
    fn related_texts_are_closer_than_unrelated_ones() {
        let table = table().unwrap();
        let index = EmbeddingIndex::build(
            Encoder::Table(table),
            [
                "book a flight: reserve seats on an airline",
                "get the weather forecast for a city",
            ]
            .into_iter(),
        );
        let query = index
            .embed_query("I need a plane ticket to Paris", false)
            .unwrap();
        let similarities = index.similarities(&query);
        assert!(similarities[0] > similarities[1], "{similarities:?}");
        assert!(index.embed_query("", false).is_none());
    }
}
