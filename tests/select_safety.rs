//! The served reply never offers a ready call to a tool that changes state
//! for a request that rules that change out or only asks to be told, and
//! still does for a request that asks for the change. On the real-server
//! catalog (tests/data/foreign/realservers).

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn reply(task: &str) -> Value {
    let catalog =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/foreign/realservers/catalog.json");
    let output = Command::new(common::binary())
        .args([
            "select",
            "--json",
            "--no-builtin-modes",
            "--embedding-model",
            "none",
        ])
        .arg("--catalog")
        .arg(&catalog)
        .arg(task)
        .env("RUST_LOG", "error")
        .env("ZEN_UPSTREAMS", "/nonexistent/upstreams.json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
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
