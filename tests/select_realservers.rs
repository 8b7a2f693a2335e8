//! The real-server evaluation set (tests/data/foreign/realservers): its
//! files parse, every label names a tool of its catalog, the halves are
//! large enough, disjoint and in step with their source, and `zenmode
//! eval` reports the destructive traps a reply takes as its `next_call`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use zenmode::{
    catalog::{Catalog, CatalogSources},
    select::eval::{self, Label},
};

fn set_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/foreign/realservers")
}

fn labels(file: &str) -> Vec<Label> {
    eval::read_labels(&set_dir().join(file)).unwrap_or_else(|e| panic!("{e}"))
}

fn catalog(builtin: bool) -> Catalog {
    Catalog::load(&CatalogSources {
        no_builtin: !builtin,
        foreign_catalogs: vec![set_dir().join("catalog.json")],
        ..Default::default()
    })
    .expect("the set's catalog loads")
}

/// (file, needs the built-in modes)
const FILES: [(&str, bool); 6] = [
    ("tune.jsonl", false),
    ("heldout.jsonl", false),
    ("builtin_tune.jsonl", true),
    ("builtin_heldout.jsonl", true),
    ("nofit_tune.jsonl", false),
    ("nofit_heldout.jsonl", false),
];

#[test]
fn every_file_parses_and_names_only_tools_of_its_catalog() {
    let (servers, mixed) = (catalog(false), catalog(true));
    assert_eq!(servers.len(), 51, "the six servers' tools");
    for (file, builtin) in FILES {
        let labels = labels(file);
        let catalog = if builtin { &mixed } else { &servers };
        eval::check_labels(&labels, catalog, file).unwrap_or_else(|e| panic!("{e}"));
        for label in &labels {
            let named: Vec<&String> = label.expected.iter().chain(&label.acceptable).collect();
            assert!(
                label.traps.iter().all(|t| !named.contains(&t)),
                "{file}:{}: a trap is also a right answer",
                label.line
            );
            if file.starts_with("nofit") {
                assert!(label.expected.is_none(), "{file}:{}", label.line);
            } else if file.starts_with("builtin") {
                let expected = label.expected.as_deref().unwrap();
                assert!(
                    !expected.contains("__"),
                    "{file}:{}: {expected}",
                    label.line
                );
            } else {
                let expected = label.expected.as_deref().unwrap_or_default();
                assert!(expected.contains("__"), "{file}:{}: {expected}", label.line);
            }
        }
    }
    // A server label names a server tool in the mixed catalog too (no
    // built-in mode shadows it).
    for file in ["tune.jsonl", "heldout.jsonl"] {
        eval::check_labels(&labels(file), &mixed, file).unwrap();
    }
}

#[test]
fn halves_are_large_disjoint_and_cover_every_tool_they_label() {
    let (tune, heldout) = (labels("tune.jsonl"), labels("heldout.jsonl"));
    assert!(
        tune.len() >= 150 && heldout.len() >= 150,
        "{} / {}",
        tune.len(),
        heldout.len()
    );
    assert!(tune.len().abs_diff(heldout.len()) <= 1);
    let queries = |l: &[Label]| l.iter().map(|l| l.query.clone()).collect::<BTreeSet<_>>();
    let (tq, hq) = (queries(&tune), queries(&heldout));
    assert_eq!(tq.len(), tune.len(), "a query repeats in tune");
    assert_eq!(hq.len(), heldout.len(), "a query repeats in held-out");
    assert!(tq.is_disjoint(&hq), "a query is in both halves");
    let expected = |l: &[Label]| {
        l.iter()
            .filter_map(|l| l.expected.clone())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        expected(&tune),
        expected(&heldout),
        "a tool is in one half only"
    );
    // Every one of the six servers is asked for.
    for server in ["filesystem", "memory", "git", "time", "fetch", "everything"] {
        assert!(
            expected(&tune)
                .iter()
                .any(|e| e.starts_with(&format!("{server}__"))),
            "{server}"
        );
    }
    // The destructive traps are a real part of the set.
    let with_traps = tune
        .iter()
        .chain(&heldout)
        .filter(|l| !l.traps.is_empty())
        .count();
    assert!(with_traps >= 100, "{with_traps} labels with traps");
}

/// A label's expected mode, acceptable modes and traps.
type LabelParts = (Option<String>, Vec<String>, Vec<String>);

/// The JSON lines are what split_realservers.py makes of requests.txt: the
/// same requests with the same labels, nothing added or lost.
#[test]
fn halves_are_in_step_with_their_source() {
    let source = std::fs::read_to_string(set_dir().join("requests.txt")).unwrap();
    let mut from_source: BTreeMap<String, LabelParts> = BTreeMap::new();
    let mut current = None;
    let names = |field: &str| -> Vec<String> {
        field
            .split(',')
            .map(|n| n.trim().trim_start_matches("builtin:").to_owned())
            .filter(|n| !n.is_empty())
            .collect()
    };
    for line in source.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('@') {
            let parts: Vec<&str> = header.split('|').map(str::trim).collect();
            let expected = match parts[0] {
                "null" => None,
                name => Some(name.trim_start_matches("builtin:").to_owned()),
            };
            let field = |i: usize| parts.get(i).map(|p| names(p)).unwrap_or_default();
            current = Some((expected, field(1), field(2)));
            continue;
        }
        let label = current.clone().expect("a request before any '@' line");
        assert!(
            from_source.insert(line.to_owned(), label).is_none(),
            "requests.txt repeats {line:?}"
        );
    }
    let mut from_files = BTreeMap::new();
    for (file, _) in FILES {
        for label in labels(file) {
            from_files.insert(
                label.query.clone(),
                (label.expected, label.acceptable, label.traps),
            );
        }
    }
    assert_eq!(from_source.len(), from_files.len());
    assert_eq!(
        from_source, from_files,
        "run scripts/embedding/split_realservers.py"
    );
    assert!(from_source.len() >= 300);
}

#[test]
fn the_issue_examples_are_in_the_set() {
    let all: Vec<Label> = ["tune.jsonl", "heldout.jsonl"]
        .iter()
        .flat_map(|f| labels(f))
        .collect();
    let find = |query: &str| {
        all.iter()
            .find(|l| l.query == query)
            .unwrap_or_else(|| panic!("{query:?} missing"))
    };
    let alice = find("store in the knowledge graph that Alice is an entity of type person");
    assert_eq!(alice.expected.as_deref(), Some("memory__create_entities"));
    assert_eq!(alice.traps, ["memory__delete_entities"]);
    let repo = find("what changed in my repo?");
    assert_eq!(repo.expected.as_deref(), Some("git__git_status"));
    assert!(
        repo.acceptable
            .iter()
            .any(|a| a.starts_with("git__git_diff"))
    );
    assert!(repo.traps.contains(&"git__git_commit".to_owned()));
    assert!(repo.traps.contains(&"git__git_reset".to_owned()));
}

/// Runs zenmode with its state, cache and configuration under `home`, so no
/// upstreams file of the machine's user joins the catalog.
fn zenmode(home: &Path, args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_zenmode"))
        .args(args)
        .env("ZEN_STATE_DIR", home.join("state"))
        .env("ZEN_CACHE_DIR", home.join("cache"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", home)
        .env_remove("ZEN_UPSTREAMS")
        .env_remove("ZEN_EMBEDDING_MODEL")
        // No model installed under the temporary home either.
        .env_remove("XDG_DATA_HOME")
        .env("ZEN_STORE", "memory:")
        .output()
        .expect("zenmode runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

/// Whatever the ranking answers, eval must count a trap that is the
/// reply's `next_call` and not count one that is not.
#[test]
fn eval_reports_the_traps_the_reply_takes() {
    let catalog = set_dir().join("catalog.json");
    let catalog = catalog.to_str().unwrap();
    let query = "remove the entity Bob from the knowledge graph";
    let dir = tempfile::tempdir().unwrap();
    let reply = zenmode(
        dir.path(),
        &[
            "--catalog",
            catalog,
            "--no-builtin-modes",
            "select",
            query,
            "--json",
        ],
    );
    let next = reply["next_call"]["arguments"]["mode"]
        .as_str()
        .expect("the reply offers a next call")
        .to_owned();
    let other = if next == "memory__read_graph" {
        "memory__search_nodes"
    } else {
        "memory__read_graph"
    };
    let file = dir.path().join("labels.jsonl");
    let line = |expected: &str, trap: &str| {
        serde_json::json!({"query": query, "expected": expected, "traps": [trap]}).to_string()
    };
    // Taken: the trap is what the reply runs. Not taken: a tool it does not.
    std::fs::write(
        &file,
        format!("{}\n{}\n", line(other, &next), line(&next, other)),
    )
    .unwrap();
    let report = zenmode(
        dir.path(),
        &[
            "--catalog",
            catalog,
            "--no-builtin-modes",
            "eval",
            "--json",
            "--labels",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(report["trap_queries"], 2, "{report}");
    assert_eq!(report["traps_taken"], 1, "{report}");
    let taken = &report["traps_taken_list"][0];
    assert_eq!(taken["trap"], next.as_str());
    assert_eq!(taken["expected"], other);
    assert_eq!(report["next_call_from"], "reply");
    assert!(
        report["next_call_right"].as_f64().unwrap() == 0.5,
        "{report}"
    );
    for kind in ["rank", "reply"] {
        let latency = &report["latency"][kind];
        let (p50, p99) = (
            latency["p50_ms"].as_f64().unwrap(),
            latency["p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{report}");
    }
}
