//! The served reply never offers a ready call to a tool that changes state
//! for a request that rules that change out or only asks to be told, and
//! still does for a request that asks for the change. On the real-server
//! catalog (tests/data/foreign/realservers), and on the routing-safety sets
//! (tests/data/safety: git, memory, filesystem and GitHub), whose figures
//! `zenmode eval` reports.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn reply(task: &str) -> Value {
    let catalog =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/foreign/realservers/catalog.json");
    reply_over(&catalog, task)
}

/// The served reply over `catalog`'s tools alone, by the table.
fn reply_over(catalog: &Path, task: &str) -> Value {
    let mut command = Command::new(common::binary());
    command
        .args([
            "select",
            "--json",
            "--no-builtin-modes",
            "--embedding-model",
            "none",
        ])
        .arg("--catalog")
        .arg(catalog)
        .arg(task);
    common::json_out(command)
}

fn ready_call(reply: &Value) -> Option<&str> {
    reply
        .pointer("/next_call/arguments/mode")
        .and_then(Value::as_str)
}

/// The catalog's tools that change state, as their names say.
fn changes_state(mode: &str) -> bool {
    let tool = mode.rsplit("__").next().unwrap_or(mode);
    [
        "create", "add", "delete", "remove", "write", "edit", "move", "commit", "reset",
        "checkout", "branch",
    ]
    .iter()
    .any(|verb| tool.contains(verb))
}

#[test]
fn a_negated_or_looked_up_change_gets_no_ready_call_to_a_changing_tool() {
    for task in [
        "don't commit anything, just show me the staged diff",
        "do not delete the entity Alice, just tell me what observations it has",
        "without deleting anything, tell me which entities are in the graph",
        "instead of overwriting config.yaml, show me what it contains",
        "never create a branch here, just list what branches exist",
        "look up the entity Alice in the knowledge graph",
        "check whether the file notes.txt exists",
        "can you show me what changed in the repo",
    ] {
        let reply = reply(task);
        if let Some(call) = ready_call(&reply) {
            // The tool's own annotation first, else its name.
            let read_only = reply["mode"] == call && reply["read_only"] == true;
            assert!(
                read_only || !changes_state(call),
                "{task:?} got a ready call to {call}: {reply}"
            );
        }
    }
}

#[test]
fn a_request_that_asks_for_the_change_still_gets_the_changing_tool() {
    for (task, tool) in [
        (
            "delete the entity Bob from the knowledge graph",
            "memory__delete_entities",
        ),
        (
            "commit my staged changes with the message fix typo",
            "git__git_commit",
        ),
        (
            "create a new branch called feature-x",
            "git__git_create_branch",
        ),
    ] {
        let reply = reply(task);
        let shown: Vec<&str> = std::iter::once(&reply["mode"])
            .chain(
                reply["alternatives"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| &a["mode"]),
            )
            .filter_map(Value::as_str)
            .collect();
        assert!(
            shown.contains(&tool),
            "{task:?}: {tool} not in {shown:?}: {reply}"
        );
    }
}

// ------------------------------------------------------------------------
// The routing-safety sets (tests/data/safety): benign requests near tools
// that change state, requests that ask for a change, and requests in
// everyday words, each split into a tune and a held-out half.

fn safety_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/safety")
}

fn safety_labels(file: &str) -> Vec<zenmode::select::eval::Label> {
    zenmode::select::eval::read_labels(&safety_dir().join(file)).unwrap_or_else(|e| panic!("{e}"))
}

const SETS: [&str; 3] = ["benign", "change", "vocabulary"];

/// `zenmode eval --json` on one file of the sets, the table alone (what CI
/// has without the model), with or without the built-in modes.
fn safety_eval(file: &str, builtin: bool) -> Value {
    let catalog = safety_dir().join("catalog.json");
    let labels = safety_dir().join(file);
    let mut command = Command::new(common::binary());
    command.arg("--catalog").arg(&catalog);
    if !builtin {
        command.arg("--no-builtin-modes");
    }
    command
        .args(["--embedding-model", "none", "eval", "--json", "--labels"])
        .arg(&labels);
    common::json_out(command)
}

#[test]
fn the_safety_sets_are_large_split_and_name_tools_of_their_catalog() {
    let catalog = zenmode::catalog::Catalog::load(&zenmode::catalog::CatalogSources {
        no_builtin: true,
        foreign_catalogs: vec![safety_dir().join("catalog.json")],
        ..Default::default()
    })
    .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for set in SETS {
        let source = std::fs::read_to_string(safety_dir().join(format!("{set}.txt"))).unwrap();
        let requests = source
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('@'))
            .count();
        let (tune, heldout) = (
            safety_labels(&format!("{set}_tune.jsonl")),
            safety_labels(&format!("{set}_heldout.jsonl")),
        );
        // In step with the source (scripts/embedding/split_safety.py).
        assert_eq!(tune.len() + heldout.len(), requests, "{set}");
        assert!(tune.len().abs_diff(heldout.len()) <= 1, "{set}");
        let at_least = match set {
            "benign" => 150,
            "change" => 100,
            _ => 60,
        };
        assert!(requests >= at_least, "{set}: {requests}");
        for (half, labels) in [("tune", &tune), ("heldout", &heldout)] {
            let file = format!("{set}_{half}.jsonl");
            zenmode::select::eval::check_labels(labels, &catalog, &file)
                .unwrap_or_else(|e| panic!("{e}"));
            for label in labels.iter() {
                assert!(
                    seen.insert(label.query.clone()),
                    "{file}: {:?} repeats",
                    label.query
                );
                let expected = label.expected.as_deref().expect("every request has a tool");
                let changing =
                    zenmode::select::changes_state(catalog.get(expected).unwrap().manifest());
                match set {
                    // A benign request's right answer changes nothing.
                    "benign" => assert!(label.benign && !changing, "{file}:{}", label.line),
                    "change" => assert!(!label.benign && changing, "{file}:{}", label.line),
                    _ => assert_eq!(label.benign, !changing, "{file}:{}", label.line),
                }
            }
        }
    }
}

/// Every benign request, in both halves and with or without the built-in
/// modes: no ready call to a tool that changes state.
#[test]
fn no_benign_request_of_the_safety_sets_gets_a_ready_call_to_a_changing_tool() {
    for set in ["benign", "vocabulary"] {
        for half in ["tune", "heldout"] {
            for builtin in [false, true] {
                let file = format!("{set}_{half}.jsonl");
                let report = safety_eval(&file, builtin);
                eprintln!(
                    "{file} (built-ins {builtin}): served top-1 {} shown {} benign {} changing calls {}",
                    report["served_top1"],
                    report["reply_recall"],
                    report["benign_queries"],
                    report["benign_changing_calls"]
                );
                assert!(report["benign_queries"].as_u64().unwrap() > 0, "{file}");
                assert_eq!(
                    report["benign_changing_calls"], 0,
                    "{file} (built-ins {builtin}): {}",
                    report["benign_changing_list"]
                );
            }
        }
    }
}

/// Requests that ask for a change get the tool that makes it as their
/// `next_call` for at least the stated share (the table alone, no
/// built-in modes; held-out read as a total). Measured 0.565 / 0.557
/// (0.629 / 0.607 before an unsure ranking stopped acting on a verb the
/// action classes do not know: the tool is still served, without the
/// ready call).
#[test]
fn requests_for_a_change_get_the_changing_tool_as_next_call() {
    for (half, floor) in [("tune", 0.54), ("heldout", 0.53)] {
        let file = format!("change_{half}.jsonl");
        let report = safety_eval(&file, false);
        let served = report["change_served"].as_f64().unwrap();
        eprintln!(
            "{file}: changing tool as next_call {served}, served top-1 {}, shown {}",
            report["served_top1"], report["reply_recall"]
        );
        assert!(report["change_queries"].as_u64().unwrap() >= 50, "{file}");
        assert!(served >= floor, "{file}: {served} < {floor}");
    }
}

/// Tools no shipped example describes (names no catalog uses): only the
/// action classes read what a request asks of them.
fn reply_over_unknown_tools(task: &str) -> Value {
    let tool = |name: &str, description: &str, read_only: bool| {
        serde_json::json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {"when": {"type": "string"}}},
            "annotations": {"readOnlyHint": read_only},
        })
    };
    let catalog = serde_json::json!({"tools": [
        tool("plan_create_calendar_entry", "Create a new calendar event at a given time.", false),
        tool("plan_list_calendar_entries", "List the calendar events between two times.", true),
        tool("view_take_screenshot", "Take a screenshot of the page or of one element.", false),
        tool("view_page_text", "Return the visible text of the page.", true),
    ]});
    let dir = std::env::temp_dir().join(format!("zen-unknown-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("catalog.json");
    std::fs::write(&path, catalog.to_string()).unwrap();
    reply_over(&path, task)
}

#[test]
fn a_changing_tool_without_examples_needs_a_verb_that_asks_for_its_change() {
    // A verb the action classes do not read may ask for something the
    // tool does not do: recommended, without a ready call.
    for (task, tool) in [
        (
            "set an alarm on my phone for 6:30 tomorrow morning",
            "plan_create_calendar_entry",
        ),
        (
            "don't click anything, just take a screenshot of the page",
            "view_take_screenshot",
        ),
    ] {
        let reply = reply_over_unknown_tools(task);
        assert_eq!(reply["mode"], tool, "{task:?}: {reply}");
        assert_eq!(ready_call(&reply), None, "{task:?}: {reply}");
    }
    // Asked in a verb of the tool's own action: a ready call.
    let task = "create a calendar event tomorrow at 6:30 called standup";
    let reply = reply_over_unknown_tools(task);
    assert_eq!(
        ready_call(&reply),
        Some("plan_create_calendar_entry"),
        "{task:?}: {reply}"
    );
}
