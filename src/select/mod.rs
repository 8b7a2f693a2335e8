//! Ranking modes against a free-text task description.
//!
//! A mode's score adds up to four signals, each in 0..1:
//!
//! 1. **Lexical**: field-weighted BM25 ([`bm25`]) over the mode's name, title,
//!    summary, keywords, description and parameter names, divided by the
//!    query's largest possible score, so it reads as "how much of what the
//!    query says, weighted by rarity, this mode covers".
//! 2. **Examples**: cosine similarity to the mode's closest example task
//!    phrasings ([`examples`]): how people ask for the mode, not only what
//!    it does.
//! 3. **Phrasing**: the posterior of a naive Bayes model trained on all of a
//!    mode's phrasings at once ([`phrasing`]): words that recur across its
//!    examples and keywords count, a subject one example mentions does not.
//!
//! 4. **Meaning**: cosine similarity of static sentence embeddings
//!    ([`embedding`]), for catalogs where some mode has no examples.
//!
//! The first three run over the same analyzed terms ([`analyze`]): whole words (never
//! substrings), case-folded, English-stemmed, with phrase bigrams, glued
//! compounds and a small domain synonym table ([`synonyms`]).
//!
//! Ties break by catalog order (mode name), and every sum runs in a fixed
//! order, so the same query always gets the same ranking. The confidence of
//! each mode is a softmax over the top candidates plus a "none of these"
//! candidate with a fixed score ([`Tuning::no_fit_score`]), after scaling
//! the scores by how much evidence the query holds ([`Index::ranking`]), so
//! a weak or vague best match gets a low confidence even when nothing beats
//! it. docs/selection.md has the whole story and the measured figures.
//!
//! [`Ranker::Bm25`] is a plain BM25 baseline (one field, no stemming, no
//! synonyms, no phrases, no examples) that the evaluation reports beside the
//! full ranker.
//!
//! The index is built once per process, on the first query (the engine keeps
//! it in a `OnceLock`). With the full model loaded, a server builds the
//! model's part on a thread ([`Index::build_model_later`]).

pub mod eval;
mod nofit;
pub mod signals;
pub mod text;

pub use signals::embedding;
#[cfg(feature = "transformer")]
pub use signals::transformer;

use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap as HashMap;

use signals::{
    action::{self, Actions},
    bm25::{self, Bm25F, Document, Field, FieldParams, FieldTable},
    embedding::{EmbeddingIndex, QueryMeaning},
    examples::ExampleIndex,
    phrasing::{PhrasingCounts, PhrasingModel},
    token_table,
    values::Values,
};
use text::{
    analyze::{Analyzer, Options, Term, TermKind, Vocabulary, query_terms},
    words,
};

use crate::catalog::{Catalog, Manifest};

/// The ranker's constants. [`Tuning::DEFAULT`] is what the select tool
/// uses; the struct exists so evaluations can measure alternatives.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Which text normalizations run (the baseline turns them all off).
    pub analysis: Options,
    /// Field weights and length normalization, by [`Field`] order.
    pub fields: FieldTable,
    /// Weight of the lexical signal in a mode's score.
    pub lexical_weight: f32,
    /// Weight of the example-similarity signal in a mode's score.
    pub example_weight: f32,
    /// Weight of the phrasing-model posterior in the score of a mode with
    /// example phrasings. Without examples the model only knows a name and a
    /// description, which the lexical signal already weighs better: on the
    /// foreign development sets it cost top-1, so it is left out there.
    pub phrasing_weight: f32,
    /// Weight of the meaning signal (static embeddings) in a mode's score;
    /// it runs only for catalogs with a mode that has no example phrasings.
    pub semantic_weight: f32,
    /// Cosine similarity that counts as no shared meaning at all: the
    /// meaning signal is `(cos - floor) / (1 - floor)`, clamped at 0.
    pub semantic_floor: f32,
    /// With the table: weight of the word-by-word match
    /// ([`EmbeddingIndex::soft_matches`]) beside the sentence cosine; the
    /// meaning signal's cosine becomes `(cos + w * soft) / (1 + w)`.
    pub soft_match_weight: f32,
    /// With the table: how many modes (the best by sentence cosine) get the
    /// word-by-word match; the rest keep their cosine. It costs a few
    /// microseconds per mode, and a mode the sentence vector ranks far down
    /// did not reach the top with it on the dev halves.
    pub soft_match_candidates: usize,
    /// In the phrasing model: weight of a name, title, summary or keyword
    /// phrase relative to one example task.
    pub intent_text_weight: f32,
    /// In the phrasing model: weight of the description (0 leaves it out).
    pub description_phrasing_weight: f32,
    /// In the phrasing model: additive smoothing pseudo-count.
    pub phrasing_smoothing: f32,
    /// In the phrasing model: temperature of the posterior.
    pub phrasing_temperature: f32,
    /// How much a mode's second-best example adds to its best.
    pub second_best_share: f32,
    /// Weight of a topic word (in one example only, in no mode's intent
    /// fields) in the example vectors.
    pub topic_weight: f32,
    /// Softmax temperature over scores: lower is more decisive.
    pub temperature: f32,
    /// The score of the implicit "no mode fits" candidate (catalogs ranked
    /// without the meaning signal).
    pub no_fit_score: f32,
    /// With the meaning signal: which quantile of the probes' best scores
    /// a request must beat (src/select/nofit.rs).
    pub no_fit_quantile: f32,
    /// With the meaning signal: how far above that quantile.
    pub no_fit_margin: f32,
    /// How much query evidence (summed IDF of the query's known terms) makes
    /// a ranking count fully; see [`Index::ranking`].
    pub evidence_scale: f32,
    /// With the full model loaded: the table's ranking answers when its best
    /// mode's confidence reaches this; below it, the model ranks the
    /// request ([`Index::ranking`]). 0 never asks the model, above 1 always.
    /// The default asks it always once its index is ready: on the
    /// real-server tune half with the built-in modes on, asking below 0.3
    /// (42% of the requests) gave 0.576 top-1 and asking always 0.638;
    /// the request is encoded once per select either way.
    pub ask_model_below: f32,
    /// For a tool without example phrasings: its score is multiplied by
    /// `1 + verb_match` for each of its actions the request asks for
    /// ([`action::Actions`], at most two counted), ...
    pub verb_match: f32,
    /// ... plus this much (times the query's evidence strength) for each,
    /// so that a tool whose words the request does not share but whose
    /// action it asks for is still a candidate, ...
    pub verb_bonus: f32,
    /// ... and by `1 - verb_mismatch` when the request asks for actions
    /// and none is the tool's.
    pub verb_mismatch: f32,
    /// For a tool without example phrasings: its score is multiplied by
    /// `1 + value_match` when it takes a kind of value the request carries
    /// (a URL, a path, a time zone ...: [`Values`]), ...
    pub value_match: f32,
    /// ... and by `1 - value_mismatch` when the request carries values and
    /// the tool takes none of their kinds. Off: on the real-server tune
    /// half it changed nothing with the model, and on BFCL's live catalog,
    /// whose parameters are often generic (`query`, `params`), it cost
    /// top-1.
    pub value_mismatch: f32,
    /// [`Tuning::value_match`] for a mode with example phrasings (zenmode's
    /// own): a review request naming `auth.py` stays with the mode that
    /// takes files, but the examples already carry most of the evidence.
    /// 0.5: the built-in dev set beside the live catalog kept 0.943 top-1
    /// (0.937 at 0, under its floor of 0.94), and the real-server tune half
    /// lost less on the table path than at 1 or 2 (docs/selection.md).
    pub value_match_examples: f32,
    /// A destructive tool's score is multiplied by this when the request
    /// does not ask for what it does ([`Actions::licenses`]); whatever its
    /// score, it never ranks above every harmless candidate then.
    pub unasked_destructive: f32,
    /// In a catalog that mixes modes with example phrasings (zenmode's
    /// own) and tools without (a gateway's servers): the weight of the
    /// example and phrasing signals of the former. Both are relative (a
    /// posterior shares out all its mass, whatever the request), so at
    /// full weight they gave the built-in modes a head start that a
    /// server's tool, with only its name and description, could not make
    /// up.
    pub mixed_examples_weight: f32,
    /// With the full model only: the weight of the model's cosine for a
    /// mode with example phrasings (zenmode's own), read against its name
    /// and description as for any tool. Without it a built-in mode and a
    /// server tool are ranked by different signals, and a request that
    /// shares a few words with a built-in's examples took it from a tool
    /// whose meaning fits better. 0 leaves the built-ins to their examples.
    pub builtin_meaning: f32,
    /// With the full model only: the text the model reads for a tool also
    /// lists its parameter names as words ("parameters: repo path,
    /// max count"), which say what the tool works on.
    pub meaning_parameters: bool,
}

impl Tuning {
    /// The settings for the full model (`--embedding-model`). Its cosines
    /// are sharper than the table's: unrelated texts sit near 0 instead of
    /// about 0.2, and the right tool stands further above the rest. So the
    /// meaning signal weighs more (3 against the table's 1.5: on the
    /// real-server tune half with the built-ins on, 2 gave 0.638 top-1 and
    /// 3 0.650, 4 and 6 less), has no
    /// floor, and a request must beat a higher quantile of the no-fit probes
    /// (chosen on the dev halves; docs/selection.md has the grid). The
    /// word-by-word match does not run: the model weighs words in context.
    pub const fn for_full_model(self) -> Tuning {
        Tuning {
            semantic_weight: self.semantic_weight * 2.0,
            semantic_floor: 0.0,
            no_fit_quantile: 0.8,
            ..self
        }
    }

    pub const DEFAULT: Tuning = Tuning {
        analysis: Options::FULL,
        // Names and keywords are written to be matched; descriptions are long
        // and wordy; parameter names are shared by many modes (step, model...).
        fields: [
            field(3.0, 0.3),  // name
            field(2.0, 0.5),  // title
            field(2.0, 0.5),  // summary
            field(3.0, 0.5),  // keywords
            field(1.0, 0.75), // description
            field(2.0, 0.75), // parameters
        ],
        lexical_weight: 1.0,
        example_weight: 1.0,
        phrasing_weight: 1.0,
        semantic_weight: 1.5,
        semantic_floor: 0.2,
        soft_match_weight: 0.5,
        soft_match_candidates: 16,
        intent_text_weight: 3.0,
        description_phrasing_weight: 0.5,
        phrasing_smoothing: 0.2,
        phrasing_temperature: 3.0,
        second_best_share: 0.3,
        topic_weight: 0.5,
        temperature: 0.2,
        no_fit_score: 0.4,
        no_fit_quantile: 0.67,
        no_fit_margin: 1.0,
        evidence_scale: 8.0,
        ask_model_below: 2.0,
        verb_match: 0.3,
        verb_bonus: 0.1,
        verb_mismatch: 0.15,
        value_match: 2.0,
        value_mismatch: 0.0,
        value_match_examples: 0.5,
        mixed_examples_weight: 0.75,
        unasked_destructive: 0.5,
        builtin_meaning: 0.0,
        meaning_parameters: false,
    };

    /// These constants with the overrides of `spec` (`name=value` pairs,
    /// separated by commas), for measuring alternatives without a rebuild
    /// (`ZEN_SELECT_TUNING`, `ZEN_SELECT_MODEL_TUNING`). An unknown name or
    /// a value that is not a number is an error naming it.
    pub fn with_overrides(self, spec: &str) -> Result<Tuning, String> {
        let mut tuning = self;
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("tuning override `{pair}` is not name=value"))?;
            let value: f32 = value
                .trim()
                .parse()
                .map_err(|_| format!("tuning override `{pair}`: `{value}` is not a number"))?;
            let slot = match name.trim() {
                "lexical_weight" => &mut tuning.lexical_weight,
                "example_weight" => &mut tuning.example_weight,
                "phrasing_weight" => &mut tuning.phrasing_weight,
                "semantic_weight" => &mut tuning.semantic_weight,
                "semantic_floor" => &mut tuning.semantic_floor,
                "temperature" => &mut tuning.temperature,
                "no_fit_quantile" => &mut tuning.no_fit_quantile,
                "no_fit_margin" => &mut tuning.no_fit_margin,
                "evidence_scale" => &mut tuning.evidence_scale,
                "ask_model_below" => &mut tuning.ask_model_below,
                "verb_match" => &mut tuning.verb_match,
                "verb_bonus" => &mut tuning.verb_bonus,
                "verb_mismatch" => &mut tuning.verb_mismatch,
                "value_match" => &mut tuning.value_match,
                "value_mismatch" => &mut tuning.value_mismatch,
                "value_match_examples" => &mut tuning.value_match_examples,
                "unasked_destructive" => &mut tuning.unasked_destructive,
                "mixed_examples_weight" => &mut tuning.mixed_examples_weight,
                "builtin_meaning" => &mut tuning.builtin_meaning,
                "meaning_parameters" => {
                    tuning.meaning_parameters = value > 0.0;
                    continue;
                }
                other => return Err(format!("tuning override: unknown constant `{other}`")),
            };
            *slot = value;
        }
        Ok(tuning)
    }

    /// [`Tuning::with_overrides`] from the environment variable `name`;
    /// a bad override is reported on stderr and ignored.
    fn overridden_by_env(self, name: &str) -> Tuning {
        let Ok(spec) = std::env::var(name) else {
            return self;
        };
        match self.with_overrides(&spec) {
            Ok(tuning) => tuning,
            Err(error) => {
                tracing::warn!(%error, variable = name, "ignoring the tuning override");
                self
            }
        }
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

/// Plain BM25: every field in one bag of words (the description slot).
const PLAIN_FIELDS: FieldTable = [
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(1.0, 0.75),
    field(0.0, 0.75),
];

const fn field(weight: f32, b: f32) -> FieldParams {
    FieldParams { weight, b }
}

/// How many of the best modes share the confidence (with the no-fit
/// candidate); the long tail of a big catalog would otherwise dilute it.
const CONFIDENCE_CANDIDATES: usize = 10;
/// Below this confidence the best mode is flagged as a weak match.
pub const LOW_CONFIDENCE: f32 = 0.4;
/// Texts up to this long are analyzed once per index build, however often
/// they occur.
const MEMO_MAX_BYTES: usize = 64;
/// Modes that get their matched words listed (the select tool shows at most 10).
const EXPLAINED: usize = 10;

/// Which ranking to run: the fused ranker, one of its signals alone (to
/// measure what each adds), or the plain BM25 baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Ranker {
    /// Every signal fused: lexical, examples, phrasing model and meaning.
    #[default]
    Full,
    /// Field-weighted BM25 with stemming, synonyms and phrases, alone.
    Lexical,
    /// Similarity to the closest example phrasings, alone.
    Examples,
    /// The naive Bayes phrasing model, alone.
    Phrasing,
    /// The static-embedding meaning signal, alone.
    Embed,
    /// Plain BM25 over all text as one field: the baseline.
    Bm25,
}

impl Ranker {
    pub fn as_str(self) -> &'static str {
        match self {
            Ranker::Full => "full",
            Ranker::Lexical => "lexical",
            Ranker::Examples => "examples",
            Ranker::Phrasing => "phrasing",
            Ranker::Embed => "embed",
            Ranker::Bm25 => "bm25",
        }
    }

    /// The default constants with every other signal's weight at 0.
    fn tuning(self, tuning: Tuning) -> Tuning {
        let only = |lexical: f32, examples: f32, phrasing: f32, semantic: f32| Tuning {
            lexical_weight: tuning.lexical_weight * lexical,
            example_weight: tuning.example_weight * examples,
            phrasing_weight: tuning.phrasing_weight * phrasing,
            semantic_weight: tuning.semantic_weight * semantic,
            ..tuning
        };
        match self {
            Ranker::Full => tuning,
            Ranker::Lexical | Ranker::Bm25 => only(1.0, 0.0, 0.0, 0.0),
            Ranker::Examples => only(0.0, 1.0, 0.0, 0.0),
            Ranker::Phrasing => only(0.0, 0.0, 1.0, 0.0),
            Ranker::Embed => only(0.0, 0.0, 0.0, 1.0),
        }
    }
}

/// One scored mode, as the select tool reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into the catalog's mode list.
    pub mode_index: usize,
    /// Lexical plus example score (about 0..2).
    pub score: f32,
    /// Probability-like confidence in 0..1 that this is the mode wanted.
    pub confidence: f32,
    /// Query words that matched this mode's text, strongest first (filled
    /// for the first few modes only).
    pub matched: Vec<String>,
}

/// A ranking and how likely it is that no mode fits at all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranking {
    /// Modes with a positive score, best first.
    pub ranked: Vec<Ranked>,
    /// The "none of these" share of the confidence; with the modes'
    /// confidences it sums to 1.
    pub no_fit: f32,
    /// The full model ranked this request (the table's ranking was unsure).
    pub by_model: bool,
    /// Tools the safety rules put below the first harmless candidate,
    /// having scored above it (mode indices, best first): destructive
    /// tools the request does not ask for and, for a question, tools that
    /// change state.
    pub held_back: Vec<usize>,
    /// The first mode is one the safety rules would hold back (destructive
    /// and unasked for, or changing state in answer to a question), and no
    /// harmless candidate was left to put first.
    pub first_unasked_destructive: bool,
    /// The request names the first mode (its name or an alias, as written).
    pub named: bool,
}

impl Ranking {
    /// The best mode's confidence is low: show alternatives, flag the reply.
    pub fn is_low_confidence(&self) -> bool {
        self.ranked
            .first()
            .is_none_or(|best| best.confidence < LOW_CONFIDENCE)
    }

    /// No mode clearly fits: the "none" candidate outweighs the best mode, so
    /// a general-purpose mode is the safer recommendation. Two strong modes
    /// that split the confidence are ambiguous, not a non-fit.
    pub fn no_clear_fit(&self) -> bool {
        self.ranked
            .first()
            .is_none_or(|best| self.no_fit >= best.confidence)
    }
}

/// The precomputed index over a catalog.
#[derive(Debug)]
pub struct Index {
    ranker: Ranker,
    tuning: Tuning,
    analyzer: Analyzer,
    /// Every term of the catalog, interned; the parts below are keyed by id.
    vocabulary: Vocabulary,
    lexical: Bm25F,
    examples: Option<ExampleIndex>,
    phrasing: Option<PhrasingModel>,
    semantic: Option<EmbeddingIndex>,
    /// Per mode: does it have example phrasings? The phrasing model only
    /// counts for those (see [`Tuning::phrasing_weight`]).
    has_examples: Vec<bool>,
    /// Per mode without example phrasings: what it does, from its name and
    /// description ([`Actions::of_tool`]); empty for the others.
    actions: Vec<Actions>,
    /// Per mode without example phrasings: the actions its name alone
    /// names (what the ranking favours; the description's first word,
    /// often a generic "Returns" or "Gets", only widens what a destructive
    /// tool's request may ask for).
    name_actions: Vec<Actions>,
    /// Per mode: the kinds of value its parameters take
    /// ([`Values::of_parameters`]). Built-in modes count too: a review
    /// request naming `auth.py` stays with the mode that takes files.
    takes: Vec<Values>,
    /// Per mode: may it delete or overwrite ([`Manifest::destructive`])?
    destructive: Vec<bool>,
    /// Per mode: does it change state (a tool without example phrasings
    /// whose name's main action creates, updates, writes, moves, sends,
    /// commits ... or that is destructive)? A question is not offered one first.
    changes_state: Vec<bool>,
    /// Names and aliases that look like identifiers (`git_status`,
    /// `memory__create_entities`, `get-sum`), lower-cased, to the modes
    /// they name: a request that writes one asks for that mode.
    identifiers: HashMap<String, Vec<usize>>,
    /// Some modes have example phrasings and some do not
    /// ([`Tuning::mixed_examples_weight`]).
    mixed: bool,
    /// The score of the "no mode fits" candidate: [`Tuning::no_fit_score`],
    /// or calibrated per catalog when the meaning signal runs.
    no_fit_score: f32,
    modes: usize,
    /// With the full model loaded (fused ranker only): the same catalog
    /// indexed with the model as the meaning signal, asked when this
    /// index's own ranking is unsure ([`Tuning::ask_model_below`]). Empty
    /// while [`Index::build_model_later`]'s thread is still encoding the
    /// tools; the table answers alone until then.
    model: Option<Arc<OnceLock<Index>>>,
}

/// A mode's four signals before weighting, each about 0..1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    pub lexical: f32,
    pub examples: f32,
    pub phrasing: f32,
    /// Meaning: cosine of the static embeddings, rescaled by
    /// [`Tuning::semantic_floor`]; 0 when the signal does not run.
    pub semantic: f32,
}

impl Index {
    /// The full ranker.
    pub fn build(catalog: &Catalog) -> Self {
        Self::build_with(catalog, Ranker::Full)
    }

    pub fn build_with(catalog: &Catalog, ranker: Ranker) -> Self {
        Self::build_tuned(catalog, ranker, Tuning::DEFAULT)
    }

    /// [`Index::build_with`] with other constants, for evaluations.
    ///
    /// With the full model loaded, the fused ranker builds two indexes: one
    /// with the table (answers in microseconds) and one with the model
    /// (milliseconds per request), asked only when the first is unsure.
    /// A signal alone (`--ranker embed`) uses the model directly.
    pub fn build_tuned(catalog: &Catalog, ranker: Ranker, tuning: Tuning) -> Self {
        Self::build_choosing(catalog, ranker, tuning, false)
    }

    /// [`Index::build`] for a server that lives on: with the full model
    /// loaded, the table's index is returned at once and the model's is
    /// built on another thread. The first build puts every tool through the
    /// model (seconds for a hundred tools, most of a minute for a thousand,
    /// before the vectors are cached on disk), and no request should wait
    /// for that: until the model's index is ready, the table ranks alone.
    /// Without the model this is [`Index::build`].
    pub fn build_model_later(catalog: &Catalog) -> Self {
        Self::build_choosing(catalog, Ranker::Full, Tuning::DEFAULT, true)
    }

    fn build_choosing(catalog: &Catalog, ranker: Ranker, tuning: Tuning, later: bool) -> Self {
        let tuning = tuning.overridden_by_env("ZEN_SELECT_TUNING");
        let needs_meaning = catalog
            .modes()
            .iter()
            .any(|m| m.manifest().examples.is_empty());
        let wants_meaning = ranker.tuning(tuning).semantic_weight > 0.0 && needs_meaning;
        // The model is opened by the first build that needs it: on the
        // thread below in a server, so neither start-up nor the first
        // select waits for its weights to be read.
        if wants_meaning && ranker == Ranker::Full && embedding::model_configured() {
            let mut index = Self::build_encoded(
                catalog,
                ranker,
                tuning,
                token_table::table().map(embedding::Encoder::Table),
            );
            let slot = Arc::new(OnceLock::new());
            index.model = Some(Arc::clone(&slot));
            if later {
                match model_builds::queue(&slot, catalog, ranker, tuning) {
                    Ok(()) => return index,
                    Err(error) => tracing::warn!(
                        %error,
                        "cannot build the model's index on a thread; building it now"
                    ),
                }
            }
            if let Some(built) = Self::build_with_model(catalog, ranker, tuning) {
                let _ = slot.set(built);
            }
            return index;
        }
        let encoder = wants_meaning.then(embedding::Encoder::current).flatten();
        Self::build_encoded(catalog, ranker, tuning, encoder)
    }

    /// The index with the full model as its meaning signal; `None` if the
    /// model cannot be opened.
    fn build_with_model(catalog: &Catalog, ranker: Ranker, tuning: Tuning) -> Option<Self> {
        let model = embedding::Encoder::current().filter(|e| e.is_full_model())?;
        Some(Self::build_encoded(catalog, ranker, tuning, Some(model)))
    }

    /// One index, with `encoder` (if any) as the meaning signal.
    fn build_encoded(
        catalog: &Catalog,
        ranker: Ranker,
        tuning: Tuning,
        encoder: Option<embedding::Encoder>,
    ) -> Self {
        let full = ranker != Ranker::Bm25;
        // Modes with example phrasings are routed well without the meaning
        // signal; the table is only parsed when some mode has none
        // (imported tools). Such catalogs also drop lone numbers.
        let has_examples: Vec<bool> = catalog
            .modes()
            .iter()
            .map(|m| !m.manifest().examples.is_empty())
            .collect();
        let needs_meaning = has_examples.contains(&false);
        let tuning = match encoder {
            Some(encoder) if encoder.is_full_model() => ranker.tuning(
                tuning
                    .for_full_model()
                    .overridden_by_env("ZEN_SELECT_MODEL_TUNING"),
            ),
            _ => ranker.tuning(tuning),
        };
        let analyzer = Analyzer::new(if full {
            Options {
                numbers_alone: tuning.analysis.numbers_alone && !needs_meaning,
                ..tuning.analysis
            }
        } else {
            Options::PLAIN
        });
        // About one distinct term per 8 bytes of text in real catalogs.
        let text_bytes: usize = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().description.len() + m.manifest().summary.len())
            .sum();
        let mut vocabulary = Vocabulary::with_capacity(text_bytes / 8);
        let mut cache = HashMap::default();
        let mut memo: HashMap<&str, Vec<(u32, TermKind)>> = HashMap::default();
        let mut scratch: Vec<(u32, TermKind)> = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        let mut documents = Vec::with_capacity(catalog.len());
        let mut example_terms: Vec<(usize, Vec<(u32, TermKind)>)> = Vec::new();
        let mut phrasing = PhrasingCounts::new(catalog.len());
        // Terms of the fields written to say what a mode is for, by id.
        let mut intent_terms: Vec<bool> = Vec::new();
        for (mode_index, mode) in catalog.modes().iter().enumerate() {
            let manifest = mode.manifest();
            let mut document = Document::default();
            for (field, text) in field_texts(manifest) {
                let field = if full { field } else { Field::Description };
                scratch.clear();
                // Short texts (parameter names, titles equal to names) repeat
                // across a big catalog: analyze each once.
                match memo.get(text) {
                    Some(terms) => scratch.extend_from_slice(terms),
                    None => {
                        let compounds = field != Field::Description;
                        analyzer.for_each_term(text, compounds, &mut cache, &mut |key, kind| {
                            scratch.push((vocabulary.intern(key), kind));
                        });
                        if text.len() <= MEMO_MAX_BYTES {
                            memo.insert(text, scratch.clone());
                        }
                    }
                }
                ids.clear();
                ids.extend(scratch.iter().map(|&(id, _)| id));
                if !matches!(field, Field::Description | Field::Parameters) {
                    intent_terms.resize(vocabulary.len(), false);
                    for &id in &ids {
                        intent_terms[id as usize] = true;
                    }
                    phrasing.add(mode_index, &ids, tuning.intent_text_weight);
                } else if field == Field::Description && tuning.description_phrasing_weight > 0.0 {
                    phrasing.add(mode_index, &ids, tuning.description_phrasing_weight);
                }
                add_terms(document.field_mut(field), &scratch);
            }
            documents.push(document);
            if full {
                for example in &manifest.examples {
                    let mut terms = Vec::new();
                    // No glued compounds: across thousands of phrasings they
                    // are mostly non-words and cost half the build.
                    analyzer.for_each_term(example, false, &mut cache, &mut |key, kind| {
                        terms.push((vocabulary.intern(key), kind));
                    });
                    ids.clear();
                    ids.extend(terms.iter().map(|&(id, _)| id));
                    phrasing.add(mode_index, &ids, 1.0);
                    example_terms.push((mode_index, terms));
                }
            }
        }
        let terms = vocabulary.len();
        let lexical = Bm25F::build(
            &documents,
            if full { &tuning.fields } else { &PLAIN_FIELDS },
            terms,
        );
        let examples = (!example_terms.is_empty()).then(|| {
            let is_intent = |id: u32| intent_terms.get(id as usize).copied().unwrap_or(false);
            ExampleIndex::build(&example_terms, terms, &is_intent, tuning.topic_weight)
        });
        let phrasing =
            full.then(|| PhrasingModel::build(phrasing, terms, tuning.phrasing_smoothing));
        let semantic = encoder.map(|encoder| {
            let parameters = encoder.is_full_model() && tuning.meaning_parameters;
            let texts: Vec<String> = catalog
                .modes()
                .iter()
                .map(|m| meaning_text(m.manifest(), parameters))
                .collect();
            EmbeddingIndex::build(encoder, texts.iter().map(String::as_str))
        });
        let actions = catalog
            .modes()
            .iter()
            .zip(&has_examples)
            .map(|(m, &has)| {
                let manifest = m.manifest();
                if has {
                    Actions::NONE
                } else {
                    Actions::of_tool(
                        manifest.upstream_tool.as_deref().unwrap_or(&manifest.name),
                        &manifest.description,
                    )
                }
            })
            .collect();
        let destructive = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().destructive())
            .collect();
        let name_actions: Vec<Actions> = catalog
            .modes()
            .iter()
            .zip(&has_examples)
            .map(|(m, &has)| {
                let manifest = m.manifest();
                if has {
                    Actions::NONE
                } else {
                    Actions::of_tool(
                        manifest.upstream_tool.as_deref().unwrap_or(&manifest.name),
                        "",
                    )
                }
            })
            .collect();
        let takes = catalog
            .modes()
            .iter()
            .map(|m| Values::of_parameters(m.manifest().properties()))
            .collect();
        let changes_state = catalog
            .modes()
            .iter()
            .zip(&destructive)
            .zip(&has_examples)
            .map(|((m, &destructive), &has)| {
                let manifest = m.manifest();
                let name = manifest.upstream_tool.as_deref().unwrap_or(&manifest.name);
                !has && (destructive
                    || Actions::main_of_tool(name, &manifest.description)
                        .intersects(Actions::CHANGING))
            })
            .collect();
        let mut index = Index {
            changes_state,
            ranker,
            tuning,
            analyzer,
            vocabulary,
            lexical,
            examples,
            phrasing,
            semantic,
            actions,
            name_actions,
            takes,
            destructive,
            identifiers: identifiers(catalog),
            mixed: has_examples.contains(&true) && has_examples.contains(&false),
            has_examples,
            no_fit_score: tuning.no_fit_score,
            modes: catalog.len(),
            model: None,
        };
        // Per catalog, from its own scores (src/select/nofit.rs).
        if index.semantic.is_some() {
            index.no_fit_score = nofit::calibrated_score(&index).unwrap_or(tuning.no_fit_score);
        }
        index
    }

    pub fn ranker(&self) -> Ranker {
        self.ranker
    }

    /// Whether this index ranks by meaning too (some mode has no example
    /// phrasings, so the static embedding table was loaded).
    pub fn uses_meaning(&self) -> bool {
        self.semantic.is_some()
    }

    /// The score below which the "no mode fits" candidate wins.
    pub fn no_fit_score(&self) -> f32 {
        self.no_fit_score
    }

    /// [`Index::no_fit_score`] of the index that produced `ranking` (the
    /// model's scores have another scale).
    pub fn no_fit_score_of(&self, ranking: &Ranking) -> f32 {
        match self.ready_model() {
            Some(model) if ranking.by_model => model.no_fit_score,
            _ => self.no_fit_score,
        }
    }

    /// The model's index, once it is built.
    fn ready_model(&self) -> Option<&Index> {
        self.model.as_ref().and_then(|slot| slot.get())
    }

    /// Whether a model index is due (the full model is loaded) but still
    /// being built on another thread ([`Index::build_model_later`]).
    pub fn model_pending(&self) -> bool {
        self.model.is_some() && self.ready_model().is_none()
    }

    /// Modes with a positive score, best first; ties break by catalog order.
    pub fn rank(&self, query: &str) -> Vec<Ranked> {
        self.ranking(query).ranked
    }

    /// Each mode's signals before weighting. For evaluations and debugging.
    pub fn signals(&self, query: &str) -> Vec<Signals> {
        self.signals_of(&self.query(query)).0
    }

    fn query(&self, text: &str) -> Query {
        self.query_of(text, false)
    }

    /// `probe`: a calibration text (its meaning vector is worth keeping).
    fn query_of(&self, text: &str, probe: bool) -> Query {
        let terms = query_terms(self.analyzer.analyze(text));
        let ids = terms
            .iter()
            .map(|(term, weight)| (self.vocabulary.get(&term.key), *weight))
            .collect();
        let meaning = self
            .semantic
            .as_ref()
            .and_then(|semantic| semantic.embed_query(text, probe));
        Query {
            terms,
            ids,
            meaning,
            actions: Actions::of_request(text),
            main_action: Actions::of_request_main(text).0,
            question: action::is_question(text),
            values: Values::of_request(text),
            named: self.named_in(text),
        }
    }

    /// The signals and the query's evidence: the summed weighted IDF of its
    /// terms that occur in the catalog (the lexical score's ceiling), plus
    /// the weight of terms only the examples know.
    fn signals_of(&self, query: &Query) -> (Vec<Signals>, f32) {
        let mut lexical = vec![0.0f32; self.modes];
        let mut ceiling = 0.0f32;
        // Terms only the examples know add half a unit each: they are
        // evidence too, but have no IDF on the lexical scale, and words that
        // only example phrasings use are mostly generic ("better", "now").
        let mut example_only = 0.0f32;
        for &(id, weight) in &query.ids {
            let Some(id) = id else { continue };
            let most = self.lexical.accumulate(id, weight, &mut lexical);
            ceiling += most;
            if most == 0.0 && self.examples.as_ref().is_some_and(|e| e.knows(id)) {
                example_only += 0.5 * weight;
            }
        }
        if ceiling > 0.0 {
            for score in &mut lexical {
                *score /= ceiling;
            }
        }
        let examples = match &self.examples {
            Some(examples) => {
                examples.scores(&query.ids, self.modes, self.tuning.second_best_share)
            }
            None => vec![0.0; self.modes],
        };
        let phrasing = match &self.phrasing {
            Some(model) => {
                let mut posterior = model.posterior(&query.ids, self.tuning.phrasing_temperature);
                // Alone (`--ranker phrasing`) it still scores every mode.
                let alone = self.ranker == Ranker::Phrasing;
                for (p, &has) in posterior.iter_mut().zip(&self.has_examples) {
                    if !has && !alone {
                        *p = 0.0;
                    }
                }
                posterior
            }
            None => vec![0.0; self.modes],
        };
        let semantic = match (&self.semantic, &query.meaning) {
            (Some(index), Some(meaning)) => {
                let floor = self.tuning.semantic_floor;
                // Only for modes without example phrasings (alone, `--ranker
                // embed`, it scores every mode). Modes with examples already
                // have two signals of how they are asked for; a third let
                // them outscore imported tools on requests that were not
                // theirs (built-in modes beside the live catalog: top-1 on
                // its dev half 0.558 with it, 0.646 without).
                //
                // With the full model, [`Tuning::builtin_meaning`] gives them
                // the model's cosine too, so that built-ins and tools are
                // ranked by the same signal.
                let alone = self.ranker == Ranker::Embed;
                let builtin = self.tuning.builtin_meaning;
                let shared = builtin > 0.0 && index.is_full_model();
                let mut cosines: Vec<f32> = index
                    .similarities(&meaning.vector)
                    .into_iter()
                    .zip(&self.has_examples)
                    .map(|(cos, &has)| {
                        if has && !alone && !shared {
                            f32::NAN
                        } else {
                            cos
                        }
                    })
                    .collect();
                self.add_soft_match(index, meaning, &mut cosines);
                cosines
                    .into_iter()
                    .zip(&self.has_examples)
                    .map(|(cos, &has)| {
                        if cos.is_nan() {
                            0.0
                        } else {
                            let scaled = ((cos - floor) / (1.0 - floor)).max(0.0);
                            if has && !alone {
                                builtin * scaled
                            } else {
                                scaled
                            }
                        }
                    })
                    .collect()
            }
            _ => vec![0.0; self.modes],
        };
        let signals = lexical
            .into_iter()
            .zip(examples)
            .zip(phrasing)
            .zip(semantic)
            .map(|(((lexical, examples), phrasing), semantic)| Signals {
                lexical,
                examples,
                phrasing,
                semantic,
            })
            .collect();
        (signals, ceiling + example_only)
    }

    /// Blends the word-by-word match into the cosines (NaN: a mode the
    /// signal skips) of the best [`Tuning::soft_match_candidates`] modes.
    fn add_soft_match(&self, index: &EmbeddingIndex, meaning: &QueryMeaning, cosines: &mut [f32]) {
        let weight = self.tuning.soft_match_weight;
        if weight <= 0.0 || self.tuning.soft_match_candidates == 0 {
            return;
        }
        let mut order: Vec<usize> = (0..cosines.len())
            .filter(|&m| !cosines[m].is_nan())
            .collect();
        let keep = self.tuning.soft_match_candidates.min(order.len());
        if keep < order.len() {
            order.select_nth_unstable_by(keep, |&a, &b| cosines[b].total_cmp(&cosines[a]));
            order.truncate(keep);
        }
        let soft = index.soft_matches(meaning, &order);
        for (mode, soft) in order.into_iter().zip(soft) {
            cosines[mode] = (cosines[mode] + weight * soft) / (1.0 + weight);
        }
    }

    /// [`Index::rank`] plus the no-fit share of the confidence.
    ///
    /// Every signal is relative to the query's own known words, so "make it
    /// better" can match a mode as well as a detailed task does. Scores are
    /// therefore scaled by `1 - exp(-evidence / evidence_scale)`, where the
    /// evidence is the summed IDF of the query's known terms: the order of
    /// the modes is unchanged, but a thin query gets flatter confidences and
    /// loses to the no-fit candidate more easily.
    ///
    /// With the full model loaded, the table ranks first and the model is
    /// asked only when the table's best mode has a confidence under
    /// [`Tuning::ask_model_below`]: a sure answer costs microseconds, an
    /// unsure one the model's milliseconds, and its answer is the model's
    /// whole ranking (confidences and no-fit share included). While the
    /// model's index is still being built ([`Index::build_model_later`]),
    /// the table answers every request.
    pub fn ranking(&self, query: &str) -> Ranking {
        let ranking = self.own_ranking(query);
        let unsure = |ranking: &Ranking| {
            ranking
                .ranked
                .first()
                .is_none_or(|best| best.confidence < self.tuning.ask_model_below)
        };
        match self.ready_model() {
            Some(model) if unsure(&ranking) => Ranking {
                by_model: true,
                ..model.own_ranking(query)
            },
            _ => ranking,
        }
    }

    /// This index's ranking, without asking the model.
    fn own_ranking(&self, query: &str) -> Ranking {
        let query = self.query(query);
        let tuning = &self.tuning;
        let (base, mut scores) = self.scores_with_actions(&query);
        // The request's action (and, in a mixed catalog, the lighter
        // example signals) reorder the candidates; whether anything fits
        // at all, and how sure the ranking is, stay on the scale the no-fit
        // score is calibrated on: the best score is brought back to the
        // best score on that scale.
        let best = |scores: &[f32]| {
            scores
                .iter()
                .copied()
                .filter(|s| s.is_finite())
                .fold(0.0f32, f32::max)
        };
        let (before, after) = (best(&base), best(&scores));
        if before > 0.0 && after > 0.0 {
            for score in &mut scores {
                *score *= before / after;
            }
        }
        let mut ranked: Vec<Ranked> = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| **score > 0.0 && score.is_finite())
            .map(|(mode_index, &score)| Ranked {
                mode_index,
                score,
                confidence: 0.0,
                matched: Vec::new(),
            })
            .collect();
        // A mode the request names wins outright.
        let top = ranked.iter().map(|r| r.score).fold(0.0f32, f32::max);
        for entry in &mut ranked {
            if query.named.contains(&entry.mode_index) {
                entry.score += top + 1.0;
            }
        }
        if !query.named.is_empty() {
            for &mode_index in &query.named {
                if !ranked.iter().any(|r| r.mode_index == mode_index) {
                    ranked.push(Ranked {
                        mode_index,
                        score: top + 1.0,
                        confidence: 0.0,
                        matched: Vec::new(),
                    });
                }
            }
        }
        let by_score = |a: &Ranked, b: &Ranked| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.mode_index.cmp(&b.mode_index))
        };
        ranked.sort_by(by_score);
        let held_back = self.hold_back_destructive(&query, &mut ranked);
        if !held_back.is_empty() {
            ranked.sort_by(by_score);
        }
        let no_fit = assign_confidences(&mut ranked, tuning, self.no_fit_score);
        for entry in ranked.iter_mut().take(EXPLAINED) {
            entry.matched = self.matched_words(&query, entry.mode_index);
        }
        let first = ranked.first().map(|r| r.mode_index);
        Ranking {
            no_fit,
            by_model: false,
            held_back,
            first_unasked_destructive: first.is_some_and(|m| self.held(&query, m)),
            named: first.is_some_and(|m| query.named.contains(&m)),
            ranked,
        }
    }

    /// The safety rule: when destructive modes the request does not ask for
    /// rank above the first harmless one, they go just below it (their
    /// order kept). Returns them, best first.
    fn hold_back_destructive(&self, query: &Query, ranked: &mut [Ranked]) -> Vec<usize> {
        let Some(safe) = ranked.iter().position(|r| !self.held(query, r.mode_index)) else {
            return Vec::new();
        };
        if safe == 0 {
            return Vec::new();
        }
        let floor = ranked[safe].score;
        let held: Vec<usize> = ranked[..safe].iter().map(|r| r.mode_index).collect();
        for (step, entry) in ranked[..safe].iter_mut().enumerate() {
            // Below the harmless one, in their own order.
            entry.score = floor * (1.0 - 1e-4 * (step as f32 + 1.0));
        }
        held
    }

    /// Every mode's weighted score, in catalog order, before the request's
    /// action counts and with the example signals at full weight (the
    /// scale the no-fit score is calibrated on).
    fn scores(&self, query: &Query) -> Vec<f32> {
        self.scores_with_actions(query).0
    }

    /// [`Index::scores`], and the scores that order the modes: with the
    /// request's action counted ([`Index::action_effect`]) and, in a mixed
    /// catalog, the example signals at [`Tuning::mixed_examples_weight`].
    fn scores_with_actions(&self, query: &Query) -> (Vec<f32>, Vec<f32>) {
        let tuning = &self.tuning;
        let (signals, evidence) = self.signals_of(query);
        let strength = 1.0 - (-evidence / tuning.evidence_scale.max(f32::MIN_POSITIVE)).exp();
        let examples_weight = if self.mixed {
            tuning.mixed_examples_weight
        } else {
            1.0
        };
        signals
            .into_iter()
            .enumerate()
            .map(|(mode, s)| {
                let lexical = tuning.lexical_weight * s.lexical;
                let examples =
                    tuning.example_weight * s.examples + tuning.phrasing_weight * s.phrasing;
                let semantic = tuning.semantic_weight * s.semantic;
                let base = strength * (lexical + examples) + semantic;
                let fair = strength * (lexical + examples_weight * examples) + semantic;
                let (factor, bonus) = self.action_effect(query, mode);
                (base, fair * factor + bonus * strength)
            })
            .unzip()
    }

    /// How the request's action weighs on a mode's score: more for a tool
    /// that does what the request asks, less for one that does something
    /// else, and much less for a destructive tool the request does not ask
    /// for; more for a mode that takes a value the request carries. Modes
    /// with example phrasings keep their score otherwise: their examples
    /// already say how they are asked for.
    /// Returns a factor and an addend (before the evidence strength).
    fn action_effect(&self, query: &Query, mode: usize) -> (f32, f32) {
        if self.ranker != Ranker::Full {
            return (1.0, 0.0);
        }
        let tool = self.name_actions.get(mode).copied().unwrap_or_default();
        let (mut factor, mut bonus) = (1.0, 0.0);
        if !query.actions.is_empty() && !tool.is_empty() {
            // The main action counts whole, the others half.
            let main = query.main_action.shared(tool) as f32;
            let rest = query.actions.without(query.main_action).shared(tool) as f32;
            let shared = (main + 0.5 * rest).min(2.0);
            if shared > 0.0 {
                factor += self.tuning.verb_match * shared;
                bonus += self.tuning.verb_bonus * shared;
            } else {
                factor -= self.tuning.verb_mismatch;
            }
        }
        if !query.values.is_empty() {
            let takes = self.takes.get(mode).copied().unwrap_or_default();
            let shared = query.values.shared(takes).min(2) as f32;
            let weight = if self.has_examples.get(mode).copied().unwrap_or(false) {
                self.tuning.value_match_examples
            } else {
                self.tuning.value_match
            };
            if shared > 0.0 {
                factor += weight * shared;
            } else {
                factor -= self.tuning.value_mismatch;
            }
        }
        if self.unasked_destructive(query, mode) {
            factor *= self.tuning.unasked_destructive;
            bonus *= self.tuning.unasked_destructive;
        }
        (factor, bonus)
    }

    /// A mode the safety rules keep from being the first candidate: a
    /// destructive one the request does not ask for, or, for a question, a
    /// tool that changes state and that the request does not name (a
    /// question asks to be told, not to have something done).
    fn held(&self, query: &Query, mode: usize) -> bool {
        self.unasked_destructive(query, mode)
            || (query.question
                && self.changes_state.get(mode).copied().unwrap_or(false)
                && !query.named.contains(&mode))
    }

    /// A destructive mode that the request neither names nor asks for.
    fn unasked_destructive(&self, query: &Query, mode: usize) -> bool {
        self.destructive.get(mode).copied().unwrap_or(false)
            && !query.named.contains(&mode)
            && !query
                .actions
                .licenses(self.actions.get(mode).copied().unwrap_or_default())
    }

    /// The modes whose name or alias the request writes as a word of its
    /// own (`git_status`, `memory__create_entities`).
    fn named_in(&self, text: &str) -> Vec<usize> {
        if self.identifiers.is_empty() {
            return Vec::new();
        }
        let mut named: Vec<usize> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map(|token| token.trim_matches(|c: char| c == '.' || c == '-'))
            .filter(|token| !token.is_empty())
            .filter_map(|token| self.identifiers.get(&token.to_lowercase()))
            .flatten()
            .copied()
            .collect();
        named.sort_unstable();
        named.dedup();
        named
    }

    /// The query's words that matched `mode_index`, strongest first, each once.
    fn matched_words(&self, query: &Query, mode_index: usize) -> Vec<String> {
        let mut contributions: Vec<(f32, &Term)> = query
            .terms
            .iter()
            .zip(&query.ids)
            .map(|((term, _), &(id, weight))| {
                let contribution =
                    id.map_or(0.0, |id| self.lexical.contribution(id, weight, mode_index));
                (contribution, term)
            })
            .filter(|(contribution, _)| *contribution > 0.0)
            .collect();
        contributions.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.kind.cmp(&b.1.kind))
                .then_with(|| a.1.surface.cmp(&b.1.surface))
        });
        let mut words: Vec<String> = Vec::new();
        for (_, term) in contributions {
            // A phrase already says its words; a concept says the word it came from.
            let covered = words.iter().any(|w| {
                w == &term.surface || (term.kind != TermKind::Phrase && w.contains(&term.surface))
            });
            if !covered {
                words.push(term.surface.clone());
            }
        }
        words
    }
}

/// Names and aliases of a catalog that look like identifiers (with `_`,
/// `-` or a camelCase hump: a plain word such as `debug` or `fetch` is
/// ranked like any other word), lower-cased, and for a server's tool its
/// name without the server's prefix too.
fn identifiers(catalog: &Catalog) -> HashMap<String, Vec<usize>> {
    let looks_like_identifier = |name: &str| {
        name.contains(['_', '-'])
            || name
                .chars()
                .zip(name.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
    };
    let mut map: HashMap<String, Vec<usize>> = HashMap::default();
    for (mode_index, mode) in catalog.modes().iter().enumerate() {
        let manifest = mode.manifest();
        let own = manifest
            .name
            .split_once(crate::catalog::gateway_modes::SEPARATOR)
            .map(|(_, tool)| tool);
        let names = std::iter::once(manifest.name.as_str())
            .chain(manifest.upstream_tool.as_deref())
            .chain(own)
            .chain(manifest.aliases.iter().map(String::as_str));
        for name in names {
            if looks_like_identifier(name) {
                let entry = map.entry(name.to_lowercase()).or_default();
                if !entry.contains(&mode_index) {
                    entry.push(mode_index);
                }
            }
        }
    }
    map
}

/// The texts the full model embeds for `catalog`'s modes, as an index
/// built with the default tuning embeds them (`benches/model.rs` measures
/// the model on them).
pub fn model_texts(catalog: &Catalog) -> Vec<String> {
    catalog
        .modes()
        .iter()
        .map(|m| meaning_text(m.manifest(), Tuning::DEFAULT.meaning_parameters))
        .collect()
}

/// What the meaning signal embeds for a mode: its name as words, then what
/// it does (the shape the distillation corpus used).
///
/// `parameters`: then its parameter names as words, which say what the
/// tool works on (a path, a repository, an entity).
fn meaning_text(manifest: &Manifest, parameters: bool) -> String {
    let name = words::split_identifier(&manifest.name);
    let about = if manifest.description.is_empty() {
        &manifest.summary
    } else {
        &manifest.description
    };
    let mut text = format!("{name}: {about}");
    if let Some(properties) = manifest
        .properties()
        .filter(|p| parameters && !p.is_empty())
    {
        let names: Vec<String> = properties
            .keys()
            .map(|p| words::split_identifier(p))
            .collect();
        text.push_str(" (parameters: ");
        text.push_str(&names.join(", "));
        text.push(')');
    }
    text
}

/// The text of each field of a manifest.
fn field_texts(manifest: &Manifest) -> Vec<(Field, &str)> {
    let mut texts = vec![
        (Field::Name, manifest.name.as_str()),
        (Field::Title, manifest.title.as_str()),
        (Field::Summary, manifest.summary.as_str()),
        (Field::Description, manifest.description.as_str()),
    ];
    texts.extend(
        manifest
            .keywords
            .iter()
            .map(|k| (Field::Keywords, k.as_str())),
    );
    if let Some(properties) = manifest.properties() {
        texts.extend(properties.keys().map(|p| (Field::Parameters, p.as_str())));
    }
    texts
}

/// A query's distinct weighted terms and, in the same order, their ids in
/// the index's vocabulary (`None` for words the catalog never uses).
struct Query {
    terms: Vec<(Term, f32)>,
    ids: Vec<(Option<u32>, f32)>,
    /// The query's meaning vector (and, with the table, its token rows),
    /// when the index has one.
    meaning: Option<QueryMeaning>,
    /// The request's first action word's classes ([`Actions::of_request_main`]).
    main_action: Actions,
    /// What the request asks to do ([`Actions::of_request`]).
    actions: Actions,
    /// Modes the request names, in catalog order.
    named: Vec<usize>,
    /// The request asks to be told something ([`action::is_question`]).
    question: bool,
    /// The kinds of value the request carries ([`Values::of_request`]).
    values: Values,
}

/// Adds terms to a field; only words count toward its length.
fn add_terms(field: &mut bm25::FieldTerms, terms: &[(u32, TermKind)]) {
    for &(id, kind) in terms {
        field.occurrences.push(id);
        if kind == TermKind::Word {
            field.length += 1.0;
        }
    }
}

/// Softmax over the best [`CONFIDENCE_CANDIDATES`] scores and the no-fit
/// score; modes further down get their share of what is left (effectively 0).
/// Returns the no-fit share.
fn assign_confidences(ranked: &mut [Ranked], tuning: &Tuning, no_fit_score: f32) -> f32 {
    let Some(best) = ranked.first().map(|r| r.score) else {
        return 1.0;
    };
    // Shift by the largest score for numeric stability.
    let top = best.max(no_fit_score);
    let weight = |score: f32| ((score - top) / tuning.temperature).exp();
    let no_fit = weight(no_fit_score);
    let total: f32 = no_fit
        + ranked
            .iter()
            .take(CONFIDENCE_CANDIDATES)
            .map(|r| weight(r.score))
            .sum::<f32>();
    for entry in ranked.iter_mut() {
        entry.confidence = (weight(entry.score) / total).clamp(0.0, 1.0);
    }
    no_fit / total
}

/// The one thread that builds model indexes for [`Index::build_model_later`].
///
/// A gateway rebuilds its catalog each time an upstream restarts or changes
/// its tools, which a failing server can do many times a second; a thread
/// per build piled up threads, each with a copy of the catalog, faster
/// than they finished (the fuzz campaign's server grew past a gigabyte and
/// stopped answering pings). Builds now wait in line for a single thread,
/// and an index dropped before its turn (replaced by a newer catalog) is
/// skipped: only the slot's weak reference waits with the catalog.
mod model_builds {
    use std::{
        collections::VecDeque,
        sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak},
    };

    use super::{Index, Ranker, Tuning};
    use crate::catalog::Catalog;

    struct Job {
        slot: Weak<OnceLock<Index>>,
        catalog: Catalog,
        ranker: Ranker,
        tuning: Tuning,
    }

    struct Line {
        jobs: Mutex<VecDeque<Job>>,
        ready: Condvar,
    }

    static LINE: OnceLock<Result<Arc<Line>, String>> = OnceLock::new();

    /// Puts a build for `slot` in line; an error if the thread cannot be
    /// started (the caller then builds in place).
    pub(super) fn queue(
        slot: &Arc<OnceLock<Index>>,
        catalog: &Catalog,
        ranker: Ranker,
        tuning: Tuning,
    ) -> Result<(), String> {
        let line = LINE
            .get_or_init(|| {
                let line = Arc::new(Line {
                    jobs: Mutex::new(VecDeque::new()),
                    ready: Condvar::new(),
                });
                let worker = Arc::clone(&line);
                std::thread::Builder::new()
                    .name("zenmode-model-index".into())
                    .spawn(move || work(&worker))
                    .map(|_| line)
                    .map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let mut jobs = line.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        // Jobs whose index is gone would only be skipped later; dropping
        // them now keeps their catalogs from waiting in memory.
        jobs.retain(|job| job.slot.strong_count() > 0);
        jobs.push_back(Job {
            slot: Arc::downgrade(slot),
            catalog: catalog.clone(),
            ranker,
            tuning,
        });
        line.ready.notify_one();
        Ok(())
    }

    fn work(line: &Line) {
        loop {
            let job = {
                let mut jobs = line.jobs.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    match jobs.pop_front() {
                        Some(job) => break job,
                        None => {
                            jobs = line
                                .ready
                                .wait(jobs)
                                .unwrap_or_else(PoisonError::into_inner)
                        }
                    }
                }
            };
            if job.slot.strong_count() == 0 {
                continue;
            }
            let started = std::time::Instant::now();
            let Some(built) = Index::build_with_model(&job.catalog, job.ranker, job.tuning) else {
                continue;
            };
            if let Some(slot) = job.slot.upgrade() {
                let _ = slot.set(built);
                tracing::info!(
                    modes = job.catalog.len(),
                    seconds = started.elapsed().as_secs_f32(),
                    "the embedding model's index is ready"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Modes without example phrasings, each text its title, summary and
    /// description.
    fn catalog_of<const N: usize>(modes: [(&str, &str); N]) -> Catalog {
        Catalog::from_modes(modes.map(|(name, text)| {
            let manifest = serde_json::json!({
                "name": name, "title": text, "summary": text, "description": text,
                "category": "utility", "schema": {"type": "object", "properties": {}}
            });
            crate::catalog::Mode::new(
                Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        }))
    }

    /// Tools without example phrasings, each with the same text and its own
    /// parameters.
    fn tools_taking<const N: usize>(tools: [(&str, serde_json::Value); N]) -> Catalog {
        Catalog::from_modes(tools.map(|(name, properties)| {
            let text = "reads it and gives back what it says";
            let manifest = serde_json::json!({
                "name": name, "title": text, "summary": text, "description": text,
                "category": "utility",
                "schema": {"type": "object", "properties": properties}
            });
            crate::catalog::Mode::new(
                Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        }))
    }

    #[test]
    fn a_tool_that_takes_the_value_the_request_carries_ranks_first() {
        use serde_json::json;
        // Same words and names that say nothing, so only the parameters
        // tell them apart; both orders of the catalog, so the tie-break by
        // position cannot pass the test.
        let tools = [
            ("reader_a", json!({"name": {"type": "string"}})),
            ("reader_b", json!({"url": {"type": "string"}})),
            ("reader_c", json!({"path": {"type": "string"}})),
            ("reader_d", json!({"timezone": {"type": "string"}})),
        ];
        let mut reversed = tools.clone();
        reversed.reverse();
        for catalog in [tools_taking(tools), tools_taking(reversed)] {
            let index = Index::build(&catalog);
            for (request, wanted) in [
                ("read it for me: https://example.org/guide", "reader_b"),
                ("read it for me: notes/today.md", "reader_c"),
                ("read it for me for Europe/Paris", "reader_d"),
            ] {
                assert_eq!(top(&catalog, &index, request), wanted, "{request}");
            }
        }
    }

    fn builtin_index() -> (Catalog, Index) {
        let catalog = Catalog::builtin().unwrap();
        let index = Index::build(&catalog);
        (catalog, index)
    }

    fn top(catalog: &Catalog, index: &Index, query: &str) -> String {
        let ranked = index.rank(query);
        catalog.modes()[ranked[0].mode_index].name().to_owned()
    }

    #[test]
    fn ranks_builtin_modes_by_whole_words() {
        let (catalog, index) = builtin_index();
        assert_eq!(
            top(
                &catalog,
                &index,
                "the app crashes with a stack trace, find the root cause"
            ),
            "debug"
        );
        assert!(index.rank("zzzz qqqq").is_empty());
    }

    #[test]
    fn substrings_never_match() {
        // "or" is inside "refactor", "for" and "error"; it must match nothing.
        let (_, index) = builtin_index();
        assert!(index.rank("or").is_empty());
    }

    #[test]
    fn confidences_are_probabilities_and_favor_the_leader() {
        let (_, index) = builtin_index();
        let ranking = index.ranking("write unit tests with edge cases for the parser");
        let sum: f32 = ranking.ranked.iter().map(|r| r.confidence).sum::<f32>() + ranking.no_fit;
        assert!((sum - 1.0).abs() < 1e-3, "{sum}");
        assert!(
            ranking
                .ranked
                .iter()
                .all(|r| (0.0..=1.0).contains(&r.confidence))
        );
        assert!(ranking.ranked[0].confidence > ranking.ranked[1].confidence);
        assert!(!ranking.is_low_confidence() && !ranking.no_clear_fit());
    }

    #[test]
    fn a_vague_query_has_no_clear_fit() {
        let (_, index) = builtin_index();
        let ranking = index.ranking("hello there");
        assert!(
            ranking.is_low_confidence() && ranking.no_clear_fit(),
            "{ranking:?}"
        );
        let empty = index.ranking("");
        assert!(empty.ranked.is_empty() && empty.no_clear_fit());
        assert_eq!(empty.no_fit, 1.0);
    }

    #[test]
    fn ranking_is_deterministic_and_ties_break_by_name() {
        let (_, index) = builtin_index();
        let first = index.rank("review the diff before I commit");
        for _ in 0..5 {
            assert_eq!(index.rank("review the diff before I commit"), first);
        }
        for pair in first.windows(2) {
            assert!(
                pair[0].score > pair[1].score
                    || (pair[0].score == pair[1].score && pair[0].mode_index < pair[1].mode_index)
            );
        }
    }

    #[test]
    fn explains_matches_with_the_words_as_written() {
        let (catalog, index) = builtin_index();
        let ranked = index.rank("Generate unit tests for the parser");
        assert_eq!(catalog.modes()[ranked[0].mode_index].name(), "testgen");
        assert!(
            ranked[0].matched.iter().any(|w| w.contains("tests")),
            "{:?}",
            ranked[0].matched
        );
    }

    #[test]
    fn the_baseline_ranks_without_stemming() {
        let catalog = catalog_of([("demo", "find the crash")]);
        let plain = Index::build_with(&catalog, Ranker::Bm25);
        let full = Index::build(&catalog);
        assert_eq!(plain.ranker(), Ranker::Bm25);
        // "crashes" is not a word of the manifest; only its stem is.
        assert!(plain.rank("crashes").is_empty());
        assert!(!full.rank("crashes").is_empty());
        // Synonyms: "exception" is in the defect group with "crash".
        assert!(plain.rank("exception").is_empty());
        assert!(!full.rank("exception").is_empty());
    }

    #[test]
    fn exact_forms_outrank_inflections() {
        let catalog = catalog_of([
            ("list_branches", "list branches"),
            ("create_branch", "create branch"),
        ]);
        let index = Index::build(&catalog);
        let name = |query: &str| {
            catalog.modes()[index.rank(query)[0].mode_index]
                .name()
                .to_owned()
        };
        assert_eq!(name("which branches are there"), "list_branches");
        assert_eq!(name("make a branch"), "create_branch");
    }

    /// While the model's index is still being built the table answers
    /// alone; once it is there, unsure requests go to it. (A plain BM25
    /// index stands in for the model's, which needs the weights.)
    #[test]
    fn the_table_answers_alone_until_the_model_index_is_ready() {
        let catalog = catalog_of([
            ("book_flight", "Books a seat on an airline flight."),
            ("hotel_search", "Finds hotel rooms for given dates."),
        ]);
        let always_unsure = Tuning {
            ask_model_below: 1.01,
            ..Tuning::DEFAULT
        };
        let mut index = Index::build_tuned(&catalog, Ranker::Full, always_unsure);
        assert!(!index.model_pending(), "no model is loaded in unit tests");
        let stand_in = Index::build_with(&catalog, Ranker::Bm25);
        let query = "reserve a hotel room";
        let order = |ranking: &Ranking| -> Vec<(usize, u32)> {
            ranking
                .ranked
                .iter()
                .map(|r| (r.mode_index, r.score.to_bits()))
                .collect()
        };

        let slot = Arc::new(OnceLock::new());
        index.model = Some(Arc::clone(&slot));
        assert!(index.model_pending());
        let before = index.ranking(query);
        assert!(!before.by_model);
        assert_eq!(order(&before), order(&index.own_ranking(query)));
        assert_eq!(index.no_fit_score_of(&before), index.no_fit_score());

        slot.set(stand_in).unwrap();
        assert!(!index.model_pending());
        let after = index.ranking(query);
        assert!(after.by_model);
        let model = slot.get().unwrap();
        assert_eq!(order(&after), order(&model.own_ranking(query)));
        assert_ne!(
            order(&after),
            order(&before),
            "the stand-in must rank differently"
        );
        assert_eq!(index.no_fit_score_of(&after), model.no_fit_score());
    }

    #[test]
    fn hostile_queries_do_not_panic() {
        let (_, index) = builtin_index();
        let long = "debug ".repeat(5_000);
        for query in ["", " ", "🦀", "\u{0}", long.as_str(), "İ ß ǅ", "a'b'c'd"] {
            let ranking = index.ranking(query);
            assert!(ranking.no_fit.is_finite());
        }
    }

    #[test]
    fn empty_catalog_ranks_nothing() {
        let catalog = Catalog::from_modes(Vec::new());
        let index = Index::build(&catalog);
        assert!(index.rank("debug this crash").is_empty());
    }
}
