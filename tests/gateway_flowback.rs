//! Requests that flow back through the gateway: a real upstream's
//! sampling, elicitation and roots requests reach zenmode's client (the MCP
//! Python SDK, `peers/flowback_client.py`) and its answers go back; the
//! answers through zenmode are compared with what the same client gets from
//! the server directly. Needs `tests/upstreams/install.sh` (skips with a
//! note otherwise, fails under `ZEN_REQUIRE_UPSTREAMS=1`).

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use common::{binary, gateway::Setup};
use serde_json::{Value, json};

fn upstreams_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams")
}

fn npm_bin(name: &str) -> String {
    upstreams_dir()
        .join("node_modules/.bin")
        .join(name)
        .display()
        .to_string()
}

/// The Python with the MCP SDK (installed with the upstreams' venv).
fn python() -> PathBuf {
    upstreams_dir().join(".venv/bin/python")
}

fn installed() -> bool {
    let needed = [
        PathBuf::from(npm_bin("mcp-server-everything")),
        PathBuf::from(npm_bin("mcp-server-filesystem")),
        python(),
    ];
    let missing: Vec<_> = needed.iter().filter(|path| !path.exists()).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref() == Ok("1") {
        panic!("upstream servers missing (run tests/upstreams/install.sh): {missing:?}");
    }
    eprintln!("skipping: upstream servers not installed (tests/upstreams/install.sh): {missing:?}");
    false
}

/// Runs the Python client against `spec.command`; its `{results, asked}`.
fn run_client(spec: Value) -> Value {
    let output = Command::new(python())
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/peers/flowback_client.py")
                .display()
                .to_string(),
        )
        .arg(spec.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// zenmode serving `setup`'s upstreams, as the client's command and env.
fn through_zenmode(setup: &Setup, spec: Value) -> Value {
    let mut spec = spec;
    spec["command"] = json!([binary(), "serve", "--upstream-wait-secs", "60"]);
    spec["env"] = json!({
        "ZEN_UPSTREAMS": setup.file(),
        "ZEN_CACHE_DIR": setup.path("cache"),
        "ZEN_STATE_DIR": setup.path("state"),
        "RUST_LOG": "info",
    });
    run_client(spec)
}

fn zen_execute(mode: &str, request: Value) -> Value {
    json!({"tool": "zen_execute", "arguments": {"mode": mode, "request": request}})
}

/// `call`, repeated until its result mentions `text`: for what a server
/// fetches on its own time after the handshake, like its roots.
fn once_it_shows(mut call: Value, text: &str) -> Value {
    call["until_contains"] = json!(text);
    call
}

/// The content blocks of a result, as the client got them.
fn content(result: &Value) -> &Value {
    assert!(result.get("error").is_none(), "call failed: {result}");
    &result["content"]
}

#[test]
fn sampling_elicitation_and_roots_reach_the_client_as_they_do_directly() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let base = json!({
        "sampling": true,
        "elicitation": true,
        "roots": [root.path()],
    });
    let calls = [
        (
            "trigger-sampling-request",
            json!({"prompt": "name a colour", "maxTokens": 12}),
        ),
        ("trigger-elicitation-request", json!({})),
        ("get-roots-list", json!({})),
    ];

    let mut direct = base.clone();
    direct["command"] = json!([npm_bin("mcp-server-everything")]);
    direct["calls"] = calls
        .iter()
        .map(|(tool, arguments)| json!({"tool": tool, "arguments": arguments}))
        .collect();
    let direct = run_client(direct);

    let setup = Setup::new(json!({"everything": {"command": npm_bin("mcp-server-everything")}}));
    let mut gated = base;
    gated["calls"] = calls
        .iter()
        .map(|(tool, arguments)| zen_execute(&format!("everything__{tool}"), arguments.clone()))
        .collect();
    let gated = through_zenmode(&setup, gated);

    for (index, (tool, _)) in calls.iter().enumerate() {
        let (direct, gated) = (&direct["results"][index], &gated["results"][index]);
        assert_eq!(content(gated), content(direct), "{tool} through zenmode");
        assert_ne!(gated["isError"], true, "{tool}: {gated}");
    }
    let sampled = content(&gated["results"][0]).to_string();
    assert!(
        sampled.contains("sampled[12]: "),
        "the client's model answered: {sampled}"
    );
    let elicited = content(&gated["results"][1]).to_string();
    assert!(
        elicited.contains("Ada"),
        "the user's answer came back: {elicited}"
    );
    let roots = content(&gated["results"][2]).to_string();
    let root_name = root
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(roots.contains(&root_name), "the client's root: {roots}");
    // The client was asked the same things, once for each call (roots also
    // when the server started or was told they changed).
    let asked = |run: &Value, method: &str| {
        run["asked"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    };
    for method in ["sampling/createMessage", "elicitation/create"] {
        assert_eq!(asked(&gated, method), 1, "{method}: {gated}");
        assert_eq!(asked(&direct, method), 1, "{method}: {direct}");
    }
    assert!(asked(&gated, "roots/list") >= 1, "{gated}");
}

#[test]
fn a_client_without_sampling_gets_a_clear_error_not_a_hang() {
    if !installed() {
        return;
    }
    let setup = Setup::new(json!({"everything": {"command": npm_bin("mcp-server-everything")}}));
    let started = Instant::now();
    let run = through_zenmode(
        &setup,
        json!({
            "sampling": false,
            "elicitation": false,
            "roots": null,
            "calls": [
                zen_execute("everything__trigger-sampling-request", json!({"prompt": "hi"})),
                zen_execute("everything__trigger-elicitation-request", json!({})),
                zen_execute("everything__get-sum", json!({"a": 2, "b": 3})),
            ],
        }),
    );
    // Well inside any timeout: the refusal is immediate.
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "took {:?}",
        started.elapsed()
    );
    for (index, capability) in [(0, "sampling"), (1, "elicitation")] {
        let result = &run["results"][index];
        assert_eq!(result["isError"], true, "{result}");
        let text = content(result).to_string();
        assert!(
            text.contains(&format!("did not declare the {capability} capability")),
            "the refusal says why: {text}"
        );
    }
    // The session goes on: a plain call still works.
    let sum = content(&run["results"][2]).to_string();
    assert!(sum.contains('5'), "{sum}");
    assert_eq!(run["asked"], json!([]), "nothing reached the client");
}

#[test]
fn filesystem_server_sees_the_clients_roots_and_their_changes() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "from the client's root\n").unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let moved = tempfile::tempdir().unwrap();
    let moved_path = moved.path().canonicalize().unwrap();
    // No directory arguments: the server takes its folders from the roots.
    let setup = Setup::new(json!({"fs": {"command": npm_bin("mcp-server-filesystem")}}));
    let run = through_zenmode(
        &setup,
        json!({
            "sampling": false,
            "elicitation": false,
            "roots": [root_path],
            "calls": [
                // The server asks for the roots once it is initialized, on
                // its own time: the first call may come before the answer.
                once_it_shows(
                    zen_execute("fs__list_allowed_directories", json!({})),
                    &root_path.display().to_string(),
                ),
                zen_execute("fs__read_text_file", json!({"path": root_path.join("hello.txt")})),
                // The client's roots change: the running server is told.
                {"set_roots": [moved_path]},
                once_it_shows(
                    zen_execute("fs__list_allowed_directories", json!({})),
                    &moved_path.display().to_string(),
                ),
            ],
        }),
    );
    let allowed = content(&run["results"][0]).to_string();
    assert!(
        allowed.contains(&root_path.display().to_string()),
        "the client's root is allowed: {allowed}"
    );
    let read = content(&run["results"][1]).to_string();
    assert!(read.contains("from the client's root"), "{read}");
    let changed = content(&run["results"][2]).to_string();
    assert!(
        changed.contains(&moved_path.display().to_string())
            && !changed.contains(&root_path.display().to_string()),
        "after roots/list_changed: {changed}"
    );
    assert!(
        run["asked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "roots/list"),
        "{run}"
    );
}

/// The 2026-07-28 upstream of `upstreams/mrtr_server.py`, under `name`.
fn mrtr_upstream() -> Value {
    json!({
        "command": python(),
        "args": [upstreams_dir().join("mrtr_server.py")],
        "protocol_version": "2026-07-28",
    })
}

/// zenmode serving `setup`'s upstreams with the request-state key `key`.
fn zenmode_side(setup: &Setup, key: &str) -> Value {
    json!({
        "command": [binary(), "serve", "--upstream-wait-secs", "60"],
        "env": {
            "ZEN_UPSTREAMS": setup.file(),
            "ZEN_CACHE_DIR": setup.path("cache"),
            "ZEN_STATE_DIR": setup.path("state"),
            "ZEN_REQUEST_STATE_KEY": key,
        },
    })
}

fn structured_error(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error"], "invalid_request_state",
        "{result}"
    );
    result["structuredContent"]["message"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_2026_upstream_asks_twice_and_the_retries_reach_it_through_zen_execute() {
    if !installed() {
        return;
    }
    let key = "flowback-test-key-of-at-least-32-bytes";
    let first = Setup::new(json!({"mrtr": mrtr_upstream()}));
    // A second process with the same key, where the server has another name.
    let second = Setup::new(json!({"renamed": mrtr_upstream()}));
    let named = Setup::new(json!({"mrtr": mrtr_upstream()}));
    let mut by_name = zenmode_side(&named, key);
    by_name["command"]
        .as_array_mut()
        .unwrap()
        .extend([json!("--strategy"), json!("full")]);
    let output = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/mrtr_client.py"))
        .arg(
            json!({
                "a": zenmode_side(&first, key),
                "b": zenmode_side(&second, key),
                "mode": "mrtr__two_rounds",
                "other_mode": "renamed__two_rounds",
                "c": by_name,
                "by_name": "mrtr__two_rounds",
            })
            .to_string(),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));

    // Two rounds of input, then the result.
    for (round, asked) in [("first", "name"), ("second", "colour")] {
        let result = &run[round];
        assert_eq!(result["resultType"], "input_required", "{round}: {result}");
        assert_eq!(
            result["inputRequests"][asked]["method"], "elicitation/create",
            "{round}: {result}"
        );
        let state = result["requestState"].as_str().unwrap();
        assert!(state.starts_with("zm1."), "zenmode's own state: {state}");
    }
    assert_ne!(run["first"]["requestState"], run["second"]["requestState"]);
    assert_eq!(
        run["final"]["content"][0]["text"], "tea: Ada likes green",
        "{}",
        run["final"]
    );
    assert_eq!(
        run["auto"]["content"][0]["text"], "tea: Ada likes green",
        "{}",
        run["auto"]
    );

    // The same through the mode called by name.
    assert_eq!(
        run["by_name_first"]["resultType"], "input_required",
        "{}",
        run["by_name_first"]
    );
    assert_eq!(
        run["by_name"]["content"][0]["text"], "tea: Ada likes green",
        "{}",
        run["by_name"]
    );

    assert!(structured_error(&run["replayed"]).contains("already used"));
    assert!(structured_error(&run["tampered"]).contains("signature does not match"));
    assert!(structured_error(&run["foreign"]).contains("not one zenmode issued"));
    let unknown = structured_error(&run["unknown_server"]);
    assert!(
        unknown.contains("\"mrtr\", which this zenmode does not serve"),
        "{unknown}"
    );
}

#[test]
fn a_2026_upstream_asking_a_2025_client_is_answered_through_its_callbacks() {
    if !installed() {
        return;
    }
    let setup = Setup::new(json!({"mrtr": mrtr_upstream()}));
    let run = through_zenmode(
        &setup,
        json!({
            "sampling": false,
            "elicitation": true,
            "roots": null,
            "calls": [zen_execute("mrtr__two_rounds", json!({"topic": "tea"}))],
        }),
    );
    // The flowback client answers every string field with "Ada".
    let text = content(&run["results"][0]).to_string();
    assert!(text.contains("tea: Ada likes Ada"), "{text}");
    assert_eq!(
        run["asked"],
        json!(["elicitation/create", "elicitation/create"])
    );
}

#[test]
fn over_http_a_request_is_refused_while_two_sessions_call_the_server_and_answered_after() {
    if !installed() {
        return;
    }
    let setup = Setup::new(json!({"everything": {"command": npm_bin("mcp-server-everything")}}));
    let server = common::TcpServer::spawn(setup.command(&[
        "serve",
        "--transport",
        "http",
        "--listen",
        "127.0.0.1:0",
        "--upstream-wait-secs",
        "60",
    ]));
    let output = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/flowback_sessions.py"))
        .arg(format!("http://{}/mcp", server.address))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // B's request came while A's call was in progress on the same server:
    // neither client is asked.
    assert_eq!(run["during"]["isError"], true, "{run}");
    let during = run["during"]["text"].as_str().unwrap();
    assert!(during.contains("several client sessions"), "{during}");
    assert_eq!(run["long"]["isError"], false, "{run}");
    // Alone again, B's call is answered by B, and only B was ever asked.
    assert_eq!(run["after"]["isError"], false, "{run}");
    assert!(
        run["after"]["text"]
            .as_str()
            .unwrap()
            .contains("answered by B"),
        "{run}"
    );
    assert_eq!(run["asked"], json!(["B"]));
}

/// `tests/upstreams/asking_server.py` (standard library only): a server
/// that asks its client things at awkward moments.
fn asking_server() -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/asking_server.py");
    json!({"command": "python3", "args": [script], "timeout": 20, "idle_shutdown": 0})
}

/// A TCP session that declares sampling and elicitation.
fn asking_session(address: &str) -> common::Client {
    let mut client = common::Client::connect(address);
    client.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18",
            "capabilities": {"sampling": {}, "elicitation": {}},
            "clientInfo": {"name": "flowback-test", "version": "1"}}),
    );
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client
}

fn execute_call(id: &str, mode: &str, request: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "zen_execute", "arguments": {"mode": mode, "request": request},
        "_meta": {"progressToken": id}}})
}

#[test]
fn a_late_request_for_a_returned_call_never_reaches_another_session() {
    let setup = Setup::new(json!({"asking": asking_server()}));
    let server = common::TcpServer::spawn(setup.command(&[
        "serve",
        "--transport",
        "tcp",
        "--listen",
        "127.0.0.1:0",
    ]));
    let mut a = asking_session(&server.address);
    let mut b = asking_session(&server.address);

    // B's call is in progress on the server (it reports progress once it
    // is there) ...
    b.send(&execute_call("b-wait", "asking__wait", json!({})));
    b.wait_for(|m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == "b-wait"
    });
    // ... when A's call returns, and then the server asks for sampling
    // with A's secret.
    a.send(&execute_call(
        "a-late",
        "asking__late",
        json!({"secret": "A-secret-31337"}),
    ));
    let returned = a.reply_to(&json!("a-late"));
    assert_eq!(returned["result"]["content"][0]["text"], "ok", "{returned}");

    // B's client answers whatever it is asked, so that a request that
    // reached it would show in B's result as well as here.
    let mut b_was_asked = Vec::new();
    let waited = loop {
        let message = b.next_message();
        if message["method"] == "sampling/createMessage" {
            b_was_asked.push(message.clone());
            b.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": "B answers"},
                "model": "b-model"}}));
        } else if message["id"] == "b-wait" && message.get("method").is_none() {
            break message;
        }
    };
    assert!(
        b_was_asked.is_empty(),
        "B was asked A's request: {b_was_asked:?}"
    );
    let text = waited["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with("refused:") && text.contains("late one"),
        "{waited}"
    );
    assert!(
        !a.stray
            .iter()
            .any(|m| m["method"] == "sampling/createMessage")
    );
}

#[test]
fn one_call_flooding_the_client_gets_most_requests_refused_and_the_rest_withdrawn() {
    let setup = Setup::new(json!({"asking": asking_server()}));
    let server = common::TcpServer::spawn(setup.command(&[
        "serve",
        "--transport",
        "tcp",
        "--listen",
        "127.0.0.1:0",
    ]));
    let mut client = asking_session(&server.address);
    // The client answers none of them.
    client.send(&execute_call(
        "flood",
        "asking__flood",
        json!({"count": 50, "report_when": 42}),
    ));
    let reply = client.reply_to(&json!("flood"));
    let report: Value = serde_json::from_str(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("null"),
    )
    .unwrap_or(Value::Null);
    assert_eq!(report["refused"], 42, "{reply}");
    let refusal = report["first_refusal"].as_str().unwrap_or_default();
    assert!(refusal.contains("at most 8 at once"), "{refusal}");
    // The client was asked 8 times (waiting for each, in case one is
    // written after the call's reply), and no more: a ping's answer comes
    // after anything sent before it.
    let ids: Vec<Value> = (0..8)
        .map(|_| client.wait_for(|m| m["method"] == "elicitation/create")["id"].clone())
        .collect();
    client.call("ping", Value::Null);
    let more = client
        .stray
        .iter()
        .filter(|m| m["method"] == "elicitation/create")
        .count();
    assert_eq!(more, 0, "the client was asked {} times", 8 + more);
    // The call is over: the 8 waiting on the client are withdrawn.
    for id in ids {
        client.wait_for(|m| {
            m["method"] == "notifications/cancelled" && m["params"]["requestId"] == id
        });
    }
}

#[test]
fn over_a_streamable_http_upstream_a_request_goes_to_the_call_it_came_with() {
    if !installed() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut everything = Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "server-everything listens on {port}");
    let setup = Setup::new(json!({"remote": {"type": "http",
        "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 30}}));
    let server = common::TcpServer::spawn(setup.command(&[
        "serve",
        "--transport",
        "tcp",
        "--listen",
        "127.0.0.1:0",
        "--upstream-wait-secs",
        "60",
    ]));
    let mut a = asking_session(&server.address);
    let mut b = asking_session(&server.address);
    b.send(&execute_call(
        "warm",
        "remote__get-sum",
        json!({"a": 1, "b": 1}),
    ));
    b.reply_to(&json!("warm"));

    // A's call is in progress on the server (it has reported progress) ...
    a.send(&execute_call(
        "a-long",
        "remote__trigger-long-running-operation",
        json!({"duration": 4, "steps": 4}),
    ));
    a.wait_for(|m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == "a-long"
    });
    // ... while B's call asks for sampling: the request comes on the stream
    // of B's own call, so it is B's, with A's call in progress or not.
    b.send(&execute_call(
        "b-sample",
        "remote__trigger-sampling-request",
        json!({"prompt": "hi", "maxTokens": 10}),
    ));
    let sampled = loop {
        let message = b.next_message();
        if message["method"] == "sampling/createMessage" {
            b.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": "answered by B"},
                "model": "b-model"}}));
        } else if message["id"] == "b-sample" && message.get("method").is_none() {
            break message;
        }
    };
    assert!(
        sampled["result"].to_string().contains("answered by B"),
        "{sampled}"
    );
    let long = a.reply_to(&json!("a-long"));
    assert_ne!(long["result"]["isError"], true, "{long}");
    assert!(
        !a.stray
            .iter()
            .any(|m| m["method"] == "sampling/createMessage")
    );
    everything.kill().ok();
    everything.wait().ok();
}
