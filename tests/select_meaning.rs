//! Selection of tools that have no example phrasings: the meaning signal,
//! its fusion with the lexical one, and no-fit detection, on foreign sets.
//!
//! The sets are BFCL v4 (Apache-2.0; scripts/embedding/README.md):
//! `bfcl_multiple` (443 functions, 200 queries, in ../shared/routing),
//! `bfcl_live` (457 real-user functions, 1,053 queries, split into a dev half
//! and a held-out half that no setting was chosen on) and
//! `bfcl_irrelevance` (884 real requests that the bfcl_multiple catalog does
//! not serve, as no-fit queries), plus MetaTool (MIT; 199 ChatGPT plugins
//! with one-line descriptions, queries written per tool, and requests that
//! need no tool at all). The embedding baseline figures are those of the full
//! all-MiniLM-L6-v2 model on the same sets (`scripts/embedding/baseline.py`);
//! docs/benchmarks.md ("Tools without example phrasings") has the tables.

mod common;

use common::sets::{catalog, labels, root};
use zenmode::{
    catalog::{Catalog, CatalogSources, Manifest, Mode, Origin},
    select::eval::{self, Label, Report, Scores},
    select::{Index, Ranker, Tuning},
};

fn live() -> (Catalog, Vec<Label>, Vec<Label>) {
    let dir = root().join("tests/data/foreign/bfcl_live");
    (
        catalog(dir.join("catalog.json")),
        labels(dir.join("dev.jsonl")),
        labels(dir.join("heldout.jsonl")),
    )
}

fn multiple() -> (Catalog, Vec<Label>) {
    let dir = root().join("../shared/routing/bfcl_multiple");
    (
        catalog(dir.join("global_catalog.json")),
        labels(dir.join("global_labels.jsonl")),
    )
}

fn metatool() -> (Catalog, Vec<Label>, Vec<Label>) {
    let dir = root().join("tests/data/foreign/metatool");
    (
        catalog(dir.join("catalog.json")),
        labels(dir.join("dev.jsonl")),
        labels(dir.join("heldout.jsonl")),
    )
}

fn evaluate(catalog: &Catalog, ranker: Ranker, labels: &[Label]) -> Report {
    let index = Index::build_with(catalog, ranker);
    eval::evaluate(&index, catalog, labels)
}

/// all-MiniLM-L6-v2 (top-1, MRR) on the same sets, measured with
/// scripts/embedding/baseline.py.
const MINILM_MULTIPLE: (f64, f64) = (0.750, 0.843);
const MINILM_LIVE_DEV: (f64, f64) = (0.637, 0.757);
const MINILM_LIVE_HELDOUT: (f64, f64) = (0.627, 0.741);

fn assert_beats(name: &str, scores: &Scores, (top1, mrr): (f64, f64)) {
    assert!(
        scores.top1 > top1 && scores.mrr > mrr,
        "{name}: top-1 {:.3} / MRR {:.3} does not beat the embedding baseline {top1} / {mrr}",
        scores.top1,
        scores.mrr
    );
}

#[test]
fn the_fused_ranker_beats_the_embedding_baseline() {
    let (live, dev, heldout) = live();
    let (multiple, multiple_labels) = multiple();
    assert_beats(
        "bfcl_multiple",
        &evaluate(&multiple, Ranker::Full, &multiple_labels).overall,
        MINILM_MULTIPLE,
    );
    assert_beats(
        "bfcl_live dev",
        &evaluate(&live, Ranker::Full, &dev).overall,
        MINILM_LIVE_DEV,
    );
    assert_beats(
        "bfcl_live held-out",
        &evaluate(&live, Ranker::Full, &heldout).overall,
        MINILM_LIVE_HELDOUT,
    );
}

/// Fusion has to earn its place: on both halves of the live set and of
/// MetaTool it beats every signal alone and plain BM25.
#[test]
fn fusion_beats_each_signal_alone() {
    let (live, live_dev, live_heldout) = live();
    let (metatool, metatool_dev, metatool_heldout) = metatool();
    for (half, catalog, labels) in [
        ("bfcl_live dev", &live, &live_dev),
        ("bfcl_live held-out", &live, &live_heldout),
        ("MetaTool dev", &metatool, &metatool_dev),
        ("MetaTool held-out", &metatool, &metatool_heldout),
    ] {
        let fused = evaluate(catalog, Ranker::Full, labels).overall;
        for ranker in [
            Ranker::Lexical,
            Ranker::Embed,
            Ranker::Phrasing,
            Ranker::Bm25,
        ] {
            let alone = evaluate(catalog, ranker, labels).overall;
            assert!(
                fused.top1 > alone.top1 && fused.mrr > alone.mrr,
                "{half}: fused {fused:?} vs {} {alone:?}",
                ranker.as_str()
            );
        }
    }
}

/// Only catalogs with a mode lacking example phrasings load the table: the
/// built-in modes rank (and start) exactly as before.
#[test]
fn the_meaning_signal_runs_only_where_examples_are_missing() {
    assert!(!Index::build(&Catalog::builtin().unwrap()).uses_meaning());
    let (live, _, _) = live();
    assert!(Index::build(&live).uses_meaning());
    // Calibrated per catalog: two catalogs get different no-fit scores.
    let (multiple, _) = multiple();
    let (a, b) = (
        Index::build(&live).no_fit_score(),
        Index::build(&multiple).no_fit_score(),
    );
    assert!(a > 0.0 && b > 0.0 && a != b, "{a} {b}");
}

/// Real requests the catalog has no tool for are flagged; requests it
/// serves almost never are. Floors sit a little under the measured figures
/// (dev half: 0.594 flagged, 0.005 of relevant queries flagged; held-out
/// half: 0.675 and 0.005; at the probes' 67% quantile, before
/// docs/decisions/0015: 0.756 / 0.814 and 0.080).
#[test]
fn no_fit_detection_on_irrelevant_requests() {
    let (multiple, mut pooled) = multiple();
    let relevant = pooled.len();
    for half in ["dev", "heldout"] {
        pooled.truncate(relevant);
        pooled.extend(labels(
            root().join(format!("tests/data/foreign/bfcl_irrelevance/{half}.jsonl")),
        ));
        let report = evaluate(&multiple, Ranker::Full, &pooled);
        assert!(report.no_fit_queries > 400);
        assert!(
            report.no_fit_flagged >= 0.57,
            "{half}: only {:.3} of no-fit queries flagged",
            report.no_fit_flagged
        );
        assert!(
            report.no_clear_fit <= 0.03,
            "{half}: {:.3} of relevant queries flagged as no fit",
            report.no_clear_fit
        );
        // Whatever the threshold: the scores themselves keep the two kinds
        // apart (0.765 and 0.834 of no-fit queries caught at the best
        // threshold that flags a tenth of relevant ones).
        let separation = report.no_fit_separation.expect("both kinds of queries");
        assert!(
            separation.caught_with_a_tenth_flagged >= 0.75,
            "{half}: {separation:?}"
        );
    }
}

/// Holding tools out turns their queries into no-fit queries; the split
/// depends only on names, so it is the same in every run.
#[test]
fn hold_out_makes_no_fit_queries_deterministically() {
    let (live, dev, _) = live();
    let (held_catalog, held_labels) = eval::hold_out(&live, &dev, 0.25);
    let (again, _) = eval::hold_out(&live, &dev, 0.25);
    assert_eq!(
        held_catalog.names().collect::<Vec<_>>(),
        again.names().collect::<Vec<_>>()
    );
    let no_fit = held_labels.iter().filter(|l| l.expected.is_none()).count();
    assert!(
        no_fit > dev.len() / 10 && no_fit < dev.len() / 2,
        "{no_fit}"
    );
    assert!(held_catalog.len() < live.len());
    for label in held_labels.iter().filter_map(|l| l.expected.as_deref()) {
        assert!(held_catalog.get(label).is_some());
    }
}

/// Imported descriptions are untrusted: one stuffed with the catalog's
/// most common words must not capture queries meant for other tools.
#[test]
fn a_poisoned_description_does_not_win_every_query() {
    let (live, dev, _) = live();
    let stuffing = "get the list of all user data for a given name and id, find search create \
                    update delete information details specific request value type date time \
                    location number string ";
    let poisoned = serde_json::json!({
        "name": "helpful_tool", "title": "helpful_tool", "summary": "Does everything.",
        "description": stuffing.repeat(60), "category": "utility",
        "schema": {"type": "object", "properties": {}}
    });
    let poisoned = Mode::new(
        Manifest::parse(&poisoned.to_string(), None).unwrap(),
        Origin::Builtin,
    );
    let clean = evaluate(&live, Ranker::Full, &dev).overall;
    let with_poison = live.without(|_| false).with_modes([poisoned]);
    let index = Index::build(&with_poison);
    let report = eval::evaluate(&index, &with_poison, &dev);
    let captured = dev
        .iter()
        .filter(|label| {
            let best = index.rank(&label.query)[0].mode_index;
            with_poison.modes()[best].name() == "helpful_tool"
        })
        .count();
    eprintln!(
        "poisoned tool first for {captured} queries; top-1 {:.3} -> {:.3}",
        clean.top1, report.overall.top1
    );
    assert!(
        captured * 50 <= dev.len(),
        "the poisoned tool ranked first for {captured} of {} queries",
        dev.len()
    );
    assert!(
        report.overall.top1 >= clean.top1 - 0.02,
        "top-1 fell from {:.3} to {:.3}",
        clean.top1,
        report.overall.top1
    );
}

/// The gateway's usual catalog: the built-in modes beside imported tools.
/// The built-in modes rank by their example phrasings, not by meaning, so
/// they do not take requests meant for the tools (live dev half: top-1
/// 0.646 with built-ins present, 0.558 when the built-in modes were scored
/// by meaning too), and they keep their own requests (dev set: 0.955).
#[test]
fn built_in_modes_beside_imported_tools_keep_to_their_own_requests() {
    let dir = root().join("tests/data/foreign/bfcl_live");
    let mixed = Catalog::load(&CatalogSources {
        foreign_catalogs: vec![dir.join("catalog.json")],
        ..Default::default()
    })
    .expect("catalog loads");
    assert!(mixed.get("chat").is_some() && mixed.len() > 400);
    let tools = evaluate(&mixed, Ranker::Full, &labels(dir.join("dev.jsonl")));
    assert!(
        tools.overall.top1 >= 0.62,
        "imported tools, built-ins present: top-1 {:.3}",
        tools.overall.top1
    );
    let own = evaluate(
        &mixed,
        Ranker::Full,
        &labels(root().join("tests/data/select_dev.jsonl")),
    );
    assert!(
        own.overall.top1 >= 0.94,
        "built-in modes beside imported tools: top-1 {:.3}",
        own.overall.top1
    );
}

/// MetaTool is where the static table falls furthest behind the full model
/// (meaning alone 0.578 top-1 against the full model's 0.619; fused 0.597,
/// see docs/benchmarks.md). Floors sit a little under the measured figures
/// (dev half: top-1 0.583, MRR 0.672, 0.668 of the requests that need no
/// tool flagged and 0.160 of the relevant ones; held-out: 0.584, 0.662,
/// 0.667 and 0.187; with the no-fit bar at the probes' 67% quantile,
/// before docs/decisions/0015, 0.781 / 0.304 and 0.822 / 0.309). Before the word-by-word match: 0.579, 0.668, 0.703
/// and 0.269 (held-out 0.572, 0.658, 0.769, 0.275); with the table refined
/// on 64,000 texts: 0.569, 0.655, 0.734 and 0.299; before any refinement:
/// 0.524, 0.621, 0.656 and 0.214.
#[test]
fn metatool_keeps_its_floors() {
    let (catalog, dev, heldout) = metatool();
    assert_eq!(catalog.len(), 199);
    for (half, labels) in [("dev", &dev), ("held-out", &heldout)] {
        let report = evaluate(&catalog, Ranker::Full, labels);
        assert!(
            report.overall.top1 >= 0.57 && report.overall.mrr >= 0.65,
            "{half}: top-1 {:.3} / MRR {:.3}",
            report.overall.top1,
            report.overall.mrr
        );
        assert!(report.no_fit_queries > 200);
        assert!(
            report.no_fit_flagged >= 0.64 && report.no_clear_fit <= 0.21,
            "{half}: {:.3} of no-fit queries and {:.3} of relevant ones flagged",
            report.no_fit_flagged,
            report.no_clear_fit
        );
    }
}

/// A request that names a day ("the weather in Phoenix on Friday",
/// "what's on my calendar on March 12") wants the tool that takes one over
/// its sibling that does not (the current conditions, every event): on both
/// halves of the live set, with the table alone, the day's pull serves more
/// of the requests than no pull does.
#[test]
fn a_day_the_request_names_points_to_the_tools_that_take_one() {
    let (live, dev, heldout) = live();
    for (half, labels) in [("dev", &dev), ("held-out", &heldout)] {
        let top1 = |date_match: f32| {
            let tuning = Tuning {
                date_match,
                ..Tuning::DEFAULT
            };
            let index = Index::build_tuned(&live, Ranker::Full, tuning);
            eval::evaluate(&index, &live, labels).overall.top1
        };
        let (with_days, without) = (top1(Tuning::DEFAULT.date_match), top1(0.0));
        eprintln!("bfcl_live {half}: {with_days:.3} with days, {without:.3} without");
        assert!(with_days > without, "{half}: {with_days} against {without}");
    }
}
