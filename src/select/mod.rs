//! Ranking modes against a free-text task description.
//!
//! A mode's score adds up to four signals, each in 0..1:
//!
//! 1. **Lexical**: field-weighted BM25 ([`signals::bm25`]) over the mode's name, title,
//!    summary, keywords, description and parameter names, divided by the
//!    query's largest possible score, so it reads as "how much of what the
//!    query says, weighted by rarity, this mode covers".
//! 2. **Examples**: cosine similarity to the mode's closest example task
//!    phrasings ([`signals::examples`]): how people ask for the mode, not only what
//!    it does.
//! 3. **Phrasing**: the posterior of a naive Bayes model trained on all of a
//!    mode's phrasings at once ([`signals::phrasing`]): words that recur across its
//!    examples and keywords count, a subject one example mentions does not.
//!
//! 4. **Meaning**: cosine similarity of static sentence embeddings
//!    ([`signals::embedding`]), for catalogs where some mode has no examples.
//!
//! The first three run over the same analyzed terms ([`text::analyze`]):
//! whole words (never substrings), case-folded, English-stemmed, with phrase bigrams, glued
//! compounds and a small domain synonym table ([`text::synonyms`]).
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
//!
//! # Files
//!
//! Each file uses only the ones listed before it:
//!
//! - [`text`]: what a term is (words, stems, phrases, synonyms);
//! - [`signals`]: the ranking signals, each on its own (BM25, examples,
//!   phrasing model, meaning, actions and values);
//! - `tuning.rs`: the constants ([`Tuning`]) and which ranking runs
//!   ([`Ranker`]);
//! - `confidence.rs`: what a ranking hands back ([`Ranking`], [`Ranked`]),
//!   the softmax that gives the confidences, low confidence and no clear fit;
//! - `servers.rs`: what in a request points at one of the catalog's
//!   servers (its name, words only its tools use);
//! - `index.rs`: the [`Index`] type, assembled from a catalog;
//! - `scoring.rs`: a request's query and every mode's score ([`Signals`]);
//! - `nofit.rs`: the per-catalog no-fit score, measured with those scores;
//! - `model_builds.rs`: the one thread that builds the model's indexes;
//! - `construct.rs`: [`Index::build`] and its variants;
//! - `ranking.rs`: [`Index::ranking`]: the order, the naming and safety
//!   rules, the confidences, and the full model when the table is unsure;
//! - `decision.rs`: what a select reply makes of a ranking ([`Decision`]):
//!   the mode, its ready call, the close modes, alternatives and caution;
//! - [`eval`]: the `zenmode eval` scorer, on top of it all.
//!
//! This file only declares them and re-exports what the rest of zenmode
//! uses.

pub mod eval;
pub mod signals;
pub mod text;

mod confidence;
mod construct;
mod decision;
mod index;
mod model_builds;
mod nofit;
mod ranking;
mod scoring;
mod servers;
mod tuning;

pub use confidence::{Ranked, Ranking};
pub use decision::{
    Alternative, Caution, Choice, Decision, FALLBACK_MODE, Recommendation, SCRIPT_MODE, Why,
};
pub use index::{Index, changes_state, leaves_state, model_texts};
pub use scoring::Signals;
pub use tuning::{Ranker, ReplyThresholds, Tuning};

// The meaning signal's entry points where the command line, the tests and
// the benches reach them (loading the model, the default model's place).
pub use signals::embedding;
#[cfg(feature = "transformer")]
pub use signals::transformer;
