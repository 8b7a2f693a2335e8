//! The evaluation's report as `zenmode eval` prints it: JSON
//! ([`to_json`], `eval --json`) or a table for people ([`to_table`]).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::metrics::{Latency, Report, Scores};

fn latency_json(latency: Option<Latency>) -> Value {
    latency.map_or(Value::Null, |l| {
        json!({
            "p50_ms": (l.p50_ms * 1000.0).round() / 1000.0,
            "p99_ms": (l.p99_ms * 1000.0).round() / 1000.0,
            "max_ms": (l.max_ms * 1000.0).round() / 1000.0,
        })
    })
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
        "served_top1": round3(report.served_top1),
        "served_top1_acceptable": round3(report.served_top1_acceptable),
        "reply_recall": round3(report.reply_recall),
        "benign_queries": report.benign_queries,
        "benign_changing_calls": report.benign_changing.len(),
        "offtopic_changing_calls": report.offtopic_changing.len(),
        "offtopic_changing_list": report
            .offtopic_changing
            .iter()
            .map(|c| json!({"query": c.query, "tool": c.tool}))
            .collect::<Vec<_>>(),
        "change_queries": report.change_queries,
        "change_served": round3(report.change_served),
        "benign_changing_list": report
            .benign_changing
            .iter()
            .map(|c| json!({"query": c.query, "tool": c.tool}))
            .collect::<Vec<_>>(),
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
        "next_call right {:.3} (from the {})   served reply: top-1 {:.3}, top-1 (acceptable) {:.3}, right mode shown {:.3}",
        report.next_call_right,
        report.next_call_from,
        report.served_top1,
        report.served_top1_acceptable,
        report.reply_recall
    );
    if report.change_queries > 0 {
        let _ = writeln!(
            out,
            "requests for a change whose next_call is the changing tool asked for: {:.3} of {}",
            report.change_served, report.change_queries
        );
    }
    if report.benign_queries > 0 {
        let _ = writeln!(
            out,
            "state-changing next_calls on benign queries: {} of {}",
            report.benign_changing.len(),
            report.benign_queries
        );
        for call in &report.benign_changing {
            let _ = writeln!(out, "  {}: {}", call.tool, call.query);
        }
    }
    if report.no_fit_queries > 0 {
        let _ = writeln!(
            out,
            "state-changing next_calls on queries no mode fits: {} of {}",
            report.offtopic_changing.len(),
            report.no_fit_queries
        );
        for call in &report.offtopic_changing {
            let _ = writeln!(out, "  {}: {}", call.tool, call.query);
        }
    }
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
    use crate::{
        catalog::Catalog,
        select::{
            eval::{
                labels::{check_labels, parse_labels},
                metrics::{Served, evaluate, evaluate_with},
            },
            index::Index,
            tuning::Ranker,
        },
    };

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
        let always_refactor = |_: &str| calls("refactor");
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
            let expected = labels.iter().find(|l| l.query == q).unwrap();
            expected
                .expected
                .as_deref()
                .map_or_else(Served::default, calls)
        };
        let report = evaluate_with(&index, &catalog, &labels, Some(&right));
        assert!(report.traps_taken.is_empty());
        assert_eq!(report.next_call_right, 1.0);
    }

    /// A reply whose mode, next call and only tool shown is `mode`.
    fn calls(mode: &str) -> Served {
        Served {
            mode: Some(mode.to_owned()),
            next_call: Some(mode.to_owned()),
            shown: vec![mode.to_owned()],
            ready: vec![mode.to_owned()],
        }
    }

    /// The six reference servers' tools (with their annotations).
    fn real_servers() -> Catalog {
        Catalog::load(&crate::catalog::CatalogSources {
            no_builtin: true,
            foreign_catalogs: vec![
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/data/foreign/realservers/catalog.json"),
            ],
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn scores_the_served_reply_apart_from_the_ranking() {
        let catalog = real_servers();
        let index = Index::build_with(&catalog, Ranker::Full);
        let labels = parse_labels(
            concat!(
                "{\"query\": \"what changed in my repo?\", \"expected\": \"git__git_status\", \"acceptable\": [\"git__git_diff\"], \"benign\": true}\n",
                "{\"query\": \"don't commit, just show me the staged diff\", \"expected\": \"git__git_diff_staged\", \"benign\": true}\n",
                "{\"query\": \"which branch am I on\", \"expected\": \"git__git_branch\", \"benign\": true}\n",
                "{\"query\": \"commit my staged changes\", \"expected\": \"git__git_commit\"}\n",
            ),
            "f",
        )
        .unwrap();
        check_labels(&labels, &catalog, "f").unwrap();
        // Replies made up per query: one right, one acceptable and shown
        // third, one that falls back without the right tool and runs a
        // commit, one right that also runs a commit (asked for).
        let reply = |query: &str| {
            let served = |mode: &str, next: Option<&str>, shown: &[&str]| Served {
                mode: Some(mode.to_owned()),
                next_call: next.map(str::to_owned),
                shown: shown.iter().map(|s| (*s).to_owned()).collect(),
                ready: next.map(str::to_owned).into_iter().collect(),
            };
            match query {
                "what changed in my repo?" => served(
                    "git__git_status",
                    Some("git__git_status"),
                    &["git__git_status"],
                ),
                "don't commit, just show me the staged diff" => served(
                    "git__git_diff",
                    Some("git__git_add"),
                    &["git__git_diff", "git__git_log", "git__git_diff_staged"],
                ),
                "which branch am I on" => {
                    served("chat", Some("git__git_checkout"), &["chat", "git__git_log"])
                }
                _ => calls("git__git_commit"),
            }
        };
        let report = evaluate_with(&index, &catalog, &labels, Some(&reply));
        assert_eq!(report.overall.n, 4);
        // Exactly right: the first and the last; with acceptable modes the
        // same (the second's mode is acceptable for another query only).
        assert_eq!(report.served_top1, 0.5);
        assert_eq!(report.served_top1_acceptable, 0.5);
        // Shown: all but the third.
        assert_eq!(report.reply_recall, 0.75);
        // Asking for a change: the commit, served.
        assert_eq!((report.change_queries, report.change_served), (1, 1.0));
        // Benign: three; two ran a tool that changes state (git_add is not
        // read-only by its annotation, git_checkout by its annotation too),
        // the commit was asked for and is no benign query.
        assert_eq!(report.benign_queries, 3);
        let changing: Vec<(&str, &str)> = report
            .benign_changing
            .iter()
            .map(|c| (c.query.as_str(), c.tool.as_str()))
            .collect();
        assert_eq!(
            changing,
            [
                ("don't commit, just show me the staged diff", "git__git_add"),
                ("which branch am I on", "git__git_checkout"),
            ]
        );
        let json = to_json(&report);
        assert_eq!(json["served_top1"], 0.5);
        assert_eq!(json["reply_recall"], 0.75);
        assert_eq!(json["benign_changing_calls"], 2);
        let table = to_table(&report, false);
        assert!(
            table.contains("served reply: top-1 0.500")
                && table.contains("right mode shown 0.750")
                && table.contains("state-changing next_calls on benign queries: 2 of 3"),
            "{table}"
        );
        // Without a reply the ranking is the reply: served top-1 is top-1.
        let report = evaluate(&index, &catalog, &labels);
        assert_eq!(report.served_top1, report.overall.top1);
        assert!(report.reply_recall >= report.overall.top1);
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
