//! What a ranking hands back and how sure it is.
//!
//! Each ranked mode gets a confidence: a softmax over the best candidates'
//! scores and a "none of these" candidate whose score is the no-fit score
//! (fixed, or calibrated per catalog in `nofit.rs`). From those the select
//! tool decides whether to flag a reply as low-confidence
//! ([`Ranking::is_low_confidence`]) and whether to fall back to the
//! general-purpose mode ([`Ranking::no_clear_fit`]). The scores themselves
//! come from `scoring.rs`; `ranking.rs` puts the two together.

use super::tuning::{ReplyThresholds, Tuning};

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
    /// Modes among the first few that the safety rules hold back for this
    /// request (mode indices): none of them is offered as a ready call.
    pub unasked: Vec<usize>,
    /// The thresholds this ranking is judged by (the index's tuning).
    pub judged: ReplyThresholds,
}

impl Ranking {
    /// The best mode's confidence is low
    /// ([`ReplyThresholds::low_confidence`]): show alternatives, flag the
    /// reply.
    pub fn is_low_confidence(&self) -> bool {
        self.ranked
            .first()
            .is_none_or(|best| best.confidence < self.judged.low_confidence)
    }

    /// The best mode is at least [`ReplyThresholds::clear_margin`] times as
    /// likely as the second (or alone).
    pub fn stands_out(&self) -> bool {
        match (self.ranked.first(), self.ranked.get(1)) {
            (Some(best), Some(second)) => {
                best.confidence >= self.judged.clear_margin * second.confidence
            }
            (Some(_), None) => true,
            _ => false,
        }
    }

    /// The modes after the first that are about as likely as it (at least
    /// [`ReplyThresholds::close_share`] of its confidence), at most `most`.
    pub fn close_to_first(&self, most: usize) -> &[Ranked] {
        let Some(best) = self.ranked.first() else {
            return &[];
        };
        let close = self.ranked[1..]
            .iter()
            .take(most)
            .take_while(|r| r.confidence >= self.judged.close_share * best.confidence)
            .count();
        &self.ranked[1..=close]
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

/// Softmax over the best [`Tuning::confidence_candidates`] scores and the no-fit
/// score; modes further down get their share of what is left (effectively 0).
/// Returns the no-fit share.
pub(super) fn assign_confidences(ranked: &mut [Ranked], tuning: &Tuning, no_fit_score: f32) -> f32 {
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
            .take(tuning.confidence_candidates)
            .map(|r| weight(r.score))
            .sum::<f32>();
    for entry in ranked.iter_mut() {
        entry.confidence = (weight(entry.score) / total).clamp(0.0, 1.0);
    }
    no_fit / total
}
