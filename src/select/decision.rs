//! What a select reply decides, as a value: which mode it recommends, with
//! what confidence, whether that mode gets a ready call, which close modes
//! it asks to choose between, which alternatives it lists and which
//! caution it adds ([`Decision`]).
//!
//! The select tool writes a decision out as JSON (`surface::zen`), and
//! `zenmode eval` scores the same value, so what is measured is what the
//! model is served, not a re-reading of the reply. Every threshold it
//! reads is a [`Tuning`] field, carried by the ranking it decides on.

use super::{Ranking, changes_state};
use crate::catalog::{Catalog, Mode};

/// The mode recommended when no mode clearly fits: it answers anything, and
/// a wrong specialised mode (say, a multi-step audit) costs more than a chat.
pub const FALLBACK_MODE: &str = "chat";
/// The mode that runs several servers' tools in one call.
pub const SCRIPT_MODE: &str = "script";

/// Words that join one step of a request to the next.
const STEP_JOINERS: &[&str] = &[
    " then ",
    ", then",
    " after that",
    " afterwards",
    " followed by ",
    " and finally ",
    " and for each ",
    " for each of ",
];

/// Whether `task` asks for several steps in a row.
fn is_multi_step(task: &str) -> bool {
    let task = format!(" {} ", task.to_lowercase());
    STEP_JOINERS.iter().any(|joiner| task.contains(joiner))
}

/// A select's answer. Modes are indices into the catalog the ranking was
/// made on.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Nothing ranked: `fallback` (the general mode, else the first mode
    /// that changes nothing and can run) is a guess. `None`: there is no
    /// such mode.
    NoMatch {
        fallback: Option<usize>,
    },
    Recommend(Recommendation),
}

/// A recommended mode and everything the reply offers beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub mode: usize,
    pub confidence: f32,
    /// The reply is flagged as a weak match.
    pub low_confidence: bool,
    pub why: Why,
    /// The recommended mode gets a ready call (a request it can run as it is).
    pub ready_call: bool,
    pub caution: Option<Caution>,
    /// Close modes to choose between, the first included (empty: none);
    /// when there are some, the recommended mode itself has no ready call.
    pub choose: Vec<Choice>,
    /// One line each, best first; the recommended mode is not among them.
    pub alternatives: Vec<Alternative>,
    /// The request chains steps over servers' tools: `script` is offered
    /// first among the alternatives.
    pub offer_script: bool,
}

/// Why a mode was recommended.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// The task starts with the mode's name.
    Named,
    /// No mode clearly fits; `best` is what ranked first.
    Fallback { best: usize, best_confidence: f32 },
    /// No mode clearly fits, but the first stands out from the next.
    StandsOut { next_confidence: f32 },
    /// The words it matched, strongest first (none: found by its examples
    /// or its description's meaning).
    Matched {
        words: Vec<String>,
        has_examples: bool,
    },
    /// Close modes fit about as well: the reply asks to choose.
    Choose,
}

/// A line of warning about a tool that changes state.
#[derive(Debug, Clone, PartialEq)]
pub enum Caution {
    /// The recommended mode is one the safety rules hold back (no harmless
    /// candidate was left): `unsure` when the ranking is not sure of it,
    /// else the request does not ask for its change.
    Unasked { mode: usize, unsure: bool },
    /// `held` scored higher than the recommended mode but was put below it.
    HeldBack { held: usize },
    /// The recommended mode changes state and no mode clearly fits.
    UnsureChange { mode: usize },
}

/// One of the close modes a reply asks to choose between.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub mode: usize,
    pub confidence: f32,
    pub ready_call: bool,
}

/// A mode listed after the recommended one.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    pub mode: usize,
    pub confidence: f32,
}

impl Decision {
    /// Decides on `ranking`, made on `catalog` for `task`. `top_k`: as many
    /// modes as the client asked to see, or `None` for as many as the
    /// ranking's confidence needs. `can_run`: whether a mode can run in this
    /// process (a mode needing a model provider cannot without one).
    pub fn of(
        catalog: &Catalog,
        ranking: &Ranking,
        task: &str,
        top_k: Option<usize>,
        can_run: &dyn Fn(&Mode) -> bool,
    ) -> Decision {
        let Some(best) = ranking.ranked.first() else {
            return Decision::NoMatch {
                fallback: no_match_fallback(catalog, can_run),
            };
        };
        let top_k = top_k.unwrap_or_else(|| ranking.shown_by_default());
        let modes = catalog.modes();
        let index_of = |mode: &Mode| catalog.index_of(mode.name());
        let named = named_by_first_word(catalog, task).and_then(index_of);
        let best_mode = modes[best.mode_index].as_ref();
        let unclear = named.is_none() && ranking.no_clear_fit();
        // A tool that stands out is the answer even when no mode clearly
        // fits: falling back to `chat` then lost what the ranking had right.
        let stands_out =
            unclear && best_mode.manifest().examples.is_empty() && ranking.stands_out();
        let fallback = catalog
            .get(FALLBACK_MODE)
            .filter(|_| unclear && !stands_out)
            .filter(|fallback| can_run(fallback))
            .filter(|fallback| fallback.name() != best_mode.name())
            .and_then(|fallback| index_of(fallback));
        let confidence_of = |mode: usize| {
            ranking
                .ranked
                .iter()
                .find(|r| r.mode_index == mode)
                .map(|r| r.confidence)
        };
        let (mode, confidence, why) = match (named, fallback) {
            (Some(named), _) => (
                named,
                confidence_of(named).map_or(best.confidence, |c| c.max(best.confidence)),
                Why::Named,
            ),
            (None, Some(fallback)) => (
                fallback,
                confidence_of(fallback).unwrap_or(0.0),
                Why::Fallback {
                    best: best.mode_index,
                    best_confidence: best.confidence,
                },
            ),
            (None, None) if stands_out => (
                best.mode_index,
                best.confidence,
                Why::StandsOut {
                    next_confidence: ranking.ranked.get(1).map_or(0.0, |r| r.confidence),
                },
            ),
            (None, None) => (
                best.mode_index,
                best.confidence,
                Why::Matched {
                    words: best.matched.clone(),
                    has_examples: !best_mode.manifest().examples.is_empty(),
                },
            ),
        };
        // A tool that changes state is no ready call when no mode clearly
        // fits. So is one served because the fallback cannot run here.
        let unsure = stands_out || (unclear && fallback.is_none());
        let unsure_change = unsure && changes_state(best_mode.manifest());
        let caution = caution(ranking, mode).or(unsure_change.then_some(Caution::UnsureChange {
            mode: best.mode_index,
        }));
        let own_pick = named.is_none() && fallback.is_none();
        // A destructive tool the request does not ask for is never a ready
        // call.
        let held = own_pick && (ranking.first_unasked_destructive || unsure_change);
        let choose = if own_pick && !ranking.named {
            close_ones(catalog, ranking, top_k, can_run)
        } else {
            Vec::new()
        };
        let alternatives: Vec<Alternative> = ranking
            .ranked
            .iter()
            .filter(|ranked| ranked.mode_index != mode)
            .take(top_k - 1 + usize::from(fallback.is_some()))
            .map(|ranked| Alternative {
                mode: ranked.mode_index,
                confidence: ranked.confidence,
            })
            .collect();
        let mut recommendation = Recommendation {
            mode,
            confidence,
            low_confidence: named.is_none() && (fallback.is_some() || ranking.is_low_confidence()),
            why: if choose.is_empty() { why } else { Why::Choose },
            ready_call: !held && choose.is_empty() && can_run(&modes[mode]),
            caution,
            choose,
            alternatives,
            offer_script: false,
        };
        recommendation.offer_script = offers_script(catalog, &recommendation, task);
        Decision::Recommend(recommendation)
    }

    /// Every mode the reply shows, the recommended one first, then the
    /// alternatives (`script` first among them when offered).
    pub fn shown(&self, catalog: &Catalog) -> Vec<usize> {
        match self {
            Decision::NoMatch { fallback } => fallback.iter().copied().collect(),
            Decision::Recommend(r) => {
                let script = catalog.index_of(SCRIPT_MODE).filter(|_| r.offer_script);
                std::iter::once(r.mode)
                    .chain(script)
                    .chain(r.alternatives.iter().map(|a| a.mode))
                    .collect()
            }
        }
    }

    /// The mode the reply's own ready call runs, if it has one.
    pub fn next_call(&self) -> Option<usize> {
        match self {
            Decision::NoMatch { fallback } => *fallback,
            Decision::Recommend(r) => r.ready_call.then_some(r.mode),
        }
    }

    /// Every mode the reply offers a ready call to: its own and, when it
    /// asks to choose, each close mode's.
    pub fn ready(&self) -> Vec<usize> {
        let choose = match self {
            Decision::NoMatch { .. } => &[][..],
            Decision::Recommend(r) => &r.choose[..],
        };
        self.next_call()
            .into_iter()
            .chain(choose.iter().filter(|c| c.ready_call).map(|c| c.mode))
            .collect()
    }
}

impl Ranking {
    /// How many modes a reply shows when the client does not say: as many
    /// as it takes for their confidences to add up to
    /// [`Tuning::shown_confidence`](super::Tuning::shown_confidence),
    /// within the tuning's bounds. Confidence is calibrated
    /// (docs/selection.md), so the reply then holds the right mode about
    /// that often.
    pub fn shown_by_default(&self) -> usize {
        let judged = &self.judged;
        let mut total = 0.0;
        let needed = self
            .ranked
            .iter()
            .position(|ranked| {
                total += ranked.confidence;
                total >= judged.shown_confidence
            })
            .map_or(judged.shown_at_most, |at| at + 1);
        needed.clamp(
            judged.shown_at_least,
            judged.shown_at_most.max(judged.shown_at_least),
        )
    }
}

/// The mode a task names with its first word ("Debug the ...", "Refactor
/// ..."): a caller who starts with a mode's name (or alias) asks for it.
fn named_by_first_word<'a>(catalog: &'a Catalog, task: &str) -> Option<&'a Mode> {
    let word: String = task
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let mode = catalog.get(&word)?;
    // Only zenmode's own modes: an imported tool's name is not a verb.
    mode.manifest().server.is_none().then_some(mode.as_ref())
}

/// When the modes after the first are about as likely as it
/// ([`Ranking::close_to_first`]), one confident ready call pulls the model
/// to the first even when it is wrong: the reply offers the close ones side
/// by side, each with its ready call unless the safety rules hold it back.
fn close_ones(
    catalog: &Catalog,
    ranking: &Ranking,
    top_k: usize,
    can_run: &dyn Fn(&Mode) -> bool,
) -> Vec<Choice> {
    let close = ranking.close_to_first(top_k.saturating_sub(1).min(2));
    if close.is_empty() {
        return Vec::new();
    }
    let unsure = ranking.no_clear_fit();
    ranking.ranked[..=close.len()]
        .iter()
        .map(|ranked| {
            let mode = &catalog.modes()[ranked.mode_index];
            let held = ranking.unasked.contains(&ranked.mode_index)
                || (unsure && changes_state(mode.manifest()));
            Choice {
                mode: ranked.mode_index,
                confidence: ranked.confidence,
                ready_call: !held && can_run(mode),
            }
        })
        .collect()
}

/// Why the reply warns: the recommended mode is one the safety rules would
/// hold back (no harmless one was left), or a tool that scored higher was
/// put below it.
fn caution(ranking: &Ranking, mode: usize) -> Option<Caution> {
    let first = ranking.ranked.first()?.mode_index;
    if ranking.first_unasked_destructive && first == mode {
        return Some(Caution::Unasked {
            mode,
            unsure: ranking.is_low_confidence() || ranking.no_clear_fit(),
        });
    }
    ranking
        .held_back
        .first()
        .map(|&held| Caution::HeldBack { held })
}

/// Whether the reply offers `script` first among its alternatives: the task
/// chains steps, the reply offers servers' tools, and `script` is not
/// offered already.
fn offers_script(catalog: &Catalog, recommendation: &Recommendation, task: &str) -> bool {
    let Some(script) = catalog.get(SCRIPT_MODE) else {
        return false;
    };
    let modes = catalog.modes();
    let offered = || {
        std::iter::once(recommendation.mode)
            .chain(recommendation.alternatives.iter().map(|a| a.mode))
            .map(|m| &modes[m])
    };
    is_multi_step(task)
        && !offered().any(|m| m.name() == script.name())
        && offered().any(|m| m.manifest().server.is_some())
}

/// The general mode when it can run, else the first mode that changes
/// nothing and can run: a guess is never a ready call that changes state
/// ("who lives in Oslo?" got `create_directory`, the first tool of its
/// catalog).
fn no_match_fallback(catalog: &Catalog, can_run: &dyn Fn(&Mode) -> bool) -> Option<usize> {
    let modes = catalog.modes();
    catalog
        .index_of(FALLBACK_MODE)
        .filter(|&index| can_run(&modes[index]))
        .or_else(|| {
            modes
                .iter()
                .position(|m| !changes_state(m.manifest()) && can_run(m))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_joined_in_a_row_are_told_from_one_step() {
        assert!(is_multi_step(
            "list my notes folder and read the two newest files, then summarize them"
        ));
        assert!(is_multi_step("fetch the page; after that save it"));
        assert!(!is_multi_step(
            "read the two newest files in my notes folder"
        ));
        assert!(!is_multi_step("what happened then?"));
    }
}
