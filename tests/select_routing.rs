//! Routing over servers installed together (tests/data/routing): the sets
//! name tools of their profiles, and the served reply over a profile's
//! 270-500 tools is better with the shipped example requests than without,
//! and never offers a ready call to a tool that changes state for a benign
//! or off-topic request. The table alone here (what CI has without the
//! model); tests/transformer.rs measures the same with the model.

mod common;

use std::path::Path;
use std::process::Command;

use common::sets::{profile_catalog, routing_dir};
use serde_json::{Value, json};

/// The four (set, profile) pairs.
const SETS: [(&str, &str); 4] = [
    ("web_tune.jsonl", "web"),
    ("ops_tune.jsonl", "ops"),
    ("developer_heldout.jsonl", "developer"),
    ("work_heldout.jsonl", "work"),
];

fn eval(catalog: &Path, labels: &str, extra: &[&str]) -> Value {
    let mut command = Command::new(common::binary());
    command
        .arg("--catalog")
        .arg(catalog)
        .args(["--embedding-model", "none", "eval", "--json", "--labels"])
        .arg(routing_dir().join(labels))
        .args(extra);
    common::json_out(command)
}

#[test]
fn every_routing_set_names_tools_of_its_profile_and_has_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    for (labels, profile) in SETS {
        let catalog = profile_catalog(profile, dir.path());
        let loaded = zenmode::catalog::Catalog::load(&zenmode::catalog::CatalogSources {
            foreign_catalogs: vec![catalog],
            ..Default::default()
        })
        .unwrap();
        let file = zenmode::select::eval::read_labels(&routing_dir().join(labels)).unwrap();
        zenmode::select::eval::check_labels(&file, &loaded, labels).unwrap();
        assert!(file.len() >= 200, "{labels}: {}", file.len());
        for kind in ["plain", "everyday", "lookalike", "benign", "offtopic"] {
            let count = file
                .iter()
                .filter(|l| l.kind.as_deref() == Some(kind))
                .count();
            assert!(count >= 20, "{labels}: {count} {kind} requests");
        }
        assert!(
            file.iter()
                .filter(|l| l.kind.as_deref() == Some("benign"))
                .all(|l| l.benign && l.expected.is_some()),
            "{labels}: a benign request without its read-only tool"
        );
    }
}

/// Measured 2026-12-01 with the table alone, served top-1 (acceptable)
/// with the examples against without: see docs/benchmarks.md. The floors
/// sit a few points under the measured lift.
#[test]
fn shipped_examples_lift_the_served_reply_and_no_benign_request_gets_a_changing_call() {
    let dir = tempfile::tempdir().unwrap();
    for (labels, profile) in SETS {
        let catalog = profile_catalog(profile, dir.path());
        let with = eval(&catalog, labels, &[]);
        let without = eval(&catalog, labels, &["--withhold-examples", "all"]);
        let served = |report: &Value| report["served_top1_acceptable"].as_f64().unwrap();
        let recall = |report: &Value| report["reply_recall"].as_f64().unwrap();
        eprintln!(
            "{labels}: served {:.3} (without examples {:.3}), right tool shown {:.3} ({:.3})",
            served(&with),
            served(&without),
            recall(&with),
            recall(&without)
        );
        assert!(
            served(&with) >= served(&without) + 0.10,
            "{labels}: {} against {} without examples",
            served(&with),
            served(&without)
        );
        assert!(recall(&with) > recall(&without), "{labels}");
        for list in ["benign_changing_list", "offtopic_changing_list"] {
            assert_eq!(with[list], json!([]), "{labels}: {list}");
        }
    }
}
