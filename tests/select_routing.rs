//! Routing over servers installed together (tests/data/routing): the sets
//! name tools of their profiles, and the served reply over a profile's
//! 270-500 tools is better with the shipped example requests than without,
//! and never offers a ready call to a tool that changes state for a benign
//! or off-topic request. The table alone here (what CI has without the
//! model); tests/transformer.rs measures the same with the model.

mod common;

use std::path::Path;
use std::process::Command;

use common::sets::{profile_catalog, profile_catalog_of, registry_dir, routing_dir};
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

/// `zenmode eval` with the table alone over `catalog`, `labels` (a path),
/// `extra` arguments and the `tuning` overrides.
fn eval_table(catalog: &Path, labels: &Path, extra: &[String], tuning: &str) -> Value {
    let mut command = Command::new(common::binary());
    command
        .arg("--catalog")
        .arg(catalog)
        .args(["--embedding-model", "none", "eval", "--json", "--labels"])
        .arg(labels)
        .args(extra)
        .env(zenmode::platform::settings::SELECT_TUNING, tuning);
    common::json_out(command)
}

/// Asserts that `better` serves at least `by` more of its requests than
/// `worse` ("with X" against "without X", as `what` names X).
fn assert_served_lift(set: &str, what: &str, better: &Value, worse: &Value, by: f64) {
    let served = |report: &Value| report["served_top1_acceptable"].as_f64().unwrap();
    eprintln!(
        "{set}: served {:.3} with {what}, {:.3} without",
        served(better),
        served(worse)
    );
    assert!(
        served(better) >= served(worse) + by,
        "{set}: {} against {} without {what}",
        served(better),
        served(worse)
    );
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

/// The example files (their `server` names) of `servers` and of their
/// copies written for other catalogs (`git-livemcp`).
fn example_servers_of(servers: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/examples");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if servers.iter().any(|s| {
            stem == *s || stem.starts_with(&format!("{s}-")) || stem.starts_with(&format!("{s}_"))
        }) {
            let file: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            names.push(file["server"].as_str().unwrap().to_owned());
        }
    }
    names
}

/// Four of the ops profile's servers without their examples, beside the
/// others with theirs: the lift given to tools without examples wins
/// their requests back from look-alikes that have examples (measured with
/// the table: 0.514 -> 0.581 served), and no benign or off-topic request
/// of the whole set gets a ready call to a changing tool.
#[test]
fn tools_without_examples_are_lifted_beside_tools_with_them_and_stay_safe() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = profile_catalog("ops", dir.path());
    let unseen = ["atlassian", "git", "notion", "stripe"];
    let mut withheld = Vec::new();
    for server in example_servers_of(&unseen) {
        withheld.push("--withhold-examples".to_owned());
        withheld.push(server);
    }
    assert!(withheld.len() >= 8, "{withheld:?}");
    let theirs: Vec<String> = std::fs::read_to_string(routing_dir().join("ops_tune.jsonl"))
        .unwrap()
        .lines()
        .filter(|line| {
            let label: Value = serde_json::from_str(line).unwrap();
            let server = label["expected"].as_str().unwrap_or("").split("__").next();
            server.is_some_and(|s| unseen.contains(&s))
        })
        .map(str::to_owned)
        .collect();
    assert!(theirs.len() >= 40, "{}", theirs.len());
    let labels = dir.path().join("unseen.jsonl");
    std::fs::write(&labels, theirs.join("\n") + "\n").unwrap();
    let run = |labels: &Path, tuning: &str| eval_table(&catalog, labels, &withheld, tuning);
    let lifted = run(&labels, "");
    let plain = run(&labels, "unseen_example_lift=0");
    assert_served_lift("the unseen servers", "the lift", &lifted, &plain, 0.03);
    let whole = run(&routing_dir().join("ops_tune.jsonl"), "");
    for list in ["benign_changing_list", "offtopic_changing_list"] {
        assert_eq!(whole[list], json!([]), "{list}");
    }
}

/// `--withhold-examples` for every server of tests/data/registry.
fn registry_servers_withheld() -> Vec<String> {
    let mut withheld = Vec::new();
    for entry in std::fs::read_dir(registry_dir()).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "json") && stem != "profiles" {
            withheld.push("--withhold-examples".to_owned());
            withheld.push(stem);
        }
    }
    withheld
}

/// Servers captured from their npm and PyPI packages (tests/data/registry),
/// beside servers that had examples before: their requests were written by
/// other writers than their examples, who saw neither. The examples lift
/// their served reply (measured with the table: 0.466 -> 0.711, 0.372 ->
/// 0.632, 0.701 -> 0.828, 0.665 -> 0.805, 0.661 -> 0.758, 0.729 -> 0.814
/// and 0.521 -> 0.701; the rules for tools without examples have since
/// closed part of the gap, product_eng's most: archiving as a change), and
/// with them no benign or off-topic
/// request gets a ready call to a tool that changes state.
#[test]
fn examples_written_for_new_servers_lift_their_requests_and_stay_safe() {
    let dir = tempfile::tempdir().unwrap();
    let captured = registry_servers_withheld();
    assert!(captured.len() >= 70, "{captured:?}");
    // The later profiles' servers were routed better without examples.
    let profiles = [
        ("search_data", 0.15),
        ("platform_crm", 0.15),
        ("browser_devops", 0.08),
        ("comms_knowledge", 0.10),
        ("product_eng", 0.07),
        ("media_messaging", 0.05),
        ("office365", 0.15),
    ];
    for (profile, least_lift) in profiles {
        let catalog = profile_catalog_of(&registry_dir(), profile, dir.path());
        let labels = registry_dir().join(format!("requests_{profile}.jsonl"));
        let loaded = zenmode::catalog::Catalog::load(&zenmode::catalog::CatalogSources {
            foreign_catalogs: vec![catalog.clone()],
            ..Default::default()
        })
        .unwrap();
        let file = zenmode::select::eval::read_labels(&labels).unwrap();
        zenmode::select::eval::check_labels(&file, &loaded, profile).unwrap();
        let with = eval_table(&catalog, &labels, &[], "");
        let without = eval_table(&catalog, &labels, &captured, "");
        assert_served_lift(profile, "their examples", &with, &without, least_lift);
        assert_eq!(with["benign_changing_list"], json!([]), "{profile}");
        // The table alone reads "set an alarm on my phone for 6:30" as a
        // calendar event to create (with the model, nothing fits).
        let near_fits: &[&str] = if profile == "media_messaging" {
            &["set an alarm on my phone for 6:30 tomorrow morning"]
        } else {
            &[]
        };
        for call in with["offtopic_changing_list"].as_array().unwrap() {
            let query = call["query"].as_str().unwrap();
            assert!(near_fits.contains(&query), "{profile}: {call}");
        }
    }
}

/// Servers never seen (the captured servers' examples withheld) beside
/// servers with examples: a request that writes words only one server's
/// tools use ("outlook", "namespace") goes to that server's tools more
/// often than to look-alikes with examples (measured with the table: 0.343
/// -> 0.372 served on platform_crm, 0.464 -> 0.519 on office365), and no
/// benign request gets a ready call to a changing tool for it.
#[test]
fn a_servers_own_words_lift_its_tools_without_examples() {
    let dir = tempfile::tempdir().unwrap();
    let withheld = registry_servers_withheld();
    for (profile, least_lift) in [("platform_crm", 0.015), ("office365", 0.03)] {
        let catalog = profile_catalog_of(&registry_dir(), profile, dir.path());
        let labels = registry_dir().join(format!("requests_{profile}.jsonl"));
        let worded = eval_table(&catalog, &labels, &withheld, "");
        let plain = eval_table(&catalog, &labels, &withheld, "server_vocabulary=1");
        assert_served_lift(
            profile,
            "the servers' own words",
            &worded,
            &plain,
            least_lift,
        );
        assert_eq!(worded["benign_changing_list"], json!([]), "{profile}");
    }
}

/// A server the request names only to rule it out ("Post in our Discord
/// #general, not Slack", "a Gmail draft, not a Notion page", "this isn't
/// jira") is not the one it means: its tools are held back instead of
/// lifted as a named server's are (`server_ruled_out=2` reads the name as
/// if it were meant). Measured with the table: product_eng 0.724 -> 0.753
/// served, media_messaging 0.800 -> 0.814; no benign request gets a ready
/// call to a changing tool for it.
#[test]
fn a_server_named_only_to_rule_it_out_is_not_the_one_meant() {
    let dir = tempfile::tempdir().unwrap();
    for (profile, least_lift) in [("product_eng", 0.02), ("media_messaging", 0.01)] {
        let catalog = profile_catalog_of(&registry_dir(), profile, dir.path());
        let labels = registry_dir().join(format!("requests_{profile}.jsonl"));
        let ruled_out = eval_table(&catalog, &labels, &[], "");
        let read_as_meant = eval_table(&catalog, &labels, &[], "server_ruled_out=2");
        assert_served_lift(
            profile,
            "names ruled out",
            &ruled_out,
            &read_as_meant,
            least_lift,
        );
        assert_eq!(ruled_out["benign_changing_list"], json!([]), "{profile}");
    }
}
