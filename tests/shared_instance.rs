//! The shared instance: clients started as `zenmode connect` (as Claude Code
//! or Cursor would start them) share one `serve --shared`, one process per
//! upstream server, each seeing its own profile's servers; the instance is
//! started once however many connect at once, stops when idle, and its
//! death reaches each client as a clear error.

mod common;

use std::time::Duration;

use common::{
    Client,
    gateway::{Setup, execute, flaky, wait_until},
};
use serde_json::{Value, json};

/// Two servers and a failing one, and profiles `one` (alpha) and `two` (beta).
fn shared_setup() -> Setup {
    let setup = Setup::new(json!({}));
    let pid_file = |name: &str| setup.path(name).display().to_string();
    setup.write_servers(json!({
        "alpha": flaky(&["--pid-file", &pid_file("alpha.pid"), "--hostile"]),
        "beta": flaky(&["--pid-file", &pid_file("beta.pid")]),
        "broken": flaky(&["--exit-at-start"]),
    }));
    for (profile, server) in [("one", "alpha"), ("two", "beta")] {
        let (code, _, stderr) = setup.run(&["profile", "add", profile, server]);
        assert_eq!(code, 0, "{stderr}");
    }
    setup
}

/// Ends the test's instance whatever the test did.
struct Stopper<'a>(&'a Setup);

impl Drop for Stopper<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["connect", "--stop"]);
    }
}

fn connect_command(setup: &Setup, profile: &str, extra: &[&str]) -> std::process::Command {
    let mut args = vec!["connect", "--profile", profile];
    args.extend_from_slice(extra);
    let mut command = setup.command(&args);
    command.stderr(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(setup.path(&format!("connect-{profile}.log")))
            .unwrap(),
    );
    command
}

/// A client that declares elicitation, named after its profile.
fn connect(setup: &Setup, profile: &str) -> Client {
    let mut client = Client::spawn_keeping_stderr(connect_command(setup, profile, &[]));
    initialize(&mut client, profile);
    client
}

fn initialize(client: &mut Client, name: &str) {
    client.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": name, "version": "1"}}),
    );
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

fn record(setup: &Setup) -> Option<Value> {
    let text = std::fs::read_to_string(setup.path("state/shared/instance.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Live processes whose command line holds every one of `words` and whose
/// environment names this test's state directory (upstream servers get an
/// environment of their own: their words must name the test's folder).
fn processes(setup: &Setup, words: &[&str]) -> Vec<u32> {
    processes_where(setup, words, true)
}

fn processes_where(setup: &Setup, words: &[&str], by_environment: bool) -> Vec<u32> {
    let state = format!("ZEN_STATE_DIR={}", setup.path("state").display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|byte| *byte == 0)
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect();
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let has_state = environ
            .split(|byte| *byte == 0)
            .any(|pair| pair == state.as_bytes());
        if (has_state || !by_environment)
            && words.iter().all(|word| args.iter().any(|arg| arg == word))
            && common::gateway::is_running(pid)
        {
            found.push(pid);
        }
    }
    found
}

fn instances(setup: &Setup) -> Vec<u32> {
    processes(setup, &["serve", "--shared"])
}

/// The python processes of the server whose pid file is `pid_file`.
fn server_processes(setup: &Setup, pid_file: &str) -> Vec<u32> {
    let marker = setup.path(pid_file).display().to_string();
    processes_where(setup, &["--pid-file", &marker], false)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|name| name.trim().starts_with("python"))
        })
        .collect()
}

/// Sends `alpha__slow` as request `id` and waits for its first progress
/// (the call is then running at the upstream server).
fn start_slow_call(client: &mut Client, id: &str, seconds: f64) {
    client.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "zen_execute",
        "arguments": {"mode": "alpha__slow", "request": {"seconds": seconds}},
        "_meta": {"progressToken": id}}}),
    );
    client.wait_for(|m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == id
    });
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn two_clients_share_one_instance_and_each_sees_only_its_profile() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut first = connect(&setup, "one");
    let mut second = connect(&setup, "two");

    assert_eq!(
        text(&execute(
            &mut first,
            "alpha__echo",
            json!({"text": "from one"})
        )),
        "from one"
    );
    assert_eq!(
        text(&execute(
            &mut second,
            "beta__echo",
            json!({"text": "from two"})
        )),
        "from two"
    );
    // Another profile's tool is refused as a mode that does not exist.
    let refused = execute(&mut first, "beta__echo", json!({"text": "x"}));
    assert_eq!(
        refused["structuredContent"]["error"], "unknown_mode",
        "{refused}"
    );
    assert_eq!(
        refused["structuredContent"]["closest"],
        json!(["alpha__echo"])
    );
    assert!(!text(&refused).contains("quarantine"), "{refused}");
    // Select ranks the profile's tools only.
    let selected = first.tool(
        "zen_select_mode",
        json!({"task_description": "echo this text back to me"}),
    );
    let reply = selected.to_string();
    assert!(reply.contains("alpha__echo"), "{reply}");
    assert!(!reply.contains("beta__"), "{reply}");

    // One instance, one process per upstream server, for both clients.
    assert_eq!(instances(&setup).len(), 1);
    assert_eq!(server_processes(&setup, "alpha.pid").len(), 1);
    assert_eq!(server_processes(&setup, "beta.pid").len(), 1);
    execute(&mut second, "beta__echo", json!({"text": "again"}));
    execute(&mut first, "alpha__echo", json!({"text": "again"}));
    assert_eq!(server_processes(&setup, "alpha.pid").len(), 1);

    // Progress and an upstream's elicitation pass through the bridge.
    start_slow_call(&mut first, "slow", 0.6);
    let done = first.reply_to(&json!("slow"));
    assert!(done.get("result").is_some(), "{done}");
    first.send(
        &json!({"jsonrpc": "2.0", "id": "ask", "method": "tools/call", "params": {
        "name": "zen_execute",
        "arguments": {"mode": "alpha__ask", "request": {"kind": "elicitation"}}}}),
    );
    let asked = first.wait_for(|m| m["method"] == "elicitation/create");
    first.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"answer": "yes from one"}}}));
    let answered = first.reply_to(&json!("ask"));
    assert!(answered.to_string().contains("yes from one"), "{answered}");
    assert!(
        !second
            .stray
            .iter()
            .any(|m| m["method"] == "elicitation/create"),
        "the other client was asked"
    );
    // A cancellation reaches the upstream server through the bridge.
    start_slow_call(&mut first, "cancel-me", 30.0);
    first.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "cancel-me", "reason": "the user changed their mind"}}),
    );
    let log = setup.path("state/shared/instance.log");
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(&log)
                .is_ok_and(|text| text.contains("[alpha] fault server: cancelled request"))
        }),
        "the upstream call was not cancelled"
    );
    first.finish();
    second.finish();
}

#[test]
fn a_result_handle_reads_through_the_bridge_for_its_own_client_only() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut first = connect(&setup, "one");
    let mut second = connect(&setup, "one");
    let big = execute(&mut first, "alpha__big", json!({"bytes": 120_000}));
    let reply = big.to_string();
    let start = reply.find("zenmode://results/").expect("a handle");
    let uri: String = reply[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || ":/-_.?=".contains(*c))
        .collect();
    let read = first.request("resources/read", json!({"uri": uri}));
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("xxxx")),
        "{read}"
    );
    let other = second.request("resources/read", json!({"uri": uri}));
    assert!(
        other.get("error").is_some(),
        "another client read it: {other}"
    );
    first.finish();
    second.finish();
}

#[test]
fn clients_connecting_during_a_start_share_the_instance_being_started() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut clients: Vec<Client> = (0..3)
        .map(|_| Client::spawn_keeping_stderr(connect_command(&setup, "one", &[])))
        .collect();
    for client in &mut clients {
        initialize(client, "racer");
    }
    assert_eq!(instances(&setup).len(), 1, "{:?}", instances(&setup));
    let pid = record(&setup).unwrap()["pid"].as_u64().unwrap() as u32;
    assert_eq!(instances(&setup), vec![pid]);
    for client in &mut clients {
        assert_eq!(
            text(&execute(client, "alpha__echo", json!({"text": "ok"}))),
            "ok"
        );
    }
    assert_eq!(server_processes(&setup, "alpha.pid").len(), 1);
    // A second instance started by hand refuses to run.
    let (code, _, stderr) = setup.run(&["serve", "--shared"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("already runs"), "{stderr}");
}

#[test]
fn a_killed_instance_gives_each_client_a_clear_error_and_the_next_connect_starts_anew() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut client = connect(&setup, "one");
    let old = record(&setup).unwrap()["pid"].as_u64().unwrap() as u32;
    start_slow_call(&mut client, "waiting", 30.0);
    // SAFETY: a signal to the test's own child's pid.
    unsafe { libc::kill(old as libc::pid_t, libc::SIGKILL) };

    let waited = client.reply_to(&json!("waiting"));
    let message = waited["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shared instance is gone"), "{waited}");
    let later = client.request("tools/list", Value::Null);
    let message = later["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("shared instance is gone") && message.contains("zenmode connect"),
        "{later}"
    );

    let mut next = connect(&setup, "one");
    let new = record(&setup).unwrap()["pid"].as_u64().unwrap() as u32;
    assert_ne!(new, old);
    assert_eq!(
        text(&execute(&mut next, "alpha__echo", json!({"text": "back"}))),
        "back"
    );
    next.finish();
    client.finish();
}

#[test]
fn the_instance_stops_once_no_client_has_been_connected_for_its_idle_time() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut client =
        Client::spawn_keeping_stderr(connect_command(&setup, "one", &["--idle-stop-secs", "1"]));
    initialize(&mut client, "brief");
    execute(&mut client, "alpha__echo", json!({"text": "hi"}));
    let pid = record(&setup).unwrap()["pid"].as_u64().unwrap() as u32;
    // Connected, it stays past its idle time.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(common::gateway::is_running(pid));
    client.finish();
    assert!(
        wait_until(Duration::from_secs(20), || !common::gateway::is_running(
            pid
        )),
        "the instance did not stop"
    );
    assert!(record(&setup).is_none(), "its record was left behind");
    assert!(
        wait_until(Duration::from_secs(10), || server_processes(
            &setup,
            "alpha.pid"
        )
        .is_empty()),
        "its upstream server outlived it"
    );
}

#[test]
fn profiles_are_checked_before_anything_starts() {
    let setup = shared_setup();
    let (code, _, stderr) = setup.run(&["connect", "--profile", "three"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("no profile \"three\"") && stderr.contains("one, two"),
        "{stderr}"
    );
    let (code, _, stderr) = setup.run(&["profile", "add", "three", "gamma"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no server \"gamma\""), "{stderr}");
    let (code, out, _) = setup.run(&["profile", "remove", "two"]);
    assert_eq!(code, 0, "{out}");
    let (_, listed, _) = setup.run(&["profile", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["profiles"].as_object().unwrap().len(), 1, "{listed}");
    assert!(
        instances(&setup).is_empty(),
        "a refused connect started an instance"
    );
}

/// The dashboard over plain HTTP: who may see it and change things.
#[test]
fn the_dashboard_needs_a_one_time_sign_in_and_refuses_other_origins() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut client = connect(&setup, "one");
    execute(&mut client, "alpha__echo", json!({"text": "seen"}));
    let (code, out, stderr) = setup.run(&["dashboard", "--no-open"]);
    assert_eq!(code, 0, "{stderr}");
    let link = out.lines().next().unwrap().to_owned();
    let port = record(&setup).unwrap()["port"].as_u64().unwrap();
    let base = format!("http://127.0.0.1:{port}/dashboard");
    let runtime = common::http::runtime();
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        assert_eq!(
            http.get(format!("{base}/")).send().await.unwrap().status(),
            401
        );
        let signed = http.get(&link).send().await.unwrap();
        assert_eq!(signed.status(), 303);
        let cookie = signed.headers()["set-cookie"].to_str().unwrap().to_owned();
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        let cookie = cookie.split(';').next().unwrap().to_owned();
        assert_eq!(
            http.get(&link).send().await.unwrap().status(),
            403,
            "a sign-in link works once"
        );
        let page = http
            .get(format!("{base}/"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        let page = page.text().await.unwrap();
        assert!(
            page.contains("data-server=\"alpha\"") && page.contains("broken"),
            "{page}"
        );
        let calls = http
            .get(format!("{base}/calls"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            calls.contains("alpha__echo") && calls.contains(">one<"),
            "{calls}"
        );
        // A rebinding page's name in Host is refused.
        let rebound = http
            .get(format!("{base}/"))
            .header("cookie", &cookie)
            .header("host", format!("evil.example:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(rebound.status(), 403);
        // A change needs the page's own origin and the dashboard's header.
        let disable = format!("{base}/api/servers/beta/disable");
        for (origin, header) in [
            (None, true),
            (Some("http://evil.example".to_owned()), true),
            (Some(format!("http://127.0.0.1:{port}")), false),
        ] {
            let mut request = http.post(&disable).header("cookie", &cookie);
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            if header {
                request = request.header("x-zenmode-dashboard", "1");
            }
            assert_eq!(request.send().await.unwrap().status(), 403);
        }
        let no_cookie = http
            .post(&disable)
            .header("origin", format!("http://127.0.0.1:{port}"))
            .header("x-zenmode-dashboard", "1")
            .send()
            .await
            .unwrap();
        assert_eq!(no_cookie.status(), 401);
    });
    let upstreams = std::fs::read_to_string(setup.file()).unwrap();
    assert!(
        !upstreams.contains("\"enabled\""),
        "a refused change changed the file: {upstreams}"
    );
    client.finish();
}

/// `status` and `doctor` say what the shared instance serves.
#[test]
fn status_and_doctor_report_the_shared_instance() {
    let setup = shared_setup();
    let _stop = Stopper(&setup);
    let mut client = connect(&setup, "one");
    execute(&mut client, "alpha__echo", json!({"text": "hi"}));
    let (_, out, _) = setup.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    let shared = &status["shared_instance"];
    assert_eq!(shared["pid"], record(&setup).unwrap()["pid"], "{status}");
    let alpha = shared["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == "alpha")
        .unwrap();
    assert_eq!(alpha["state"], "running", "{status}");
    let (_, out, _) = setup.run(&["doctor", "--upstream-wait-secs", "5"]);
    assert!(out.contains("a shared instance serves this file"), "{out}");
    client.finish();
}
