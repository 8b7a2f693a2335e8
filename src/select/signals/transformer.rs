//! The meaning signal from the full all-MiniLM-L6-v2 model, run in Rust
//! (the `zenmode-bert` crate, `crates/bert`) instead of looked up in the
//! distilled table: closer to what the model means, at a cost of
//! milliseconds per text instead of microseconds.
//! Built with the `transformer` feature and switched on with
//! `--embedding-model DIR` (or `ZEN_EMBEDDING_MODEL`), a directory holding
//! the model's `config.json` and `model.safetensors`
//! (`scripts/embedding/fetch_model.sh DIR` fetches them). Without it the
//! static table serves alone; with it the model ranks every request once
//! its index of the catalog is ready (`Index::ranking`).
//!
//! A text's vector is the mean of the model's output over its tokens,
//! `[CLS]` and `[SEP]` included, normalized: what sentence-transformers
//! computes for this model. The vectors of tool descriptions and no-fit
//! probes (never of requests) are kept in a file in the cache directory
//! (`vector_cache.rs`), so a catalog's index is built from the model once
//! and later read back in milliseconds.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use sha2::{Digest, Sha256};

use super::vector_cache::{VectorStore, key};
use super::wordpiece::WordPiece;
use crate::platform::settings;
use zenmode_bert::{Arithmetic, Bert, Config};

/// A cache file larger than this (about 43,000 texts) is started over.
const MAX_CACHE_BYTES: u64 = 64 << 20;

/// Which encoder computed the cached vectors (part of the cache file's
/// name), by its arithmetic. The f32 one still names the file the encoder
/// lived in before it became the `zenmode-bert` crate: its arithmetic did
/// not change, so the vectors users have cached stay valid.
fn encoder_name(arithmetic: Arithmetic) -> &'static str {
    match arithmetic {
        Arithmetic::F32 => "bert.rs, f32 panels",
        Arithmetic::Tiles => "zenmode-bert, bf16 tiles",
    }
}

/// `[CLS]` and `[SEP]` in the model's vocabulary.
const CLS: u32 = 101;
const SEP: u32 = 102;
/// Tokens the model reads at most, `[CLS]` and `[SEP]` included (its
/// sentence-transformers configuration says 256).
const MAX_TOKENS: usize = 256;
/// The fewest tokens a budget may give a text ([`Transformer::embed_within`]).
pub const MIN_BUDGET: usize = 16;

/// The loaded model and the vectors it has computed so far.
pub struct Transformer {
    model: Bert,
    tokenizer: &'static WordPiece<'static>,
    dims: usize,
    vectors: VectorStore,
    /// The fine-tuned overlay the model runs with, by its digest's start.
    overlay: Option<[u8; 8]>,
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer")
            .field("dims", &self.dims)
            .finish()
    }
}

/// The model once opened; `None` inside if opening it failed.
static LOADED: OnceLock<Option<Transformer>> = OnceLock::new();

/// What [`load_later`] was given: opened by the first [`loaded`] call.
struct Pending {
    dir: PathBuf,
    cache_dir: Option<PathBuf>,
}

static PENDING: OnceLock<Pending> = OnceLock::new();

/// Loads the model in `dir` for every index built after this call, keeping
/// vectors in `cache_dir` if given. Once per process; a second call with
/// the model already loaded does nothing.
pub fn load(
    dir: &Path,
    cache_dir: Option<&Path>,
    tokenizer: &'static WordPiece<'static>,
) -> Result<(), String> {
    if LOADED.get().is_some() {
        return Ok(());
    }
    let transformer = open_cached(dir, cache_dir, tokenizer)?;
    let _ = LOADED.set(Some(transformer));
    Ok(())
}

/// Names the model in `dir` without opening it: the first [`loaded`] call
/// opens it. Copying 90 MB of weights takes longer than a server may take
/// to start, so the default model is opened by whoever first needs it (the
/// thread that builds the model's index, in a server). If it cannot be
/// opened then, the table serves alone and the reason is logged once.
/// The tokenizer is taken from the table then too: parsing the table's
/// 30,522 tokens took longer than the rest of a server's start-up.
pub fn load_later(dir: &Path, cache_dir: Option<&Path>) {
    let _ = PENDING.set(Pending {
        dir: dir.to_path_buf(),
        cache_dir: cache_dir.map(Path::to_path_buf),
    });
}

/// Whether a model was loaded or named for loading ([`load_later`]),
/// without opening it.
pub fn configured() -> bool {
    matches!(LOADED.get(), Some(Some(_))) || PENDING.get().is_some()
}

fn open_cached(
    dir: &Path,
    cache_dir: Option<&Path>,
    tokenizer: &'static WordPiece<'static>,
) -> Result<Transformer, String> {
    let mut transformer = Transformer::open(dir, tokenizer)?;
    // The file's 90 MB, read whole and copied into the encoder's layout.
    crate::platform::pages::return_freed_heap();
    if let Some(cache_dir) = cache_dir {
        transformer.use_cache(cache_dir, dir);
    }
    Ok(transformer)
}

/// The request adapter: a 384x384 matrix (row-major little-endian f32) that
/// `scripts/embedding/adapter.py` trains on the shipped example requests,
/// so that a request's vector lands nearer the description of the tool it
/// asks for (docs/decisions/0020-request-adapter.md).
static REQUEST_ADAPTER: &[u8] = include_bytes!("../../../data/embedding/request_adapter.f32");

/// The fine-tuned last two layers the model runs with unless
/// `ZEN_ENCODER_OVERLAY` says otherwise (`super::encoder_overlay`;
/// `scripts/embedding/finetune.py` writes it).
static SHIPPED_OVERLAY: &[u8] =
    include_bytes!("../../../data/embedding/encoder_overlay.safetensors");

/// `vector` through the request adapter, normalized; `None` when the
/// adapter does not fit the vector's size.
pub fn adapt_request(vector: &[f32]) -> Option<Vec<f32>> {
    static MATRIX: OnceLock<Vec<f32>> = OnceLock::new();
    let matrix = MATRIX.get_or_init(|| {
        let from_file = crate::platform::settings::get_os(crate::platform::settings::REQUEST_ADAPTER)
            .map(|path| {
                if path == "none" {
                    return Vec::new();
                }
                std::fs::read(&path).unwrap_or_else(|error| {
                    tracing::warn!(path = %std::path::Path::new(&path).display(), %error, "cannot read the request adapter; none is used");
                    Vec::new()
                })
            });
        from_file
            .as_deref()
            .unwrap_or(REQUEST_ADAPTER)
            .chunks_exact(4)
            .map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            .collect()
    });
    let dims = vector.len();
    if dims == 0 || matrix.len() != dims * dims {
        return None;
    }
    let mut adapted: Vec<f32> = matrix
        .chunks_exact(dims)
        .map(|row| row.iter().zip(vector).map(|(w, x)| w * x).sum())
        .collect();
    let norm = adapted.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= f32::EPSILON {
        return None;
    }
    adapted.iter_mut().for_each(|x| *x /= norm);
    Some(adapted)
}

/// The model, if [`load`] succeeded or the one named by [`load_later`]
/// opens (on this first call).
pub fn loaded() -> Option<&'static Transformer> {
    if let Some(done) = LOADED.get() {
        return done.as_ref();
    }
    // Nothing named yet: nothing is settled either, so that a [`load`]
    // after an index built without the model (a table-only catalog ranked
    // first) still loads it.
    PENDING.get()?;
    LOADED
        .get_or_init(|| {
            let pending = PENDING.get()?;
            let started = std::time::Instant::now();
            let opened = super::token_table::table()
                .ok_or_else(|| "the compiled-in token table is damaged".to_owned())
                .and_then(|table| {
                    open_cached(&pending.dir, pending.cache_dir.as_deref(), table.tokenizer())
                });
            match opened {
                Ok(transformer) => {
                    tracing::debug!(
                        dir = %pending.dir.display(),
                        seconds = started.elapsed().as_secs_f32(),
                        "embedding model opened"
                    );
                    Some(transformer)
                }
                Err(error) => {
                    tracing::warn!(%error, "the embedding model cannot be used; the distilled table ranks alone");
                    None
                }
            }
        })
        .as_ref()
}

/// What the model must be for this tokenizer and this code: the same
/// vocabulary (token ids index its embeddings), room for [`MAX_TOKENS`]
/// positions, and a shape the encoder can run without dividing by zero.
fn check_config(config: &Config, tokenizer: &WordPiece<'_>) -> Result<(), String> {
    if config.vocab_size != tokenizer.vocabulary_size() {
        return Err(format!(
            "the model has {} tokens, the tokenizer {}: not all-MiniLM-L6-v2's vocabulary",
            config.vocab_size,
            tokenizer.vocabulary_size()
        ));
    }
    if config.max_position_embeddings < MAX_TOKENS {
        return Err(format!(
            "the model reads at most {} tokens; {MAX_TOKENS} tokens are needed",
            config.max_position_embeddings
        ));
    }
    let heads = config.num_attention_heads;
    if heads == 0 || config.hidden_size == 0 || !config.hidden_size.is_multiple_of(heads) {
        return Err(format!(
            "hidden size {} does not split into {heads} attention heads",
            config.hidden_size
        ));
    }
    if config.num_hidden_layers == 0 || config.num_hidden_layers > 64 || config.type_vocab_size == 0
    {
        return Err("not a BERT encoder of a usable size".to_owned());
    }
    Ok(())
}

impl Transformer {
    pub fn open(dir: &Path, tokenizer: &'static WordPiece<'static>) -> Result<Self, String> {
        let config_path = dir.join("config.json");
        let config_text = std::fs::read_to_string(&config_path)
            .map_err(|error| format!("cannot read {}: {error}", config_path.display()))?;
        let config: Config = serde_json::from_str(&config_text).map_err(|error| {
            format!(
                "{} is not a BERT configuration: {error}",
                config_path.display()
            )
        })?;
        check_config(&config, tokenizer)
            .map_err(|problem| format!("{}: {problem}", config_path.display()))?;
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(format!("{} is missing", weights.display()));
        }
        // Read, not mapped: the encoder copies every weight into its own
        // layout, and a mapped file truncated under a running server would
        // kill it.
        let bytes = std::fs::read(&weights)
            .map_err(|error| format!("cannot read {}: {error}", weights.display()))?;
        // The tiles where the machine has them, unless `ZEN_BERT_NO_AMX`
        // says otherwise (`Bert::load` falls back to f32 without them).
        let arithmetic = match settings::get_os(settings::BERT_NO_AMX) {
            Some(value) if value != "0" => Arithmetic::F32,
            _ => Arithmetic::Tiles,
        };
        let overlay = super::encoder_overlay::for_model(&bytes, SHIPPED_OVERLAY);
        let model = Bert::load_with_overlay(
            &bytes,
            overlay.as_ref().map(|o| &*o.bytes),
            &config,
            arithmetic,
        )
        .map_err(|error| format!("{} does not hold this model: {error}", weights.display()))?;
        if let Some(std::borrow::Cow::Borrowed(shipped)) = overlay.as_ref().map(|o| &o.bytes) {
            crate::platform::pages::release_static(shipped);
        }
        Ok(Transformer {
            model,
            overlay: overlay.map(|o| o.id),
            tokenizer,
            dims: config.hidden_size,
            vectors: VectorStore::in_memory(config.hidden_size),
        })
    }

    /// Reads the vectors kept in `cache_dir` for these weights and appends
    /// new ones there. The file is named after the encoder and the
    /// weights' size and modification time, so other weights (or another
    /// encoder) never read these vectors. A
    /// file that cannot be read or written only costs time (logged).
    fn use_cache(&mut self, cache_dir: &Path, model_dir: &Path) {
        let weights = model_dir.join("model.safetensors");
        let stamp = std::fs::metadata(&weights).ok().map(|meta| {
            let modified = meta
                .modified()
                .ok()
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_nanos());
            let mut hasher = Sha256::new();
            // Vectors from another encoder differ in their last bits: kept
            // apart, so one catalog's index never mixes the two.
            hasher.update(encoder_name(self.model.arithmetic()).as_bytes());
            hasher.update(weights.to_string_lossy().as_bytes());
            hasher.update(meta.len().to_le_bytes());
            hasher.update(modified.to_le_bytes());
            if let Some(overlay) = &self.overlay {
                hasher.update(overlay);
            }
            hasher.finalize()
        });
        let Some(stamp) = stamp else { return };
        let name = hex::encode(&stamp[..8]);
        let file = cache_dir.join(format!("minilm-vectors-{name}.bin"));
        self.vectors = VectorStore::open(&file, self.dims, MAX_CACHE_BYTES);
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The unit vector of `text`; `None` for a text without tokens or if
    /// the model fails (logged), so selection goes on without meaning.
    /// With `keep`, a newly computed vector is kept, in memory and in the
    /// cache file (tool texts and probes, which come back; requests do
    /// not).
    pub fn embed(&self, text: &str, keep: bool) -> Option<Vec<f32>> {
        self.embed_within(text, keep, MAX_TOKENS)
    }

    /// [`Transformer::embed`] with `keep` for each of `texts`, in order,
    /// computed on as many threads as the machine has cores (at most
    /// four): a catalog's first index is hundreds of texts, and the tile
    /// encoder runs each on one core (a 1,155-tool catalog from an empty
    /// cache: 5.5 s on one core of this 2-core machine, 3 s on two;
    /// docs/benchmarks.md).
    pub fn embed_all(&self, texts: &[&str]) -> Vec<Option<Vec<f32>>> {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        if workers == 1 || texts.len() < 2 * workers {
            return texts.iter().map(|text| self.embed(text, true)).collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut found: Vec<(usize, Option<Vec<f32>>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut done = Vec::new();
                        loop {
                            let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(text) = texts.get(at) else { break };
                            done.push((at, self.embed(text, true)));
                        }
                        done
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|handle| handle.join().unwrap_or_default())
                .collect()
        });
        found.sort_unstable_by_key(|(at, _)| *at);
        let mut vectors = vec![None; texts.len()];
        for (at, vector) in found {
            vectors[at] = vector;
        }
        vectors
    }

    /// [`Transformer::embed`] reading at most `budget` tokens (`[CLS]` and
    /// `[SEP]` included; at least [`MIN_BUDGET`], at most [`MAX_TOKENS`]).
    /// The encoder's time grows with the tokens it reads (about 0.08 ms
    /// each on AMX tiles, 0.17 ms with f32 products on two cores), so a
    /// request of several sentences (120 tokens and more) costs several
    /// times a short one.
    /// Over the budget the middle of the text is left out ([`fit_budget`];
    /// docs/decisions/0014-request-token-budget.md). A vector computed
    /// from fewer tokens than the text has is never kept: the cache holds
    /// a text's whole vector.
    pub fn embed_within(&self, text: &str, keep: bool, budget: usize) -> Option<Vec<f32>> {
        let key = key(text);
        if let Some(found) = self.vectors.get(&key) {
            return found;
        }
        let (vector, whole) = self.compute(text, budget);
        // Requests are not kept, in memory either: a long-running server
        // would grow with every distinct request.
        if !keep || !whole {
            return vector;
        }
        self.vectors.keep(key, vector)
    }

    /// The vector of `text` within `budget` tokens, and whether it read
    /// every token of the text.
    fn compute(&self, text: &str, budget: usize) -> (Option<Vec<f32>>, bool) {
        let mut ids = vec![CLS];
        self.tokenizer.encode(text, &mut ids);
        if ids.len() == 1 {
            return (None, true);
        }
        let whole = fit_budget(&mut ids, budget.clamp(MIN_BUDGET, MAX_TOKENS) - 1);
        ids.push(SEP);
        let vector = self
            .model
            .mean_output(&ids)
            .and_then(|mut vector| super::token_table::normalize(&mut vector).then_some(vector));
        (vector, whole)
    }
}

/// Cuts `ids` (`[CLS]` first, no `[SEP]` yet) to at most `limit` tokens
/// by leaving out the middle: the first half and the last half stay.
/// Whether nothing was cut.
///
/// A long request tends to say what it wants at one end: an agent's task
/// opens with it ("Read settings.toml and ..."), a person's chat often
/// sets the scene first and asks last ("... could you open it?"). The
/// words of the middle still reach the lexical signal.
fn fit_budget(ids: &mut Vec<u32>, limit: usize) -> bool {
    if ids.len() <= limit {
        return true;
    }
    let head = limit / 2;
    let cut = ids.len() - limit;
    ids.drain(head..head + cut);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_adapter_moves_a_vector_and_keeps_it_a_unit_one() {
        let dims = 384;
        let mut vector: Vec<f32> = (0..dims).map(|i| ((i * 37 % 101) as f32) - 50.0).collect();
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        vector.iter_mut().for_each(|x| *x /= norm);
        let adapted = adapt_request(&vector).expect("the shipped adapter fits 384 dimensions");
        assert_eq!(adapted.len(), dims);
        let length = adapted.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((length - 1.0).abs() < 1e-4, "{length}");
        let cosine: f32 = adapted.iter().zip(&vector).map(|(a, b)| a * b).sum();
        // Trained near the identity: it moves a vector, not far.
        assert!(cosine > 0.5 && cosine < 0.9999, "{cosine}");
        assert!(
            adapt_request(&vector[..10]).is_none(),
            "a vector of another size"
        );
    }

    /// A configuration that does not fit is refused before any weights are
    /// read (the encoder would divide by zero heads, or index past the
    /// embeddings).
    #[test]
    fn configurations_that_do_not_fit_are_refused() {
        let table = crate::select::signals::token_table::table().unwrap();
        let good = serde_json::json!({
            "vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
            "num_attention_heads": 12, "intermediate_size": 1536, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0
        });
        let dir = tempfile::tempdir().unwrap();
        let open = |config: &serde_json::Value| {
            std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
            Transformer::open(dir.path(), table.tokenizer()).unwrap_err()
        };
        // Without weights, a fitting configuration gets as far as them.
        assert!(open(&good).contains("model.safetensors is missing"));
        for (field, value, problem) in [
            ("num_attention_heads", 0, "attention heads"),
            ("hidden_size", 100, "attention heads"),
            ("vocab_size", 50000, "vocabulary"),
            ("max_position_embeddings", 128, "tokens are needed"),
            ("num_hidden_layers", 0, "usable size"),
        ] {
            let mut config = good.clone();
            config[field] = value.into();
            let error = open(&config);
            assert!(error.contains(problem), "{field}: {error}");
        }
        std::fs::write(dir.path().join("config.json"), "{ not json").unwrap();
        let error = Transformer::open(dir.path(), table.tokenizer()).unwrap_err();
        assert!(error.contains("not a BERT configuration"), "{error}");
    }

    /// Asking for the model before any was named settles nothing: the
    /// select bench ranked table-only catalogs first, which left the model
    /// it loaded next unused (every "with the model" figure was the table's).
    #[test]
    fn asking_before_a_model_is_named_does_not_rule_one_out() {
        assert!(PENDING.get().is_none(), "unit tests name no model");
        assert!(loaded().is_none());
        assert!(
            LOADED.get().is_none(),
            "a later load must still take effect"
        );
    }

    #[test]
    fn a_budget_leaves_out_the_middle_of_a_long_text() {
        let mut short: Vec<u32> = (0..10).collect();
        assert!(fit_budget(&mut short, 10));
        assert_eq!(short, (0..10).collect::<Vec<_>>());
        let mut long: Vec<u32> = (0..100).collect();
        assert!(!fit_budget(&mut long, 10));
        // [CLS] (0) and the opening stay, and so does the end.
        assert_eq!(long, [0, 1, 2, 3, 4, 95, 96, 97, 98, 99]);
        let mut odd: Vec<u32> = (0..20).collect();
        assert!(!fit_budget(&mut odd, 7));
        assert_eq!(odd, [0, 1, 2, 16, 17, 18, 19]);
    }
}
