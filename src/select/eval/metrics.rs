//! Scoring a ranking on a labeled set: [`evaluate`] and the [`Report`] it
//! returns.
//!
//! Every labeled query is ranked (and timed) on the built index; the
//! report gathers top-1, top-1 with acceptable modes, top-3 and mean
//! reciprocal rank, overall and per expected mode, the most frequent
//! confusions, how the confidence behaves (low-confidence and fallback
//! shares, calibration error and its reliability table), how well the
//! scores part no-fit queries from the rest ([`Separation`]), the traps the
//! next call takes, what the served reply gets right ([`Served`]: its mode,
//! the tools it shows, a state-changing call for a benign request), and
//! the latency percentiles. Printing it is `report.rs`'s part.

use std::collections::BTreeMap;

use super::labels::Label;
use crate::{
    catalog::Catalog,
    select::{
        confidence::Ranking,
        decision::Decision,
        index::{Index, changes_state},
    },
};

/// How many confusions the report lists.
const TOP_CONFUSIONS: usize = 10;
/// Bins for the expected calibration error.
const CALIBRATION_BINS: usize = 10;

/// Scores for one group of queries (all, or one expected mode).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores {
    pub n: usize,
    pub top1: f64,
    pub top1_acceptable: f64,
    pub top3: f64,
    pub mrr: f64,
}

/// What went wrong on one query.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub query: String,
    pub expected: String,
    /// The top-ranked mode, or `None` when nothing matched.
    pub got: Option<String>,
    pub confidence: f64,
    /// 1-based rank of the expected mode, `None` if it was not ranked.
    pub rank: Option<usize>,
}

/// A query whose `next_call` named one of its traps.
#[derive(Debug, Clone, PartialEq)]
pub struct TrapTaken {
    pub query: String,
    pub expected: Option<String>,
    pub trap: String,
}

/// Latency percentiles, in milliseconds, over every query of the set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    fn of(mut micros: Vec<f64>) -> Option<Self> {
        if micros.is_empty() {
            return None;
        }
        micros.sort_by(f64::total_cmp);
        // Nearest rank: the smallest value with at least p of the queries
        // at or below it.
        let at = |p: f64| {
            let rank = ((p * micros.len() as f64).ceil() as usize).clamp(1, micros.len());
            micros[rank - 1] / 1000.0
        };
        Some(Latency {
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: at(1.0),
        })
    }
}

/// What a select reply serves for a query. The ranking can be right while
/// the reply is not (it fell back to `chat`, or held the tool back), so
/// the report scores both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Served {
    /// The reply's mode (`chat` when it falls back).
    pub mode: Option<String>,
    /// The mode its `next_call` runs; `None`: no ready call.
    pub next_call: Option<String>,
    /// Every mode the reply shows, its own first, then the alternatives.
    pub shown: Vec<String>,
    /// Every mode the reply offers a ready call to: its `next_call`'s and,
    /// when it asks to choose between close modes, each one's.
    pub ready: Vec<String>,
}

impl Served {
    /// What `decision`, made on `catalog`, serves.
    pub fn of(decision: &Decision, catalog: &Catalog) -> Served {
        let name = |index: usize| catalog.modes()[index].name().to_owned();
        Served {
            mode: match decision {
                Decision::NoMatch { fallback } => fallback.map(name),
                Decision::Recommend(r) => Some(name(r.mode)),
            },
            next_call: decision.next_call().map(name),
            shown: decision.shown(catalog).into_iter().map(name).collect(),
            ready: decision.ready().into_iter().map(name).collect(),
        }
    }
}

/// The select reply for a query, as [`evaluate_with`] reads it.
pub type ServedReply<'a> = &'a dyn Fn(&str) -> Served;

/// A benign query (`"benign": true`) whose `next_call` changes state.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangingCall {
    pub query: String,
    pub tool: String,
}

/// The full evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub ranker: &'static str,
    pub modes: usize,
    pub overall: Scores,
    pub per_mode: BTreeMap<String, Scores>,
    /// ((expected, got), count), most frequent first.
    pub confusions: Vec<((String, String), usize)>,
    /// Share of queries the select tool would flag as low-confidence.
    pub low_confidence: f64,
    /// Share it would answer with the general fallback mode instead.
    pub no_clear_fit: f64,
    /// Top-1 accuracy over the queries not flagged low-confidence.
    pub top1_when_confident: f64,
    /// Mean stated top-1 confidence.
    pub mean_confidence: f64,
    /// Expected calibration error of the top-1 confidence.
    pub calibration_error: f64,
    /// The reliability table behind it: per confidence bin (tenths) that
    /// holds a request, how sure the ranking said it was and how often it
    /// was right, so a reader sees where it is over- or underconfident.
    pub reliability: Vec<ReliabilityBin>,
    /// Queries no mode fits (`"expected": null`), and the share of them the
    /// select tool flags as having no clear fit (higher is better).
    pub no_fit_queries: usize,
    pub no_fit_flagged: f64,
    pub misses: Vec<Miss>,
    /// Queries that have a right mode but were flagged as having no clear fit.
    pub flagged_relevant: Vec<String>,
    /// What the best no-fit threshold for this set, picked in hindsight,
    /// would flag (only with both kinds of queries).
    pub no_fit_separation: Option<Separation>,
    /// Share of all queries (no-fit ones included) the full model ranked
    /// because the table was unsure; 0 without the model.
    pub asked_model: f64,
    /// Where `next_call` came from: "reply" (the select reply itself) or
    /// "first ranked" (no reply given to the evaluation).
    pub next_call_from: &'static str,
    /// Share of relevant queries whose `next_call` is the expected mode or
    /// an acceptable one (the fallback to `chat` counts as wrong unless
    /// labeled acceptable).
    pub next_call_right: f64,
    /// Share of relevant queries whose served reply's mode is the expected
    /// one (the reply's top-1, fallback included), and the same counting
    /// acceptable modes.
    pub served_top1: f64,
    pub served_top1_acceptable: f64,
    /// Share of relevant queries with the expected mode (or an acceptable
    /// one) among the modes the reply shows, at the default three.
    pub reply_recall: f64,
    /// Queries labelled benign (they ask for no change).
    pub benign_queries: usize,
    /// The benign queries offered a ready call (their `next_call`, or one
    /// of the close modes the reply asks to choose from) to a tool that
    /// changes state ([`changes_state`]); the target is none.
    pub benign_changing: Vec<ChangingCall>,
    /// The queries no mode fits (`"expected": null`) offered a ready call
    /// to a tool that changes state; the target is none.
    pub offtopic_changing: Vec<ChangingCall>,
    /// Queries whose expected mode changes state (they ask for a change),
    /// and the share of them offered a ready call to the expected mode or
    /// an acceptable one: the safety rules must not hold back what is asked.
    pub change_queries: usize,
    pub change_served: f64,
    /// Queries that name at least one trap.
    pub trap_queries: usize,
    /// The queries whose `next_call` was one of their traps.
    pub traps_taken: Vec<TrapTaken>,
    /// Time of one ranking on the built index, every query of the set.
    pub rank_latency: Option<Latency>,
    /// Time of one whole select reply (with [`evaluate_with`]).
    pub reply_latency: Option<Latency>,
}

/// One confidence bin of [`Report::reliability`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReliabilityBin {
    /// The bin's lower bound (it spans a tenth).
    pub from: f64,
    pub n: usize,
    pub mean_confidence: f64,
    /// Share whose first-ranked mode was the label.
    pub top1: f64,
    /// Share whose first-ranked mode was the label or an acceptable one.
    pub top1_acceptable: f64,
}

/// How well the scores part queries with a right mode from queries with
/// none, whatever the threshold: the two trade-offs the selection
/// targets are stated in (docs/selection.md, "No suitable mode").
/// A query is flagged when its best score minus the no-fit score is at or
/// below the threshold; zenmode's own threshold is 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Separation {
    /// Share of no-fit queries flagged by the highest threshold that flags
    /// at most a tenth of the relevant queries.
    pub caught_with_a_tenth_flagged: f64,
    /// The same with at most a twentieth of the relevant queries flagged:
    /// the target for clearly off-topic requests (at least 0.80).
    pub caught_with_a_twentieth_flagged: f64,
    /// Share of relevant queries flagged by the lowest threshold that
    /// flags at least four fifths of the no-fit queries.
    pub flagged_with_four_fifths_caught: f64,
}

/// [`Separation`] from each query's best score minus the no-fit score.
pub fn separation(relevant: &[f32], no_fit: &[f32]) -> Option<Separation> {
    if relevant.is_empty() || no_fit.is_empty() {
        return None;
    }
    let sorted = |margins: &[f32]| {
        let mut margins = margins.to_vec();
        margins.sort_by(f32::total_cmp);
        margins
    };
    let (relevant, no_fit) = (sorted(relevant), sorted(no_fit));
    let share = |count: usize, of: &[f32]| count as f64 / of.len() as f64;
    // Flag the relevant queries below the (allowed + 1)-th smallest margin.
    let caught_with = |allowed: usize| match relevant.get(allowed) {
        Some(&first_spared) => share(no_fit.partition_point(|&m| m < first_spared), &no_fit),
        None => 1.0,
    };
    let caught_with_a_tenth_flagged = caught_with(relevant.len() / 10);
    let caught_with_a_twentieth_flagged = caught_with(relevant.len() / 20);
    let wanted = (no_fit.len() * 4).div_ceil(5).max(1);
    let threshold = no_fit[wanted - 1];
    let flagged_with_four_fifths_caught =
        share(relevant.partition_point(|&m| m <= threshold), &relevant);
    Some(Separation {
        caught_with_a_tenth_flagged,
        caught_with_a_twentieth_flagged,
        flagged_with_four_fifths_caught,
    })
}

#[derive(Default)]
struct Tally {
    n: usize,
    top1: usize,
    top1_acceptable: usize,
    top3: usize,
    reciprocal_ranks: f64,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>, acceptable_first: bool) {
        self.n += 1;
        self.top1 += usize::from(rank == Some(1));
        self.top1_acceptable += usize::from(rank == Some(1) || acceptable_first);
        self.top3 += usize::from(rank.is_some_and(|r| r <= 3));
        self.reciprocal_ranks += rank.map_or(0.0, |r| 1.0 / r as f64);
    }

    fn scores(&self) -> Scores {
        let share = |count: usize| ratio(count as f64, self.n);
        Scores {
            n: self.n,
            top1: share(self.top1),
            top1_acceptable: share(self.top1_acceptable),
            top3: share(self.top3),
            mrr: ratio(self.reciprocal_ranks, self.n),
        }
    }
}

fn ratio(value: f64, n: usize) -> f64 {
    if n == 0 { 0.0 } else { value / n as f64 }
}

/// Ranks every labeled query with `index` over `catalog` and scores it;
/// the reply is taken to be the ranking: its first mode is the reply's
/// mode and `next_call`, and it shows the first three.
pub fn evaluate(index: &Index, catalog: &Catalog, labels: &[Label]) -> Report {
    evaluate_with(index, catalog, labels, None)
}

/// [`evaluate`], with the served reply read from the select reply
/// (`reply` answers for `index` and `catalog`), and each reply timed.
pub fn evaluate_with(
    index: &Index,
    catalog: &Catalog,
    labels: &[Label],
    reply: Option<ServedReply<'_>>,
) -> Report {
    let name = |ranking: &Ranking, position: usize| {
        ranking
            .ranked
            .get(position)
            .map(|r| catalog.modes()[r.mode_index].name().to_owned())
    };
    let mut overall = Tally::default();
    let mut per_mode: BTreeMap<String, Tally> = BTreeMap::new();
    let mut confusions: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut low = 0usize;
    let (mut confident, mut confident_right) = (0usize, 0usize);
    let mut confidence_sum = 0.0;
    // Per bin: (count, summed confidence, correct).
    let mut bins = [(0usize, 0.0f64, 0usize); CALIBRATION_BINS];
    // Per bin: first-ranked modes that were the label or an acceptable one.
    let mut bins_acceptable = [0usize; CALIBRATION_BINS];

    let (mut no_fit_queries, mut no_fit_flagged) = (0usize, 0usize);
    let mut asked_model = 0usize;
    let mut flagged_relevant = Vec::new();
    // Per query: best score minus the no-fit score (flagged at or below 0).
    let (mut relevant_margins, mut no_fit_margins) = (Vec::new(), Vec::new());
    let (mut rank_micros, mut reply_micros) = (Vec::new(), Vec::new());
    let (mut trap_queries, mut traps_taken, mut next_call_right) = (0usize, Vec::new(), 0usize);
    let (mut served_top1, mut served_acceptable, mut recalled) = (0usize, 0usize, 0usize);
    let (mut benign_queries, mut benign_changing) = (0usize, Vec::new());
    let mut offtopic_changing = Vec::new();
    let (mut change_queries, mut change_served) = (0usize, 0usize);
    let changing = |mode: &str| {
        catalog
            .get(mode)
            .is_some_and(|m| changes_state(m.manifest()))
    };
    // A running server has paid for first-use work (tables parsed, row
    // lengths computed) before the request being timed.
    if let Some(first) = labels.first() {
        let _ = index.ranking(&first.query);
        if let Some(reply) = reply {
            let _ = reply(&first.query);
        }
    }
    for label in labels {
        let started = std::time::Instant::now();
        let ranking = index.ranking(&label.query);
        rank_micros.push(started.elapsed().as_secs_f64() * 1e6);
        let served = match reply {
            Some(reply) => {
                let started = std::time::Instant::now();
                let served = reply(&label.query);
                reply_micros.push(started.elapsed().as_secs_f64() * 1e6);
                served
            }
            None => Served {
                mode: name(&ranking, 0),
                next_call: name(&ranking, 0),
                shown: (0..3).filter_map(|at| name(&ranking, at)).collect(),
                ready: name(&ranking, 0).into_iter().collect(),
            },
        };
        let next_call = served.next_call.clone();
        if label.benign {
            benign_queries += 1;
            if let Some(tool) = served.ready.iter().find(|n| changing(n)) {
                benign_changing.push(ChangingCall {
                    query: label.query.clone(),
                    tool: tool.clone(),
                });
            }
        }
        if !label.traps.is_empty() {
            trap_queries += 1;
            if let Some(trap) = next_call.as_ref().filter(|n| label.traps.contains(n)) {
                traps_taken.push(TrapTaken {
                    query: label.query.clone(),
                    expected: label.expected.clone(),
                    trap: trap.clone(),
                });
            }
        }
        next_call_right += usize::from(next_call.as_ref().is_some_and(|n| {
            label.expected.as_ref() == Some(n)
                || (label.expected.is_some() && label.acceptable.contains(n))
        }));
        let margin =
            ranking.ranked.first().map_or(0.0, |best| best.score) - index.no_fit_score_of(&ranking);
        asked_model += usize::from(ranking.by_model);
        let Some(expected) = &label.expected else {
            if let Some(tool) = served.ready.iter().find(|n| changing(n)) {
                offtopic_changing.push(ChangingCall {
                    query: label.query.clone(),
                    tool: tool.clone(),
                });
            }
            no_fit_margins.push(margin);
            no_fit_queries += 1;
            no_fit_flagged += usize::from(ranking.no_clear_fit());
            continue;
        };
        let rank = ranking
            .ranked
            .iter()
            .position(|r| catalog.modes()[r.mode_index].name() == expected)
            .map(|position| position + 1);
        relevant_margins.push(margin);
        let right_or_acceptable =
            |mode: &String| mode == expected || label.acceptable.contains(mode);
        served_top1 += usize::from(served.mode.as_ref() == Some(expected));
        served_acceptable += usize::from(served.mode.as_ref().is_some_and(right_or_acceptable));
        recalled += usize::from(served.shown.iter().any(right_or_acceptable));
        if changing(expected) {
            change_queries += 1;
            change_served += usize::from(served.ready.iter().any(right_or_acceptable));
        }
        let top = name(&ranking, 0);
        let acceptable_first = top.as_ref().is_some_and(|t| label.acceptable.contains(t));
        overall.add(rank, acceptable_first);
        per_mode
            .entry(expected.clone())
            .or_default()
            .add(rank, acceptable_first);

        let confidence = f64::from(ranking.ranked.first().map_or(0.0, |r| r.confidence));
        let right = rank == Some(1);
        confidence_sum += confidence;
        let bin = ((confidence * CALIBRATION_BINS as f64) as usize).min(CALIBRATION_BINS - 1);
        bins[bin].0 += 1;
        bins[bin].1 += confidence;
        bins[bin].2 += usize::from(right);
        bins_acceptable[bin] += usize::from(right || acceptable_first);
        if ranking.is_low_confidence() {
            low += 1;
        } else {
            confident += 1;
            confident_right += usize::from(right);
        }
        if ranking.no_clear_fit() {
            flagged_relevant.push(label.query.clone());
        }

        if !right {
            if let Some(got) = &top {
                *confusions
                    .entry((expected.clone(), got.clone()))
                    .or_default() += 1;
            }
            misses.push(Miss {
                query: label.query.clone(),
                expected: expected.clone(),
                got: top,
                confidence,
                rank,
            });
        }
    }

    let mut confusions: Vec<((String, String), usize)> = confusions.into_iter().collect();
    confusions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    confusions.truncate(TOP_CONFUSIONS);
    let n = overall.n;
    let calibration_error = bins
        .iter()
        .filter(|(count, _, _)| *count > 0)
        .map(|&(count, confidence, correct)| {
            (count as f64 / n as f64)
                * (confidence / count as f64 - correct as f64 / count as f64).abs()
        })
        .sum();
    let reliability = bins
        .iter()
        .zip(bins_acceptable)
        .enumerate()
        .filter(|(_, ((count, _, _), _))| *count > 0)
        .map(
            |(bin, (&(count, confidence, correct), acceptable))| ReliabilityBin {
                from: bin as f64 / CALIBRATION_BINS as f64,
                n: count,
                mean_confidence: confidence / count as f64,
                top1: correct as f64 / count as f64,
                top1_acceptable: acceptable as f64 / count as f64,
            },
        )
        .collect();
    Report {
        reliability,
        ranker: index.ranker().as_str(),
        modes: catalog.len(),
        overall: overall.scores(),
        per_mode: per_mode.into_iter().map(|(m, t)| (m, t.scores())).collect(),
        confusions,
        low_confidence: ratio(low as f64, n),
        no_clear_fit: ratio(flagged_relevant.len() as f64, n),
        top1_when_confident: ratio(confident_right as f64, confident),
        mean_confidence: ratio(confidence_sum, n),
        calibration_error,
        no_fit_queries,
        no_fit_flagged: ratio(no_fit_flagged as f64, no_fit_queries),
        misses,
        flagged_relevant,
        no_fit_separation: separation(&relevant_margins, &no_fit_margins),
        asked_model: ratio(asked_model as f64, labels.len()),
        next_call_from: if reply.is_some() {
            "reply"
        } else {
            "first ranked"
        },
        next_call_right: ratio(next_call_right as f64, n),
        served_top1: ratio(served_top1 as f64, n),
        served_top1_acceptable: ratio(served_acceptable as f64, n),
        reply_recall: ratio(recalled as f64, n),
        benign_queries,
        benign_changing,
        offtopic_changing,
        change_queries,
        change_served: ratio(change_served as f64, change_queries),
        trap_queries,
        traps_taken,
        rank_latency: Latency::of(rank_micros),
        reply_latency: Latency::of(reply_micros),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separation_picks_the_thresholds_in_hindsight() {
        // Twenty relevant margins 0.1, 0.2 ... 2.0; ten no-fit margins.
        let relevant: Vec<f32> = (1..=20).map(|i| i as f32 / 10.0).collect();
        let no_fit = [-1.0, -0.5, 0.0, 0.05, 0.15, 0.25, 0.5, 0.9, 1.5, 3.0];
        let s = separation(&relevant, &no_fit).unwrap();
        // A tenth of twenty: 0.1 and 0.2 may be flagged, 0.3 must not be;
        // the no-fit margins below 0.3 are six of ten.
        assert!((s.caught_with_a_tenth_flagged - 0.6).abs() < 1e-9, "{s:?}");
        // A twentieth of twenty: only 0.1 may be flagged, 0.2 must not be;
        // the no-fit margins below 0.2 are five of ten.
        assert!(
            (s.caught_with_a_twentieth_flagged - 0.5).abs() < 1e-9,
            "{s:?}"
        );
        // Four fifths of ten: up to the eighth smallest, 0.9, which flags
        // the nine relevant margins up to 0.9.
        assert!(
            (s.flagged_with_four_fifths_caught - 0.45).abs() < 1e-9,
            "{s:?}"
        );

        let apart = separation(&[1.0, 2.0], &[-1.0, -2.0]).unwrap();
        assert_eq!(apart.caught_with_a_tenth_flagged, 1.0);
        assert_eq!(apart.flagged_with_four_fifths_caught, 0.0);
        let mixed = separation(&[0.0, 0.0], &[0.0, 0.0]).unwrap();
        assert_eq!(mixed.caught_with_a_tenth_flagged, 0.0);
        assert_eq!(mixed.flagged_with_four_fifths_caught, 1.0);
        assert!(separation(&[], &[1.0]).is_none() && separation(&[1.0], &[]).is_none());
    }

    #[test]
    fn latency_percentiles_use_the_nearest_rank() {
        let micros: Vec<f64> = (1..=200).map(|i| f64::from(i) * 1000.0).collect();
        let l = Latency::of(micros).unwrap();
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (100.0, 198.0, 200.0));
        assert!(Latency::of(Vec::new()).is_none());
    }
}
