//! Every request to an upstream ends (an answer, an error or a timeout)
//! within its bound, whatever the upstream does: here a server that stops
//! reading its input (`tests/upstreams/stuck_server.py`, standard library
//! only). Each call below used to wait forever: its timeout struck, and
//! the cancel zenmode then sends queued behind a write the server never
//! read.

mod common;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use common::gateway::Setup;
use serde_json::{Value, json};

fn stuck_server(timeout: u64) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/stuck_server.py");
    json!({"command": "python3", "args": [script], "timeout": timeout, "idle_shutdown": 0})
}

fn call(id: &str, mode: &str, request: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "zen_execute", "arguments": {"mode": mode, "request": request}}})
}

/// A text longer than a pipe holds, so that writing it waits on the server.
fn long_text() -> String {
    "x".repeat(300_000)
}

#[test]
fn calls_to_a_server_that_stops_reading_end_within_their_timeout() {
    let setup = Setup::new(json!({"stuck": stuck_server(2)}));
    let mut client = setup.serve(&[]);
    // Started and answering first.
    client.send(&call("warm", "stuck__echo", json!({"text": "hi"})));
    let warm = client.reply_to(&json!("warm"));
    assert_eq!(
        warm["result"]["structuredContent"]["error"],
        Value::Null,
        "{warm}"
    );

    let started = Instant::now();
    client.send(&call("deaf", "stuck__deaf", json!({})));
    client.send(&call("long", "stuck__echo", json!({"text": long_text()})));
    for id in ["deaf", "long"] {
        let reply = client.reply_to(&json!(id));
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(
            reply["result"]["structuredContent"]["error"], "upstream_timeout",
            "{reply}"
        );
    }
    // The timeout is 2 s; rmcp's cancel and zenmode's own bound add at
    // most 2 more (generous for a loaded machine, far from "never").
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_server_writing_while_it_does_not_read_stalls_nothing() {
    let setup = Setup::new(json!({"stuck": stuck_server(15)}));
    // The 300 KB reply must cross whole, not as a result handle.
    let mut client = setup.serve(&["--result-handles", "off"]);
    client.send(&call("warm", "stuck__echo", json!({"text": "hi"})));
    client.reply_to(&json!("warm"));

    // While `jam` waits without reading, the long call fills its input;
    // then `jam` writes a line that is JSON but not JSON-RPC (rmcp answers
    // it with an error written to the server) and 2 MB more before it
    // reads again.
    client.send(&call("jam", "stuck__jam", json!({})));
    client.send(&call("long", "stuck__echo", json!({"text": long_text()})));
    let jam = client.reply_to(&json!("jam"));
    assert_eq!(
        jam["result"]["content"][0]["text"], "jammed and done",
        "{jam}"
    );
    let long = client.reply_to(&json!("long"));
    assert_eq!(
        long["result"]["content"][0]["text"].as_str().map(str::len),
        Some(300_000),
        "{}",
        &long.to_string()[..300]
    );
}
