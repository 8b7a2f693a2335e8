//! Building an [`Index`]: the public entry points.
//!
//! [`Index::build`] and its variants pick the encoder of the meaning signal
//! (none when every mode has example phrasings, the distilled table, or the
//! full model), assemble the index (`index.rs`) and calibrate its no-fit
//! score on the catalog itself (`nofit.rs`). With the full model loaded,
//! the fused ranker gets two indexes: the table's, returned at once, and
//! the model's, built now or, for a server, on the one thread of
//! `model_builds.rs`.

use std::sync::{Arc, OnceLock};

use super::{
    index::Index,
    model_builds, nofit,
    signals::{embedding, token_table},
    tuning::{Ranker, Tuning},
};
use crate::catalog::Catalog;

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
        let tuning = tuning.overridden_by_env(crate::platform::settings::SELECT_TUNING);
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
                match model_builds::queue(&slot, catalog, ranker, tuning, Self::build_with_model) {
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
        let mut index = Self::assemble(catalog, ranker, tuning, encoder);
        // Per catalog, from its own scores (src/select/nofit.rs).
        if index.semantic.is_some() {
            index.no_fit_score =
                nofit::calibrated_score(&index).unwrap_or(index.tuning.no_fit_score);
        }
        index
    }
}
