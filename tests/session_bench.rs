//! The session benchmark (tests/peers/session_bench.py) under insta: a
//! change that costs model requests or tokens per task shows up in review.
//!
//! It drives real Claude Code and the MCP Python SDK, installed by
//! `tests/peers/run.sh`, and takes minutes, so it runs only with
//! `ZEN_SESSION_BENCH=1` (`.ci/run` sets it after the peer tests).
//!
//! Snapshotted: the eager client's requests and o200k tokens per task and
//! flow (deterministic: continuation ids are counted as one fixed id) and
//! Claude Code's requests per task and flow and whether each finished.
//! Claude Code's own token sums are not: its system prompt carries the date
//! and a temp path. The script itself fails when a target is missed (zen at
//! most 0.9x the full list's tokens in Claude Code and 0.1x in an eager
//! client, never more requests than full), so this test fails then too.
//!
//! The four tasks with large intermediate results (tests/peers/large_tasks.py,
//! over the real filesystem and memory servers of tests/upstreams/) go into
//! `session_bench_large`: per task and flow (direct calls, design 003's
//! tools, one script) the requests, the eager client's tokens and how the
//! task ended; the script fails when a script is over 0.5x the direct calls'
//! tokens in the eager client or a flow reaches a wrong answer.

use std::{path::Path, process::Command};

use serde_json::{Map, Value, json};

#[test]
fn tokens_and_requests_per_task() {
    if std::env::var("ZEN_SESSION_BENCH").as_deref() != Ok("1") {
        eprintln!("skipped: set ZEN_SESSION_BENCH=1 to run the session benchmark");
        return;
    }
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers");
    let python = peers.join(".venv/bin/python");
    assert!(
        python.exists() && peers.join("node_modules/.bin/claude").exists(),
        "run tests/peers/run.sh first: it installs the Python SDK and Claude Code"
    );
    let out = tempfile::tempdir().unwrap();
    let json_path = out.path().join("bench.json");
    let status = Command::new(&python)
        .arg(peers.join("session_bench.py"))
        .arg("--json")
        .arg(&json_path)
        .current_dir(&peers)
        .env("ZENMODE_BIN", env!("CARGO_BIN_EXE_zenmode"))
        .status()
        .expect("run session_bench.py");
    let figures: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("the bench wrote JSON"))
            .unwrap();
    assert!(
        status.success(),
        "the session benchmark missed a target or a task did not finish (see its output)"
    );

    let claude: Map<String, Value> = figures["claude_code"]["tasks"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, row)| (key.clone(), json!({"requests": row[0], "finished": row[2]})))
        .collect();
    let eager: Map<String, Value> = figures["eager"]["tasks"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, row)| {
            (
                key.clone(),
                json!({"requests": row[0], "o200k": row[1], "finished": row[2]}),
            )
        })
        .collect();
    // The tasks with large results (tests/peers/large_tasks.py): each row
    // is [requests, o200k, how it ended].
    let large = |client: &str, keep_tokens: bool| -> Map<String, Value> {
        figures["large"][client]["tasks"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(key, row)| {
                let mut figures = json!({"requests": row[0], "answer": row[2]});
                if keep_tokens {
                    figures["o200k"] = row[1].clone();
                }
                (key.clone(), figures)
            })
            .collect()
    };
    let large_figures = json!({
        "claude_code": large("claude_code", false),
        "eager": large("eager", true),
        "eager_totals": figures["large"]["eager"]["totals"],
    });
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, sort_maps => true}, {
        insta::assert_json_snapshot!("session_bench_claude_code", claude);
        insta::assert_json_snapshot!("session_bench_eager", eager);
        insta::assert_json_snapshot!("session_bench_eager_totals", figures["eager"]["totals"]);
        insta::assert_json_snapshot!("session_bench_large", large_figures);
    });
}
