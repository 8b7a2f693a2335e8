//! The meaning signal: cosine similarity between a request and each mode's
//! text in embedding space, for catalogs where some mode has no example
//! phrasings.
//!
//! Texts are encoded by the distilled token table ([`super::token_table`]:
//! microseconds per text) or, with a model loaded (`--embedding-model`, or
//! the default install's), by the full model ([`super::transformer`]:
//! milliseconds per text, closer to what the model means). With the table, a mode's distinct content tokens are kept
//! too, for a word-by-word match ([`EmbeddingIndex::soft_matches`]) that
//! sees what a long request's sentence vector drowns.

use super::int8::{quantize_into, row_dots};
use super::token_table::{TokenTable, normalize, table};

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
/// (`scripts/install.sh`): its directory's name under `platform::dirs::model_root`.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The default model's directory, if an install put its weights where
/// zenmode looks: beside the binary first (a Python package's, which
/// matches that binary), then the data directory.
pub fn default_model_dir() -> Option<std::path::PathBuf> {
    default_model_dirs()
        .into_iter()
        .find(|dir| dir.join("config.json").is_file() && dir.join("model.safetensors").is_file())
}

/// Where zenmode looks for the default model, in order.
pub fn default_model_dirs() -> Vec<std::path::PathBuf> {
    [
        crate::platform::dirs::model_root_beside_binary(),
        crate::platform::dirs::model_root(),
    ]
    .into_iter()
    .flatten()
    .map(|root| root.join(DEFAULT_MODEL_NAME))
    .collect()
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

/// The most example neighbours [`EmbeddingIndex::example_similarities`]
/// averages.
pub const MAX_NEAREST: usize = 8;

/// How many example requests are encoded at once when an index is built:
/// enough for every core to take a share, few enough that their f32
/// vectors (1.5 KB each with the model) weigh little beside the rows kept.
const EXAMPLES_PER_CHUNK: usize = 512;

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
    /// Example requests of other servers' tools, each its own vector:
    /// quantized to int8 per row (a fourth of the memory of f32, and an
    /// integer dot product; cosines within about 0.01), the row's scale,
    /// and the mode it belongs to.
    example_rows: Vec<i8>,
    example_scales: Vec<f32>,
    example_owners: Vec<u32>,
    /// The rows grouped by mode (they are stored mode by mode): group `g`
    /// is rows `group_starts[g]..group_starts[g + 1]`, and its centroid
    /// (the mean of its rows, quantized as they are) is row `g` of
    /// `group_centroids`, which a request scores first to pick the groups
    /// worth scanning ([`Self::example_similarities`]).
    group_starts: Vec<u32>,
    group_centroids: Vec<i8>,
    group_scales: Vec<f32>,
}

/// A request as the meaning signal sees it.
#[derive(Debug, Clone, Default)]
pub struct QueryMeaning {
    /// Unit sentence vector.
    pub vector: Vec<f32>,
    /// With the full model: the vector through the request adapter, which
    /// descriptions are compared with (examples are compared with `vector`).
    pub adapted: Option<Vec<f32>>,
    /// With the table: each token's unit row (`tokens × dims`) and its
    /// weight (the row's length, which refinement made small for filler).
    token_rows: Vec<f32>,
    token_weights: Vec<f32>,
}

impl EmbeddingIndex {
    /// `texts` yields each mode's text, in catalog order.
    pub fn build<'t>(encoder: Encoder, texts: impl Iterator<Item = &'t str>) -> Self {
        Self::build_with_examples(encoder, texts, &[])
    }

    /// [`EmbeddingIndex::build`], with example requests: `(mode, text)`
    /// pairs, each encoded as a vector of its own.
    pub fn build_with_examples<'t>(
        encoder: Encoder,
        texts: impl Iterator<Item = &'t str>,
        examples: &[(usize, &str)],
    ) -> Self {
        let dims = encoder.dims();
        let mut vectors = Vec::new();
        let mut tokens = Vec::new();
        let mut starts = vec![0];
        let mut add = |vector: Option<Vec<f32>>| match vector {
            Some(vector) => vectors.extend(vector),
            None => vectors.resize(vectors.len() + dims, 0.0),
        };
        match encoder {
            Encoder::Table(table) => {
                let mut ids = Vec::new();
                for text in texts {
                    add(table.embed_text(text, &mut ids));
                    ids.retain(|&id| table.is_content(id));
                    ids.sort_unstable();
                    ids.dedup();
                    tokens.extend_from_slice(&ids);
                    starts.push(tokens.len());
                }
            }
            #[cfg(feature = "transformer")]
            Encoder::Model(model) => {
                let texts: Vec<&str> = texts.collect();
                model.embed_all(&texts).into_iter().for_each(add);
            }
        }
        let mut index = EmbeddingIndex {
            encoder,
            vectors,
            tokens,
            starts,
            example_rows: Vec::new(),
            example_scales: Vec::new(),
            example_owners: Vec::new(),
            group_starts: Vec::new(),
            group_centroids: Vec::new(),
            group_scales: Vec::new(),
        };
        index.add_examples(examples);
        index
    }

    fn add_examples(&mut self, examples: &[(usize, &str)]) {
        if examples.is_empty() {
            return;
        }
        let dims = self.encoder.dims();
        self.example_rows.reserve(examples.len() * dims);
        // Stored mode by mode, for the groups; a catalog lists them so.
        let by_mode: std::borrow::Cow<[(usize, &str)]> =
            if examples.is_sorted_by_key(|&(mode, _)| mode) {
                examples.into()
            } else {
                let mut sorted = examples.to_vec();
                sorted.sort_by_key(|&(mode, _)| mode);
                sorted.into()
            };
        // A chunk at a time: the union's 15,000 examples as f32 vectors
        // are 23 MB, which a server held beside their compact rows at its
        // peak.
        for chunk in by_mode.chunks(EXAMPLES_PER_CHUNK) {
            self.add_example_chunk(chunk);
        }
        self.group_rows();
    }

    /// Fills the groups and their centroids from the rows, which are in
    /// mode order.
    fn group_rows(&mut self) {
        let dims = self.encoder.dims();
        let mut sum = vec![0.0f32; dims];
        let mut start = 0usize;
        while start < self.example_owners.len() {
            let owner = self.example_owners[start];
            let end = start
                + self.example_owners[start..]
                    .iter()
                    .take_while(|&&o| o == owner)
                    .count();
            sum.iter_mut().for_each(|x| *x = 0.0);
            for row in start..end {
                let scale = self.example_scales[row];
                for (total, &value) in sum
                    .iter_mut()
                    .zip(&self.example_rows[row * dims..(row + 1) * dims])
                {
                    *total += f32::from(value) * scale;
                }
            }
            let scale = quantize_into(&sum, &mut self.group_centroids);
            self.group_scales.push(scale);
            self.group_starts.push(start as u32);
            start = end;
        }
        self.group_starts.push(self.example_owners.len() as u32);
    }

    fn add_example_chunk(&mut self, examples: &[(usize, &str)]) {
        // Read as a request is (`words::spelled_out`).
        let spelled: Vec<std::borrow::Cow<str>> = examples
            .iter()
            .map(|&(_, text)| crate::select::text::words::spelled_out(text))
            .collect();
        let texts: Vec<&str> = spelled.iter().map(AsRef::as_ref).collect();
        let vectors: Vec<Option<Vec<f32>>> = match self.encoder {
            Encoder::Table(table) => texts
                .iter()
                .map(|text| table.embed_text(text, &mut Vec::new()))
                .collect(),
            #[cfg(feature = "transformer")]
            Encoder::Model(model) => model.embed_all(&texts),
        };
        let dims = self.encoder.dims();
        for (&(mode, _), vector) in examples.iter().zip(vectors) {
            let Some(vector) = vector.filter(|v| v.len() == dims) else {
                continue;
            };
            if vector.iter().all(|&x| x == 0.0 || !x.is_finite()) {
                continue;
            }
            let scale = quantize_into(&vector, &mut self.example_rows);
            self.example_scales.push(scale);
            self.example_owners.push(mode as u32);
        }
    }

    /// How many example vectors the index holds.
    pub fn example_count(&self) -> usize {
        self.example_owners.len()
    }

    /// For each of `modes` modes, the mean cosine of the query with its
    /// `nearest` closest example requests (all of them if it has fewer) and
    /// the cosine of the closest; `None` for a mode without examples, and,
    /// when `shortlist` is not 0, for every mode but the `shortlist` whose
    /// examples' centroid is closest to the query.
    /// Several neighbours rather than one: a single example can resemble a
    /// request by its values (the same repository, a similar path) while
    /// asking for something else.
    pub fn example_similarities(
        &self,
        query: &[f32],
        modes: usize,
        nearest: usize,
        shortlist: usize,
    ) -> Vec<Option<(f32, f32)>> {
        let nearest = nearest.clamp(1, MAX_NEAREST);
        let mut best: Vec<[f32; MAX_NEAREST]> = Vec::new();
        let mut counts: Vec<u8> = Vec::new();
        if self.example_owners.is_empty() {
            return vec![None; modes];
        }
        best.resize(modes, [f32::NEG_INFINITY; MAX_NEAREST]);
        counts.resize(modes, 0);
        let dims = self.encoder.dims();
        let largest = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if largest <= 0.0 || query.len() != dims {
            return vec![None; modes];
        }
        let query_scale = largest / f32::from(i16::MAX);
        let quantized: Vec<i16> = query
            .iter()
            .map(|x| (x / query_scale).round() as i16)
            .collect();
        let mut dots = Vec::new();
        let mut scan = |rows: std::ops::Range<usize>| {
            dots.clear();
            row_dots(
                &self.example_rows[rows.start * dims..rows.end * dims],
                &quantized,
                &mut dots,
            );
            for (row, &dot) in rows.zip(&dots) {
                let cos = dot as f32 * self.example_scales[row] * query_scale;
                let owner = self.example_owners[row] as usize;
                let (Some(top), Some(count)) = (best.get_mut(owner), counts.get_mut(owner)) else {
                    continue;
                };
                *count = count.saturating_add(1);
                // Keep the `nearest` largest, in descending order.
                let top = &mut top[..nearest];
                if cos > top[nearest - 1] {
                    let at = top.iter().position(|&t| cos > t).unwrap_or(nearest - 1);
                    top.copy_within(at..nearest - 1, at + 1);
                    top[at] = cos;
                }
            }
        };
        let groups = self.group_scales.len();
        if shortlist == 0 || shortlist >= groups {
            scan(0..self.example_owners.len());
        } else {
            // Only the groups whose centroids are closest: the rows are
            // megabytes, read from memory on every request (the encoder's
            // weights have pushed them out of the caches), and most modes'
            // closest example is far below the few that compete.
            let mut centroid_dots = Vec::with_capacity(groups);
            row_dots(&self.group_centroids, &quantized, &mut centroid_dots);
            let mut order: Vec<usize> = (0..groups).collect();
            let score = |g: usize| centroid_dots[g] as f32 * self.group_scales[g];
            order.select_nth_unstable_by(shortlist - 1, |&a, &b| score(b).total_cmp(&score(a)));
            for &group in &order[..shortlist] {
                let (from, to) = (self.group_starts[group], self.group_starts[group + 1]);
                scan(from as usize..to as usize);
            }
        }
        best.iter()
            .zip(&counts)
            .map(|(top, &count)| {
                let kept = usize::from(count).min(nearest);
                (kept > 0).then(|| (top[..kept].iter().sum::<f32>() / kept as f32, top[0]))
            })
            .collect()
    }

    /// The query's vector, or `None` when it has no known token.
    /// `probe`: a fixed calibration text, worth keeping on disk.
    /// `budget`: the most tokens the full model reads of it
    /// ([`Tuning::request_tokens`](crate::select::Tuning::request_tokens)).
    pub fn embed_query(
        &self,
        query: &str,
        probe: bool,
        budget: usize,
        adapt: bool,
    ) -> Option<QueryMeaning> {
        let _ = (probe, budget, adapt);
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
                    adapted: None,
                    token_rows,
                    token_weights,
                })
            }
            #[cfg(feature = "transformer")]
            Encoder::Model(model) => {
                model
                    .embed_within(query, probe, budget)
                    .map(|vector| QueryMeaning {
                        adapted: adapt
                            .then(|| super::transformer::adapt_request(&vector))
                            .flatten(),
                        vector,
                        ..QueryMeaning::default()
                    })
            }
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
            .map(|row| dot(row, query))
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

/// Dot product in sixteen running sums, which the compiler keeps in
/// vector registers: a plain `sum()` adds one product after the other, each
/// waiting for the last, and scoring the union's 1,155 model vectors that
/// way took most of a millisecond per request.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 16];
    let (a_blocks, b_blocks) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: f32 = a_blocks
        .remainder()
        .iter()
        .zip(b_blocks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_blocks.zip(b_blocks) {
        for lane in 0..16 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
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
            .embed_query("my friends and I planned a picnic in the park on Saturday, so will the weather hold up", false, 256, false)
            .unwrap();
        let soft = index.soft_matches(&query, &[0, 1, 2, 99]);
        assert_eq!(soft.len(), 4);
        assert!(soft.iter().all(|s| (0.0..=1.0).contains(s)), "{soft:?}");
        assert_eq!((soft[2], soft[3]), (0.0, 0.0), "no text, no such mode");
        let alone = index.embed_query("weather", false, 256, false).unwrap();
        let exact = index.soft_matches(&alone, &[0, 1]);
        assert!(exact[0] > 0.99, "a word matches itself: {exact:?}");
        assert!(exact[1] < 0.8, "{exact:?}");
    }

    #[test]
    fn the_dot_product_in_lanes_is_the_plain_sum() {
        for len in [0, 7, 16, 256, 384, 390] {
            let a: Vec<f32> = (0..len)
                .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.4)
                .collect();
            let b: Vec<f32> = (0..len)
                .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.6)
                .collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "{len}");
        }
    }

    #[test]
    fn an_example_vector_scores_its_mode_near_its_cosine() {
        let table = table().unwrap();
        let index = EmbeddingIndex::build_with_examples(
            Encoder::Table(table),
            [
                "git status: show the working tree status",
                "weather: forecast",
            ]
            .into_iter(),
            &[
                (0, "what did I change since the last commit"),
                (0, "anything staged?"),
            ],
        );
        assert_eq!(index.example_count(), 2);
        let query = index
            .embed_query(
                "what have I changed since my last commit",
                false,
                256,
                false,
            )
            .unwrap();
        let best = index.example_similarities(&query.vector, 2, 1, 0);
        let exact = table
            .embed_text("what did I change since the last commit", &mut Vec::new())
            .unwrap();
        let cos = dot(&exact, &query.vector);
        let found = best[0].expect("mode 0 has examples").1;
        assert!((found - cos).abs() < 0.02, "{found} against {cos}");
        assert_eq!(best[1], None, "mode 1 has none");
    }

    #[test]
    fn a_shortlist_scans_the_closest_modes_exactly_and_skips_the_others() {
        let table = table().unwrap();
        // Examples given out of mode order: the index groups them.
        let examples = [
            (2, "book a table for two tonight"),
            (0, "what did I change since the last commit"),
            (1, "will it rain in Paris tomorrow"),
            (0, "show the diff of my working tree"),
            (2, "reserve dinner at an italian place"),
            (1, "weather forecast for the weekend"),
        ];
        let index = EmbeddingIndex::build_with_examples(
            Encoder::Table(table),
            ["git: changes", "weather: forecast", "restaurants: bookings"].into_iter(),
            &examples,
        );
        let query = index
            .embed_query("is it going to rain in Berlin tomorrow", false, 256, false)
            .unwrap();
        let full = index.example_similarities(&query.vector, 3, 2, 0);
        let short = index.example_similarities(&query.vector, 3, 2, 1);
        assert!(full.iter().all(Option::is_some), "{full:?}");
        assert_eq!(short[1], full[1], "the weather mode is the closest");
        assert_eq!((short[0], short[2]), (None, None), "{short:?}");
        // A shortlist as long as the modes is the full scan.
        assert_eq!(index.example_similarities(&query.vector, 3, 2, 3), full);
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
            .embed_query("I need a plane ticket to Paris", false, 256, false)
            .unwrap();
        let similarities = index.similarities(&query.vector);
        assert!(similarities[0] > similarities[1], "{similarities:?}");
        assert!(index.embed_query("", false, 256, false).is_none());
    }
}
