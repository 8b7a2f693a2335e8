//! Routing over servers installed together (tests/data/routing): the sets
//! name tools of their profiles, and the served reply over a profile's
//! 270-500 tools is better with the shipped example requests than without,
//! and never offers a ready call to a tool that changes state for a benign
//! or off-topic request. The table alone here (what CI has without the
//! model); tests/transformer.rs measures the same with the model.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn routing_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/routing")
}

/// The four (set, profile) pairs.
const SETS: [(&str, &str); 4] = [
    ("web_tune.jsonl", "web"),
    ("ops_tune.jsonl", "ops"),
    ("developer_heldout.jsonl", "developer"),
    ("work_heldout.jsonl", "work"),
];

/// Writes the catalog of `profile` (as scripts/examples/profile_catalog.py
/// does) into `dir`; its path.
fn profile_catalog(profile: &str, dir: &Path) -> PathBuf {
    let profiles: Value = serde_json::from_str(
        &std::fs::read_to_string(routing_dir().join("profiles.json")).unwrap(),
    )
    .unwrap();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/catalogs");
    let mut tools = Vec::new();
    for server in profiles[profile].as_array().expect("a profile") {
        let server = server.as_str().unwrap();
        let file = match server {
            "huly" => "huly_v0.1.35",
            "playwright" => "playwright_allcaps",
            other => other,
        };
        let catalog: Value = serde_json::from_str(
            &std::fs::read_to_string(shared.join(format!("{file}.json"))).unwrap(),
        )
        .unwrap();
        for tool in catalog["tools"].as_array().unwrap() {
            let mut tool = tool.clone();
            tool["name"] = json!(format!("{server}__{}", tool["name"].as_str().unwrap()));
            tool["server"] = json!(server);
            tools.push(tool);
        }
    }
    let path = dir.join(format!("{profile}.json"));
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    path
}

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
