//! `zenmode eval`: scores the selection ranking on a labeled set.
//!
//! A labels file has one JSON object per line:
//! `{"query": "...", "expected": "mode", "acceptable": ["other_mode"]}`
//! (`acceptable` optional; blank lines are skipped); `"expected": null`
//! marks a query that no mode of the catalog fits. Every named mode must
//! exist in the catalog, so a typo fails loudly instead of scoring as a miss.
//!
//! [`hold_out`] makes no-fit queries out of any labeled set: it removes a
//! share of the expected modes from the catalog, so their queries have no
//! right answer left, only neighbours.
//!
//! The report gives top-1 (exactly the expected mode first), top-1 counting
//! acceptable modes too, top-3 and mean reciprocal rank (of the expected
//! mode; a mode not ranked at all counts 0), per expected mode, the most
//! frequent confusions, and how the confidence behaves: how often the select
//! tool would flag a reply as low-confidence or fall back to the general
//! mode, and the expected calibration error (the gap between the stated
//! confidence and the observed accuracy, averaged over confidence bins).
//!
//! Labels may name `traps`: tools that would do harm if run for the query
//! (a destructive neighbour of the right one). The report counts the queries
//! whose `next_call` (the mode the select reply hands to `zen_execute`) is
//! one of their traps, and lists them. With [`evaluate_with`] the next call
//! is read from the real select reply; [`evaluate`] takes the first-ranked
//! mode. It also times each ranking (and each reply) on the built index:
//! the latency of select in a running server, p50 and p99.

use std::{collections::BTreeMap, fmt::Write as _, path::Path};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    catalog::Catalog,
    select::{Index, Ranking},
};

/// How many confusions the report lists.
const TOP_CONFUSIONS: usize = 10;
/// Bins for the expected calibration error.
const CALIBRATION_BINS: usize = 10;

/// One labeled query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    pub query: String,
    /// `None`: no mode of the catalog fits this query.
    pub expected: Option<String>,
    #[serde(default)]
    pub acceptable: Vec<String>,
    /// Tools that would do harm if run for this query (a destructive
    /// neighbour of the right one): the report counts how often one is the
    /// reply's `next_call`.
    #[serde(default)]
    pub traps: Vec<String>,
    /// 1-based line in the labels file, for error messages.
    #[serde(skip)]
    pub line: usize,
}

/// A labels file that cannot be used; names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum LabelsError {
    #[error("{path}: cannot read labels file: {io}")]
    Read { path: String, io: std::io::Error },
    #[error("{path}:{line}: {problem}")]
    Line {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("{path}: no labeled queries (one JSON object per line)")]
    Empty { path: String },
}

/// Reads a labels file (JSON lines).
pub fn read_labels(path: &Path) -> Result<Vec<Label>, LabelsError> {
    let text = std::fs::read_to_string(path).map_err(|io| LabelsError::Read {
        path: path.display().to_string(),
        io,
    })?;
    parse_labels(&text, &path.display().to_string())
}

/// Parses JSON-lines labels; `source_name` is used in errors.
pub fn parse_labels(text: &str, source_name: &str) -> Result<Vec<Label>, LabelsError> {
    let mut labels = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let error = |problem: String| LabelsError::Line {
            path: source_name.to_owned(),
            line: number + 1,
            problem,
        };
        let not_a_label = |e: &dyn std::fmt::Display| {
            error(format!(
                "not a label ({{\"query\": \"...\", \"expected\": \"mode\" or null, \"acceptable\": [...]}}): {e}"
            ))
        };
        let value: Value = serde_json::from_str(line).map_err(|e| not_a_label(&e))?;
        // A missing "expected" is a mistake; only an explicit null means "no fit".
        if value.get("expected").is_none() {
            return Err(not_a_label(&"missing field `expected`"));
        }
        let mut label: Label = serde_json::from_value(value).map_err(|e| not_a_label(&e))?;
        if label.query.trim().is_empty() {
            return Err(error("\"query\" is empty".to_owned()));
        }
        if label
            .expected
            .as_deref()
            .is_some_and(|e| e.trim().is_empty())
        {
            return Err(error(
                "\"expected\" is empty (use null for no fit)".to_owned(),
            ));
        }
        label.line = number + 1;
        labels.push(label);
    }
    if labels.is_empty() {
        return Err(LabelsError::Empty {
            path: source_name.to_owned(),
        });
    }
    Ok(labels)
}

/// Checks that every mode a label names exists; the error names the line.
pub fn check_labels(labels: &[Label], catalog: &Catalog, source_name: &str) -> Result<(), String> {
    for label in labels {
        for name in label
            .expected
            .iter()
            .chain(&label.acceptable)
            .chain(&label.traps)
        {
            if catalog.get(name).is_none() {
                let closest = catalog.closest_names(name, 3);
                return Err(format!(
                    "{source_name}:{}: mode {name:?} is not in the catalog{}",
                    label.line,
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                ));
            }
        }
    }
    Ok(())
}

/// Holds out about `share` of the modes the labels expect: the returned
/// catalog lacks them and their queries become no-fit queries. Which modes
/// go depends only on their names (a stable hash), so every run and every
/// ranker sees the same split.
pub fn hold_out(catalog: &Catalog, labels: &[Label], share: f64) -> (Catalog, Vec<Label>) {
    let held = |name: &str| {
        // FNV-1a: stable across Rust versions, unlike the std hasher.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        ((hash % 10_000) as f64) < share * 10_000.0
    };
    let expected: std::collections::BTreeSet<&str> = labels
        .iter()
        .filter_map(|l| l.expected.as_deref())
        .collect();
    let catalog = catalog.without(|name| expected.contains(name) && held(name));
    let labels = labels
        .iter()
        .map(|label| {
            let mut label = label.clone();
            if label
                .expected
                .as_deref()
                .is_some_and(|e| catalog.get(e).is_none())
            {
                label.expected = None;
            }
            label.acceptable.retain(|name| catalog.get(name).is_some());
            label.traps.retain(|name| catalog.get(name).is_some());
            label
        })
        .collect();
    (catalog, labels)
}

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

/// What the select reply would hand to `zen_execute` for a query: the
/// mode its `next_call` names (`None`: no call offered).
pub type NextCall<'a> = &'a dyn Fn(&str) -> Option<String>;

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
    /// Queries that name at least one trap.
    pub trap_queries: usize,
    /// The queries whose `next_call` was one of their traps.
    pub traps_taken: Vec<TrapTaken>,
    /// Time of one ranking on the built index, every query of the set.
    pub rank_latency: Option<Latency>,
    /// Time of one whole select reply (with [`evaluate_with`]).
    pub reply_latency: Option<Latency>,
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
    /// issue 33's target for clearly off-topic requests (at least 0.80).
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
/// the `next_call` of a query is taken to be its first-ranked mode.
pub fn evaluate(index: &Index, catalog: &Catalog, labels: &[Label]) -> Report {
    evaluate_with(index, catalog, labels, None)
}

/// [`evaluate`], with `next_call` read from the select reply (`reply`
/// answers for `index` and `catalog`), and each reply timed.
pub fn evaluate_with(
    index: &Index,
    catalog: &Catalog,
    labels: &[Label],
    reply: Option<NextCall<'_>>,
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
        let next_call = match reply {
            Some(reply) => {
                let started = std::time::Instant::now();
                let next = reply(&label.query);
                reply_micros.push(started.elapsed().as_secs_f64() * 1e6);
                next
            }
            None => name(&ranking, 0),
        };
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
        trap_queries,
        traps_taken,
        rank_latency: Latency::of(rank_micros),
        reply_latency: Latency::of(reply_micros),
    }
}

fn latency_json(latency: Option<Latency>) -> Value {
    latency.map_or(Value::Null, |l| {
        json!({
            "p50_ms": (l.p50_ms * 1000.0).round() / 1000.0,
            "p99_ms": (l.p99_ms * 1000.0).round() / 1000.0,
            "max_ms": (l.max_ms * 1000.0).round() / 1000.0,
        })
    })
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

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

fn scores_json(scores: &Scores) -> Value {
    json!({
        "n": scores.n,
        "top1": round3(scores.top1),
        "top1_acceptable": round3(scores.top1_acceptable),
        "top3": round3(scores.top3),
        "mrr": round3(scores.mrr),
    })
}

/// The report as `eval --json` prints it: the overall scores at the top level.
pub fn to_json(report: &Report) -> Value {
    let mut value = scores_json(&report.overall);
    let extra = json!({
        "ranker": report.ranker,
        "modes": report.modes,
        "low_confidence": round3(report.low_confidence),
        "no_clear_fit": round3(report.no_clear_fit),
        "top1_when_confident": round3(report.top1_when_confident),
        "mean_confidence": round3(report.mean_confidence),
        "calibration_error": round3(report.calibration_error),
        "reliability": report
            .reliability
            .iter()
            .map(|b| json!({
                "from": round3(b.from),
                "n": b.n,
                "mean_confidence": round3(b.mean_confidence),
                "top1": round3(b.top1),
                "top1_acceptable": round3(b.top1_acceptable),
            }))
            .collect::<Vec<_>>(),
        "no_fit_queries": report.no_fit_queries,
        "no_fit_flagged": round3(report.no_fit_flagged),
        "asked_model": round3(report.asked_model),
        "next_call_from": report.next_call_from,
        "next_call_right": round3(report.next_call_right),
        "trap_queries": report.trap_queries,
        "traps_taken": report.traps_taken.len(),
        "traps_taken_list": report
            .traps_taken
            .iter()
            .map(|t| json!({"query": t.query, "expected": t.expected, "trap": t.trap}))
            .collect::<Vec<_>>(),
        "latency": {
            "build": if cfg!(debug_assertions) { "debug" } else { "release" },
            "rank": latency_json(report.rank_latency),
            "reply": latency_json(report.reply_latency),
        },
        "flagged_relevant": report.flagged_relevant,
        "no_fit_separation": report.no_fit_separation.map(|s| json!({
            "caught_with_a_tenth_flagged": round3(s.caught_with_a_tenth_flagged),
            "caught_with_a_twentieth_flagged": round3(s.caught_with_a_twentieth_flagged),
            "flagged_with_four_fifths_caught": round3(s.flagged_with_four_fifths_caught),
        })),
        "per_mode": report
            .per_mode
            .iter()
            .map(|(mode, scores)| (mode.clone(), scores_json(scores)))
            .collect::<serde_json::Map<String, Value>>(),
        "confusions": report
            .confusions
            .iter()
            .map(|((expected, got), count)| json!({"expected": expected, "got": got, "count": count}))
            .collect::<Vec<_>>(),
        "misses": report
            .misses
            .iter()
            .map(|miss| json!({
                "query": miss.query,
                "expected": miss.expected,
                "got": miss.got,
                "confidence": round3(miss.confidence),
                "rank": miss.rank,
            }))
            .collect::<Vec<_>>(),
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut value, extra) {
        base.extend(extra);
    }
    value
}

/// The report as a table for people.
pub fn to_table(report: &Report, show_misses: bool) -> String {
    let o = &report.overall;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} queries over {} modes ({} ranker)\n",
        o.n, report.modes, report.ranker
    );
    let _ = writeln!(
        out,
        "top-1 {:.3}   top-1 (acceptable) {:.3}   top-3 {:.3}   MRR {:.3}",
        o.top1, o.top1_acceptable, o.top3, o.mrr
    );
    let _ = writeln!(
        out,
        "low confidence {:.3}   fallback {:.3}   top-1 when confident {:.3}   mean confidence {:.3}   calibration error {:.3}\n",
        report.low_confidence,
        report.no_clear_fit,
        report.top1_when_confident,
        report.mean_confidence,
        report.calibration_error
    );
    let _ = writeln!(
        out,
        "next_call right {:.3} (from the {})",
        report.next_call_right, report.next_call_from
    );
    if report.trap_queries > 0 {
        let _ = writeln!(
            out,
            "destructive traps taken as next_call: {} of {} queries with traps",
            report.traps_taken.len(),
            report.trap_queries
        );
        for taken in &report.traps_taken {
            let _ = writeln!(
                out,
                "  {} instead of {}: {}",
                taken.trap,
                taken.expected.as_deref().unwrap_or("no fit"),
                taken.query
            );
        }
    }
    for (what, latency) in [
        ("one ranking", report.rank_latency),
        ("one select reply", report.reply_latency),
    ] {
        if let Some(l) = latency {
            let _ = writeln!(
                out,
                "latency of {what} on the built index: p50 {:.3} ms   p99 {:.3} ms   max {:.3} ms{}",
                l.p50_ms,
                l.p99_ms,
                l.max_ms,
                if cfg!(debug_assertions) {
                    " (debug build: not representative)"
                } else {
                    ""
                }
            );
        }
    }
    out.push('\n');
    if report.asked_model > 0.0 {
        let _ = writeln!(
            out,
            "ranked by the full model (the table was unsure): {:.3} of queries\n",
            report.asked_model
        );
    }
    if report.no_fit_queries > 0 {
        let _ = writeln!(
            out,
            "no-fit queries {}   flagged as no fit {:.3}   relevant queries flagged {:.3}\n",
            report.no_fit_queries, report.no_fit_flagged, report.no_clear_fit
        );
    }
    if let Some(separation) = report.no_fit_separation {
        let _ = writeln!(
            out,
            "best threshold in hindsight: {:.3} of no-fit queries caught with at most a tenth of relevant ones flagged, {:.3} with at most a twentieth; {:.3} of relevant ones flagged to catch four fifths\n",
            separation.caught_with_a_tenth_flagged,
            separation.caught_with_a_twentieth_flagged,
            separation.flagged_with_four_fifths_caught
        );
    }
    let width = report
        .per_mode
        .keys()
        .map(|m| m.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:>4}  {:>6}  {:>6}  {:>6}  {:>6}",
        "mode", "n", "top-1", "accept", "top-3", "MRR"
    );
    for (mode, s) in &report.per_mode {
        let _ = writeln!(
            out,
            "{mode:<width$}  {:>4}  {:>6.3}  {:>6.3}  {:>6.3}  {:>6.3}",
            s.n, s.top1, s.top1_acceptable, s.top3, s.mrr
        );
    }
    if !report.confusions.is_empty() {
        let _ = writeln!(
            out,
            "\nmost frequent confusions (expected -> ranked first):"
        );
        for ((expected, got), count) in &report.confusions {
            let _ = writeln!(out, "  {count:>3}  {expected} -> {got}");
        }
    }
    if show_misses && !report.misses.is_empty() {
        let _ = writeln!(out, "\nmisses:");
        for miss in &report.misses {
            let _ = writeln!(
                out,
                "  {} -> {} ({:.2}, expected at {}): {}",
                miss.expected,
                miss.got.as_deref().unwrap_or("nothing"),
                miss.confidence,
                miss.rank.map_or("-".to_owned(), |r| r.to_string()),
                miss.query
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::Ranker;

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
    fn parses_labels_and_skips_blank_lines() {
        let text = "{\"query\": \"q1\", \"expected\": \"debug\"}\n\n{\"query\": \"q2\", \"expected\": \"chat\", \"acceptable\": [\"thinkdeep\"]}\n";
        let labels = parse_labels(text, "t.jsonl").unwrap();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[1].acceptable, ["thinkdeep"]);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let text = "{\"query\": \"q\", \"expected\": \"debug\"}\n{\"query\": \"q\"}\n";
        let err = parse_labels(text, "t.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("t.jsonl:2: "), "{err}");
        let err = parse_labels("not json", "t.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("t.jsonl:1: "), "{err}");
        let err = parse_labels("{\"query\": \" \", \"expected\": \"x\"}", "t.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"query\" is empty"), "{err}");
        let err = parse_labels(
            "{\"query\": \"q\", \"expected\": \"x\", \"acceptible\": []}",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("acceptible"), "{err}");
        assert!(matches!(
            parse_labels("\n\n", "f"),
            Err(LabelsError::Empty { .. })
        ));
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = read_labels(Path::new("/no/such/labels.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/no/such/labels.jsonl"), "{err}");
    }

    #[test]
    fn unknown_modes_in_labels_are_rejected() {
        let catalog = Catalog::builtin().unwrap();
        let text = "\n{\"query\": \"q\", \"expected\": \"debgu\"}";
        let labels = parse_labels(text, "f").unwrap();
        let err = check_labels(&labels, &catalog, "f").unwrap_err();
        assert!(
            err.starts_with("f:2: ") && err.contains("\"debgu\"") && err.contains("debug"),
            "{err}"
        );
    }

    #[test]
    fn counts_the_traps_the_next_call_takes() {
        let catalog = Catalog::builtin().unwrap();
        let index = Index::build_with(&catalog, Ranker::Full);
        let labels = parse_labels(
            concat!(
                "{\"query\": \"write unit tests for the parser\", \"expected\": \"testgen\", \"traps\": [\"refactor\"]}\n",
                "{\"query\": \"find why the parser crashes\", \"expected\": \"debug\", \"traps\": [\"chat\"]}\n",
                "{\"query\": \"hello there\", \"expected\": null, \"traps\": [\"refactor\"]}\n",
            ),
            "f",
        )
        .unwrap();
        check_labels(&labels, &catalog, "f").unwrap();
        // A reply that always runs refactor takes two traps, whatever ranks.
        let always_refactor = |_: &str| Some("refactor".to_owned());
        let report = evaluate_with(&index, &catalog, &labels, Some(&always_refactor));
        assert_eq!(report.trap_queries, 3);
        let taken: Vec<&str> = report
            .traps_taken
            .iter()
            .map(|t| t.query.as_str())
            .collect();
        assert_eq!(taken, ["write unit tests for the parser", "hello there"]);
        assert_eq!(report.next_call_from, "reply");
        assert_eq!(report.next_call_right, 0.0);
        let json = to_json(&report);
        assert_eq!(json["traps_taken"], 2);
        assert!(to_table(&report, false).contains("destructive traps taken as next_call: 2 of 3"));
        let (rank, reply) = (report.rank_latency.unwrap(), report.reply_latency.unwrap());
        assert!(rank.p50_ms <= rank.p99_ms && rank.p99_ms <= rank.max_ms);
        assert!(reply.p50_ms <= reply.p99_ms);
        // A reply that runs what is expected takes none.
        let right = |q: &str| {
            labels
                .iter()
                .find(|l| l.query == q)
                .and_then(|l| l.expected.clone())
        };
        let report = evaluate_with(&index, &catalog, &labels, Some(&right));
        assert!(report.traps_taken.is_empty());
        assert_eq!(report.next_call_right, 1.0);
    }

    #[test]
    fn latency_percentiles_use_the_nearest_rank() {
        let micros: Vec<f64> = (1..=200).map(|i| f64::from(i) * 1000.0).collect();
        let l = Latency::of(micros).unwrap();
        assert_eq!((l.p50_ms, l.p99_ms, l.max_ms), (100.0, 198.0, 200.0));
        assert!(Latency::of(Vec::new()).is_none());
    }

    #[test]
    fn scores_a_tiny_set() {
        let catalog = Catalog::builtin().unwrap();
        let index = Index::build_with(&catalog, Ranker::Full);
        let labels = parse_labels(
            concat!(
                "{\"query\": \"write unit tests for the parser\", \"expected\": \"testgen\"}\n",
                "{\"query\": \"write unit tests for the parser\", \"expected\": \"debug\", \"acceptable\": [\"testgen\"]}\n",
                "{\"query\": \"zzzz qqqq\", \"expected\": \"chat\"}\n",
            ),
            "f",
        )
        .unwrap();
        let report = evaluate(&index, &catalog, &labels);
        assert_eq!(report.overall.n, 3);
        assert!((report.overall.top1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((report.overall.top1_acceptable - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(report.per_mode["testgen"].top1, 1.0);
        assert_eq!(report.per_mode["chat"].mrr, 0.0);
        assert_eq!(report.confusions, [(("debug".into(), "testgen".into()), 1)]);
        assert_eq!(report.misses.len(), 2);
        assert!(
            report
                .misses
                .iter()
                .any(|m| m.got.is_none() && m.rank.is_none())
        );

        let json = to_json(&report);
        for key in [
            "n",
            "top1",
            "top1_acceptable",
            "top3",
            "mrr",
            "per_mode",
            "confusions",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        let table = to_table(&report, true);
        assert!(
            table.contains("testgen") && table.contains("debug -> testgen"),
            "{table}"
        );
    }
}
