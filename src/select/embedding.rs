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

/// Rows shorter than this share of the median row are filler words, which
/// the word-by-word match skips: they barely move its average, and skipping
/// them halves its cost.
const FILLER_SHARE_OF_MEDIAN: f32 = 0.4;

#[derive(Debug)]
struct RowLengths {
    lengths: Vec<f32>,
    inverse: Vec<f32>,
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

/// The model the default install puts beside the binary
/// (`scripts/install.sh`): its directory's name under [`default_model_root`].
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// Where `scripts/install.sh` puts models:
/// `${XDG_DATA_HOME:-$HOME/.local/share}/zenmode/model`. Spelled out rather
/// than taken from the platform's conventions so that the shell script and
/// the binary agree on every platform. `None` without a home directory.
pub fn default_model_root() -> Option<std::path::PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(std::path::PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| std::path::PathBuf::from(home).join(".local/share"))
        })?;
    Some(data.join("zenmode").join("model"))
}

/// The default model's directory, if the install put its weights there.
pub fn default_model_dir() -> Option<std::path::PathBuf> {
    let dir = default_model_root()?.join(DEFAULT_MODEL_NAME);
    (dir.join("config.json").is_file() && dir.join("model.safetensors").is_file()).then_some(dir)
}

/// [`use_model`], opened on first need rather than now
/// (`transformer::load_later`): for the default model, which a server must
/// not wait for at start-up and whose failure only costs accuracy. `false`
/// in a build without the `transformer` feature.
pub fn use_model_later(dir: &std::path::Path, cache_dir: Option<&std::path::Path>) -> bool {
    #[cfg(feature = "transformer")]
    {
        super::transformer::load_later(dir, cache_dir);
        true
    }
    #[cfg(not(feature = "transformer"))]
    {
        let _ = (dir, cache_dir);
        false
    }
}

/// Whether the full model is loaded or named for loading (without opening
/// it): an index then builds the model's part too.
pub fn model_configured() -> bool {
    #[cfg(feature = "transformer")]
    {
        super::transformer::configured()
    }
    #[cfg(not(feature = "transformer"))]
    {
        false
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
    fn raw_row(&self, id: u32) -> &[u8] {
        let id = id as usize;
        self.vectors
            .get(id * self.dims..(id + 1) * self.dims)
            .unwrap_or_default()
    }

    fn lengths(&self) -> &RowLengths {
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
    fn length(&self, id: u32) -> f32 {
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
            Encoder::Table(table) => table.embed_text(text, &mut Vec::new()),
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
    /// With the table: each mode's distinct tokens, for [`Self::soft_matches`];
    /// mode `m`'s are `tokens[starts[m]..starts[m + 1]]`. Empty with the
    /// full model, whose sentence vectors already weigh words in context.
    tokens: Vec<u32>,
    starts: Vec<usize>,
}

/// A request as the meaning signal sees it.
#[derive(Debug, Clone, Default)]
pub struct QueryMeaning {
    /// Unit sentence vector.
    pub vector: Vec<f32>,
    /// With the table: each token's unit row (`tokens × dims`) and its
    /// weight (the row's length, which refinement made small for filler).
    token_rows: Vec<f32>,
    token_weights: Vec<f32>,
}

impl EmbeddingIndex {
    /// `texts` yields each mode's text, in catalog order.
    pub fn build<'t>(encoder: Encoder, texts: impl Iterator<Item = &'t str>) -> Self {
        let dims = encoder.dims();
        let mut vectors = Vec::new();
        let mut tokens = Vec::new();
        let mut starts = vec![0];
        let mut ids = Vec::new();
        for text in texts {
            let vector = match encoder {
                Encoder::Table(table) => {
                    let vector = table.embed_text(text, &mut ids);
                    ids.retain(|&id| table.is_content(id));
                    ids.sort_unstable();
                    ids.dedup();
                    tokens.extend_from_slice(&ids);
                    starts.push(tokens.len());
                    vector
                }
                #[cfg(feature = "transformer")]
                Encoder::Model(_) => encoder.embed(text, true),
            };
            match vector {
                Some(vector) => vectors.extend(vector),
                None => vectors.resize(vectors.len() + dims, 0.0),
            }
        }
        EmbeddingIndex {
            encoder,
            vectors,
            tokens,
            starts,
        }
    }

    /// The query's vector, or `None` when it has no known token.
    /// `probe`: a fixed calibration text, worth keeping on disk.
    pub fn embed_query(&self, query: &str, probe: bool) -> Option<QueryMeaning> {
        let _ = probe;
        match self.encoder {
            Encoder::Table(table) => {
                let dims = table.dims();
                let mut ids = Vec::new();
                let vector = table.embed_text(query, &mut ids)?;
                ids.retain(|&id| table.is_content(id));
                let mut token_rows = vec![0.0; ids.len() * dims];
                for (&id, row) in ids.iter().zip(token_rows.chunks_exact_mut(dims)) {
                    table.add_row(id, row);
                    normalize(row);
                }
                let token_weights = ids.iter().map(|&id| table.length(id)).collect();
                Some(QueryMeaning {
                    vector,
                    token_rows,
                    token_weights,
                })
            }
            #[cfg(feature = "transformer")]
            Encoder::Model(_) => self.encoder.embed(query, probe).map(|vector| QueryMeaning {
                vector,
                ..QueryMeaning::default()
            }),
        }
    }

    /// Whether the full model (not the table) encoded this index.
    pub fn is_full_model(&self) -> bool {
        self.encoder.is_full_model()
    }

    /// Cosine similarity of the query with every mode, in catalog order.
    pub fn similarities(&self, query: &[f32]) -> Vec<f32> {
        self.vectors
            .chunks_exact(self.encoder.dims())
            .map(|row| row.iter().zip(query).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// How closely each mode's words cover the query's, word by word: for
    /// each query token the cosine of the mode's closest token, averaged
    /// with the tokens' weights; 0..1 per mode of `modes`, in that order.
    /// Empty without token data (the full model).
    ///
    /// A sentence vector is a sum, so the words of a long, chatty request
    /// that name what it wants drown among the others; matched word by
    /// word they count in full. It also sees near-synonyms
    /// the lexical signal cannot ("movie" and "film": cosine 0.86).
    pub fn soft_matches(&self, query: &QueryMeaning, modes: &[usize]) -> Vec<f32> {
        // Without the `transformer` feature the table is the only encoder.
        #[allow(clippy::infallible_destructuring_match)]
        let table = match self.encoder {
            Encoder::Table(table) => table,
            #[cfg(feature = "transformer")]
            Encoder::Model(_) => return Vec::new(),
        };
        let dims = table.dims();
        let words = query.token_weights.len();
        let total: f32 = query.token_weights.iter().sum();
        if words == 0 || total <= 0.0 || self.starts.len() < 2 {
            return vec![0.0; modes.len()];
        }
        // Each distinct token of the candidates once: (token, candidate).
        let mut pairs: Vec<(u32, usize)> = Vec::new();
        for (slot, &mode) in modes.iter().enumerate() {
            let (Some(&from), Some(&to)) = (self.starts.get(mode), self.starts.get(mode + 1))
            else {
                continue;
            };
            pairs.extend(self.tokens[from..to].iter().map(|&id| (id, slot)));
        }
        pairs.sort_unstable();
        let inverse_lengths = &table.lengths().inverse;
        let mut best = vec![0.0f32; modes.len() * words];
        let mut cosines = vec![0.0f32; words];
        let mut previous = None;
        for (id, slot) in pairs {
            if previous != Some(id) {
                previous = Some(id);
                let row = table.raw_row(id);
                let inverse = inverse_lengths.get(id as usize).copied().unwrap_or(0.0);
                for (cos, query_row) in cosines.iter_mut().zip(query.token_rows.chunks_exact(dims))
                {
                    *cos = inverse * dot_int8(query_row, row);
                }
            }
            for (best, &cos) in best[slot * words..(slot + 1) * words]
                .iter_mut()
                .zip(&cosines)
            {
                *best = best.max(cos);
            }
        }
        best.chunks_exact(words)
            .map(|best| {
                (best
                    .iter()
                    .zip(&query.token_weights)
                    .map(|(&cos, &weight)| weight * cos)
                    .sum::<f32>()
                    / total)
                    .min(1.0)
            })
            .collect()
    }
}

/// Dot product of a float vector with an int8 row, in eight lanes so the
/// compiler can vectorize it.
fn dot_int8(a: &[f32], b: &[u8]) -> f32 {
    let mut sums = [0.0f32; 8];
    let mut a_chunks = a.chunks_exact(8);
    let mut b_chunks = b.chunks_exact(8);
    for (x, y) in (&mut a_chunks).zip(&mut b_chunks) {
        for ((sum, x), &y) in sums.iter_mut().zip(x).zip(y) {
            *sum += x * f32::from(y as i8);
        }
    }
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, &y)| x * f32::from(y as i8))
        .sum();
    sums.iter().sum::<f32>() + tail
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

    /// Scores stay within 0..1; a word shared exactly counts in full,
    /// whatever else the mode's text says; no text or no such mode is 0.
    #[test]
    fn the_word_by_word_match_counts_shared_words_in_full() {
        let table = table().unwrap();
        let index = EmbeddingIndex::build(
            Encoder::Table(table),
            [
                "weather: current conditions and forecast for a city",
                "party planner: invite friends and plan a get-together",
                "",
            ]
            .into_iter(),
        );
        let query = index
            .embed_query(
                "my friends and I planned a picnic in the park on Saturday, so will the weather hold up",
                false,
            )
            .unwrap();
        let soft = index.soft_matches(&query, &[0, 1, 2, 99]);
        assert_eq!(soft.len(), 4);
        assert!(soft.iter().all(|s| (0.0..=1.0).contains(s)), "{soft:?}");
        assert_eq!((soft[2], soft[3]), (0.0, 0.0), "no text, no such mode");
        let alone = index.embed_query("weather", false).unwrap();
        let exact = index.soft_matches(&alone, &[0, 1]);
        assert!(exact[0] > 0.99, "a word matches itself: {exact:?}");
        assert!(exact[1] < 0.8, "{exact:?}");
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
        let similarities = index.similarities(&query.vector);
        assert!(similarities[0] > similarities[1], "{similarities:?}");
        assert!(index.embed_query("", false).is_none());
    }
}
