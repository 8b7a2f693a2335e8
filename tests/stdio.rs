//! The built binary over stdio: tool lists, select, execute, laziness and bad input.

mod common;

use std::process::Stdio;

use common::{Client, stateless_meta, structured, zenmode};
use serde_json::{Value, json};

const META_TOOLS: [&str; 2] = ["zen_select_mode", "zen_execute"];

#[test]
fn optimized_list_has_exactly_the_two_meta_tools() {
    let mut client = Client::spawn(&["serve"]);
    let info = client.initialize();
    assert_eq!(info["serverInfo"]["name"], "zenmode");
    assert_eq!(info["protocolVersion"], common::LEGACY_VERSION);
    assert_eq!(client.tool_names(), META_TOOLS);
    // The list is the same on every call.
    let first = client.call("tools/list", Value::Null);
    let second = client.call("tools/list", Value::Null);
    assert_eq!(first, second);
    assert!(client.finish().success());
}

#[test]
fn full_list_has_every_mode_with_schema_and_annotations() {
    for args in [&["serve", "--full"][..], &["serve"][..]] {
        let mut command = zenmode(args);
        if args.len() == 1 {
            command.env("ZEN_TOKEN_OPTIMIZATION", "disabled");
        }
        let mut client = Client::spawn_command(command);
        client.initialize();
        let tools = client.call("tools/list", Value::Null)["tools"].clone();
        let tools = tools.as_array().unwrap();
        assert_eq!(tools.len(), 19, "{args:?}");
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert!(tool["description"].as_str().unwrap().len() > 80, "{tool}");
            assert!(tool["annotations"].is_object(), "{tool}");
        }
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"debug") && names.contains(&"codereview"));
        assert!(!names.contains(&"zen_execute"));
    }
}

#[test]
fn pinned_modes_join_the_meta_tools() {
    let mut client = Client::spawn(&["serve", "--pin", "debug,codereview"]);
    client.initialize();
    assert_eq!(
        client.tool_names(),
        ["zen_select_mode", "zen_execute", "debug", "codereview"]
    );

    let mut command = zenmode(&["serve"]);
    command.env("ZEN_PINNED_MODES", "planner");
    let mut client = Client::spawn_command(command);
    client.initialize();
    assert_eq!(
        client.tool_names(),
        ["zen_select_mode", "zen_execute", "planner"]
    );
}

#[test]
fn pinning_an_unknown_mode_is_a_startup_error() {
    let output = zenmode(&["serve", "--pin", "debgu"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("debgu") && stderr.contains("debug"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn select_recommends_a_mode_with_a_valid_next_call() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    let reply = structured(
        &client.tool(
            "zen_select_mode",
            json!({"task_description": "here is a stack trace from production, find the root cause of the crash"}),
        ),
        false,
    );
    assert_eq!(reply["mode"], "debug", "{reply}");
    let confidence = reply["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&confidence));
    assert!(reply["required"]["step"].is_string());
    assert!(reply["alternatives"].as_array().unwrap().len() <= 2);
    // The suggested call works as is: it passes validation.
    let next = &reply["next_call"];
    assert_eq!(next["tool"], "zen_execute");
    let outcome = client.tool("zen_execute", next["arguments"].clone());
    let body = outcome["structuredContent"].clone();
    assert_ne!(body["error"], "invalid_request", "{body}");

    let one = structured(
        &client.tool(
            "zen_select_mode",
            json!({"task_description": "review my code", "top_k": 1}),
        ),
        false,
    );
    assert!(one.get("alternatives").is_none(), "{one}");
}

#[test]
fn select_by_mode_returns_the_schema_on_demand() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    let reply = structured(
        &client.tool("zen_select_mode", json!({"mode": "tracer"})),
        false,
    );
    assert_eq!(reply["mode"], "tracer");
    assert!(
        reply["required"]["trace_mode"]
            .as_str()
            .unwrap()
            .contains("precision")
    );
    assert!(reply["optional"]["relevant_files"].is_string(), "{reply}");
    assert!(reply.get("confidence").is_none());

    let unknown = structured(
        &client.tool("zen_select_mode", json!({"mode": "tracr"})),
        true,
    );
    assert_eq!(unknown["closest"][0], "tracer");

    let neither = structured(&client.tool("zen_select_mode", json!({})), true);
    assert_eq!(neither["error"], "invalid_arguments");
    let stray = structured(
        &client.tool(
            "zen_select_mode",
            json!({"task": "typo in the argument name"}),
        ),
        true,
    );
    assert!(
        stray["message"].as_str().unwrap().contains("task"),
        "{stray}"
    );
}

#[test]
fn execute_runs_validates_and_explains() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();

    let ok = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "challenge", "request": {"prompt": "tabs beat spaces"}}),
        ),
        false,
    );
    assert_eq!(ok["status"], "challenge_accepted");
    assert_eq!(ok["original_statement"], "tabs beat spaces");

    let unknown = structured(
        &client.tool("zen_execute", json!({"mode": "codereviw", "request": {}})),
        true,
    );
    assert_eq!(unknown["error"], "unknown_mode");
    assert_eq!(unknown["closest"][0], "codereview");
    assert_eq!(unknown["mode_count"], 19);

    let invalid = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "debug", "request": {"step": 1, "stray": true}}),
        ),
        true,
    );
    assert_eq!(invalid["error"], "invalid_request");
    let pointers: Vec<&str> = invalid["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    assert!(pointers.contains(&"/step"), "{invalid}");
    assert!(
        invalid["violations"].as_array().unwrap().len() >= 5,
        "{invalid}"
    );
    assert!(
        invalid["required"]
            .as_array()
            .unwrap()
            .contains(&json!("findings"))
    );
    // The example in the error is itself valid.
    let example = invalid["example_request"].clone();
    let retry = client.tool("zen_execute", json!({"mode": "debug", "request": example}));
    assert_ne!(retry["structuredContent"]["error"], "invalid_request");

    // A request sent as a JSON string is accepted.
    let stringly = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "challenge", "request": "{\"prompt\": \"x\"}"}),
        ),
        false,
    );
    assert_eq!(stringly["status"], "challenge_accepted");
}

#[test]
fn imported_tools_without_an_executor_say_so_honestly() {
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/catalogs/github.json"
    );
    let mut client = Client::spawn(&["serve", "--catalog", catalog]);
    client.initialize();
    let request = json!({"owner": "acme", "repo": "web", "title": "Login is broken"});
    let reply = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "create_issue", "request": request}),
        ),
        true,
    );
    assert_eq!(reply["error"], "no_executor", "{reply}");
    assert!(reply["message"].as_str().unwrap().contains("github.json"));
    // Selectable and describable all the same.
    let described = structured(
        &client.tool("zen_select_mode", json!({"mode": "create_issue"})),
        false,
    );
    assert!(described["required"]["title"].is_string(), "{described}");
}

#[test]
fn hidden_modes_are_callable_by_name() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    assert!(!client.tool_names().contains(&"challenge".to_owned()));
    let reply = structured(&client.tool("challenge", json!({"prompt": "x"})), false);
    assert_eq!(reply["status"], "challenge_accepted");
    let invalid = structured(&client.tool("challenge", json!({})), true);
    assert_eq!(invalid["error"], "invalid_request");
}

#[test]
fn schemas_and_executors_start_lazily() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    client.tool_names();
    structured(
        &client.tool(
            "zen_select_mode",
            json!({"task_description": "plan a migration"}),
        ),
        false,
    );
    // Listing and selecting compile nothing; `version` compiles only its own schema.
    let version = structured(
        &client.tool("zen_execute", json!({"mode": "version", "request": {}})),
        false,
    );
    assert_eq!(version["schemas_compiled"], json!(["version"]));
    assert_eq!(version["executors_started"], json!(["version"]));

    structured(
        &client.tool("zen_execute", json!({"mode": "debug", "request": {}})),
        true,
    );
    let version = structured(&client.tool("version", json!({})), false);
    assert_eq!(version["schemas_compiled"], json!(["debug", "version"]));
    assert_eq!(version["executors_started"], json!(["version"]));
}

#[test]
fn planner_keeps_a_plan_across_calls() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    let step = |n: u64, more: bool| json!({"step": format!("step {n}"), "step_number": n, "total_steps": 2, "next_step_required": more});
    let first = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "planner", "request": step(1, true)}),
        ),
        false,
    );
    let id = first["continuation_id"].as_str().unwrap().to_owned();
    assert_eq!(first["status"], "planning_in_progress");
    let done = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "planner", "request": step(2, false), "continuation_id": id}),
        ),
        false,
    );
    assert_eq!(done["status"], "planning_complete");
    assert_eq!(done["plan"]["steps"], json!(["step 1", "step 2"]));

    let stale = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "planner", "request": step(1, true), "continuation_id": "nope"}),
        ),
        true,
    );
    assert_eq!(stale["error"], "unknown_continuation");
}

#[test]
fn protocol_errors_get_answers_and_the_session_continues() {
    let mut client = Client::spawn(&["serve", "--max-message-bytes", "4096"]);
    client.initialize();

    client.send_raw("this is not json");
    let parse_error = client.wait_for(|m| m["error"]["code"] == -32700);
    assert_eq!(parse_error["id"], Value::Null);

    client.send_raw(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/list\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(20_000)
    ));
    let oversized = client.wait_for(|m| m["error"]["code"] == -32600);
    assert!(
        oversized["error"]["message"]
            .as_str()
            .unwrap()
            .contains("4096")
    );

    let unknown_method = client.request("tools/frobnicate", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601);

    let unknown_tool = client.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert_eq!(unknown_tool["error"]["code"], -32602);
    assert!(
        unknown_tool["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );

    let malformed_params = client.request("tools/call", json!({"arguments": {}}));
    assert_eq!(malformed_params["error"]["code"], -32602);

    let bad_arguments = client.tool("zen_execute", json!({"request": {}}));
    assert_eq!(
        structured(&bad_arguments, true)["error"],
        "invalid_arguments"
    );

    // Still serving, and the oversized line was discarded without a reply of its own.
    assert_eq!(client.tool_names(), META_TOOLS);
    assert!(
        client.stray.iter().all(|m| m["id"] != 99),
        "{:?}",
        client.stray
    );
    assert!(client.finish().success());
}

#[test]
fn stateless_clients_discover_and_call_without_initialize() {
    let mut client = Client::spawn(&["serve"]);
    let discovered = client.call("server/discover", json!({"_meta": stateless_meta()}));
    let versions = discovered["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(common::STATELESS_VERSION)));
    assert!(versions.contains(&json!(common::LEGACY_VERSION)));

    let listed = client.call("tools/list", json!({"_meta": stateless_meta()}));
    assert_eq!(listed["tools"].as_array().unwrap().len(), 2);

    // subscriptions/listen is accepted (acknowledged), not -32601.
    client.send(&json!({
        "jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen",
        "params": {"_meta": stateless_meta(), "notifications": {"toolsListChanged": true}}
    }));
    let ack = client.wait_for(|m| m["method"] == "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        50
    );

    let called = client.call(
        "tools/call",
        json!({"_meta": stateless_meta(), "name": "zen_select_mode", "arguments": {"mode": "version"}}),
    );
    assert_eq!(called["structuredContent"]["mode"], "version");
    assert!(
        client.stray.iter().all(|m| m.get("error").is_none()),
        "{:?}",
        client.stray
    );
}

#[test]
fn modes_dir_adds_modes_and_broken_manifests_stop_startup() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = json!({
        "name": "echo_extra", "title": "Extra", "summary": "A mode from a directory",
        "description": "Used by tests.", "category": "utility", "executor": "version",
        "examples": ["run the extra mode"], "example_request": {},
        "schema": {"type": "object", "properties": {}, "additionalProperties": false}
    });
    std::fs::write(dir.path().join("echo_extra.json"), manifest.to_string()).unwrap();
    let dir_arg = dir.path().to_str().unwrap();

    let mut client = Client::spawn(&["--modes-dir", dir_arg, "serve", "--full"]);
    client.initialize();
    assert!(client.tool_names().contains(&"echo_extra".to_owned()));
    let reply = structured(&client.tool("echo_extra", json!({})), false);
    assert_eq!(reply["name"], "zenmode");

    std::fs::write(dir.path().join("zz_broken.json"), "{ not json").unwrap();
    let output = zenmode(&["serve", "--modes-dir", dir_arg])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("zz_broken.json"), "{stderr}");
}

#[test]
fn zen_execute_without_a_request_is_refused() {
    let mut client = Client::spawn(&["serve"]);
    client.initialize();
    for arguments in [
        json!({"mode": "version"}),
        json!({"mode": "version", "request": null}),
    ] {
        let refused = structured(&client.tool("zen_execute", arguments), true);
        assert_eq!(refused["error"], "invalid_arguments");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("request is required")
        );
    }
    let version = structured(
        &client.tool("zen_execute", json!({"mode": "version", "request": {}})),
        false,
    );
    assert_eq!(version["name"], "zenmode");
}

/// A signal ends the server even while the client keeps stdin open.
#[cfg(unix)]
#[test]
fn sigterm_ends_a_stdio_server_whose_stdin_stays_open() {
    for (signal, initialize) in [
        (libc::SIGTERM, false),
        (libc::SIGTERM, true),
        (libc::SIGINT, true),
    ] {
        let mut client = Client::spawn(&["serve"]);
        if initialize {
            client.initialize();
        } else {
            // The server is in its read loop once it answers a bad line
            // (a fixed sleep was not enough on a loaded machine).
            client.send_raw("not json");
            assert_eq!(client.next_message()["error"]["code"], -32700);
        }
        let child = client.child.as_mut().unwrap();
        // SAFETY: kill(2) on our own child's pid with a standard signal.
        let sent = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        assert_eq!(sent, 0);
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "still running 5 s after signal {signal}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(status.success(), "signal {signal}: {status:?}");
    }
}

/// Spawns `zenmode serve` with info logging and stderr piped; returns the
/// child and a reader of stdout lines. What happens to stderr is the test's.
fn serve_with_piped_stderr() -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = zenmode(&["serve"])
        .env("RUST_LOG", "zenmode=info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

fn next_reply(lines: &std::sync::mpsc::Receiver<String>) -> Value {
    let line = lines
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a reply in time");
    serde_json::from_str(&line).unwrap()
}

/// A client that closes the server's stderr: logging must not end the server.
#[test]
fn a_closed_stderr_does_not_end_the_server() {
    use std::io::Write;
    let (mut child, lines) = serve_with_piped_stderr();
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().unwrap();
    for _ in 0..20 {
        writeln!(stdin, "not json").unwrap();
        assert_eq!(next_reply(&lines)["error"]["code"], -32700);
    }
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":7,"method":"ping"}}"#).unwrap();
    assert_eq!(next_reply(&lines)["id"], 7);
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// A client that pipes stderr and never reads it: every line still gets its answer.
#[test]
fn an_unread_stderr_never_blocks_the_replies() {
    use std::io::Write;
    let (mut child, lines) = serve_with_piped_stderr();
    let _unread = child.stderr.take();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for _ in 0..5_000 {
            writeln!(stdin, "{{broken").unwrap();
        }
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":9,"method":"ping"}}"#).unwrap();
        stdin
    });
    // Error replies are written as they are made and may pass the ping's:
    // count them, whatever the order.
    let (mut errors, mut pinged) = (0, false);
    for _ in 0..5_001 {
        let reply = next_reply(&lines);
        if reply["id"] == 9 {
            pinged = true;
        } else {
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            errors += 1;
        }
    }
    assert!(
        pinged && errors == 5_000,
        "{errors} errors, ping answered: {pinged}"
    );
    drop(writer.join().unwrap());
    assert!(child.wait().unwrap().success());
}
