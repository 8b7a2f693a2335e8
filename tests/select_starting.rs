//! A select right after start-up finds the tools of a server that is still
//! starting (no cached catalog): it waits for it, bounded, while
//! `initialize` and `tools/list` answer at once.

mod common;

use std::time::{Duration, Instant};

use common::gateway::{Setup, flaky};
use serde_json::json;

#[test]
fn a_select_right_after_start_waits_for_a_starting_server() {
    // The server takes 3 s to start, and nothing of it is cached.
    let setup = Setup::new(json!({"slowfs": flaky(&["--start-delay", "3"])}));
    let started = Instant::now();
    let mut client = setup.serve(&[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    let listed = started.elapsed();
    let reply = client.tool(
        "zen_select_mode",
        json!({"task_description": "echo back the text hello world"}),
    );
    let text = common::text_of(&reply);
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap_or(json!({"raw": text}));
    let again = common::text_of(&client.tool(
        "zen_select_mode",
        json!({"task_description": "echo back the text hello world"}),
    ));
    assert_eq!(reply["mode"], "slowfs__echo", "{reply}\nagain: {again}");
    assert!(reply.get("unavailable").is_none(), "{reply}");
    assert!(
        listed < Duration::from_secs(3),
        "initialize and tools/list wait for nothing: {listed:?}"
    );
    client.finish();
}

#[test]
fn a_select_answers_without_a_server_that_never_finishes_starting() {
    // Longer than the select's wait (10 s): the reply comes without it,
    // and says it is still starting.
    let setup = Setup::new(json!({"stuck": flaky(&["--start-delay", "60"])}));
    let mut client = setup.serve(&["--upstream-wait-secs", "120"]);
    let reply = client.tool(
        "zen_select_mode",
        json!({"task_description": "echo back the text hello world"}),
    );
    let text = common::text_of(&reply);
    assert!(text.contains("stuck: still starting"), "{text}");
    client.finish();
}
