//! The gateway while it runs:
//! a bad upstreams file or entry never stops zenmode, a slow or broken
//! upstream never delays start-up and is named to the model, and the
//! upstreams file is reread while zenmode runs.

mod common;

use std::time::{Duration, Instant};

use common::{
    Client,
    gateway::{Setup, execute, flaky, is_running, pid_in, wait_until},
};
use serde_json::{Value, json};

/// A select reply, whole, as text.
fn select(client: &mut Client, task: &str) -> String {
    client
        .tool("zen_select_mode", json!({"task_description": task}))
        .to_string()
}

/// The `zen_execute` description a fresh `tools/list` shows.
fn execute_description(client: &mut Client) -> String {
    let tools = client.call("tools/list", Value::Null);
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "zen_execute")
        .map(|tool| tool["description"].as_str().unwrap().to_owned())
        .unwrap()
}

#[test]
fn problem2_a_trailing_comma_in_the_upstreams_file_still_serves_the_builtin_modes() {
    let setup = Setup::new(json!({}));
    std::fs::write(
        setup.file(),
        "{\"mcpServers\": {\n  \"a\": {\"command\": \"python3\"},\n}}\n",
    )
    .unwrap();
    let mut client = setup.serve(&[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    let version = execute(&mut client, "version", json!({}));
    assert_ne!(version["isError"], true, "{version}");
    let reply = select(&mut client, "list the files in a directory");
    assert!(
        reply.contains("upstreams file") && reply.contains("line 3"),
        "the model learns that the file is broken, and where: {reply}"
    );
    client.finish();
    let log = setup.log_text();
    assert_eq!(
        log.matches("line 3").count(),
        1,
        "the problem is logged once, with its line: {log}"
    );
    assert!(log.contains(&setup.file().display().to_string()), "{log}");
}

#[test]
fn problem2_a_bad_entry_removes_only_itself() {
    let setup = Setup::new(json!({
        "broken": {"command": "python3", "timeout": "soon"},
        "good": flaky(&[]),
    }));
    let mut client = setup.serve(&["--upstream-wait-secs", "10"]);
    let good = execute(&mut client, "good__echo", json!({"text": "ok"}));
    assert_eq!(good["structuredContent"], json!({"echo": "ok"}), "{good}");
    let reply = select(&mut client, "echo some text back");
    assert!(
        reply.contains("bad entry \\\"broken\\\"") && reply.contains("timeout"),
        "{reply}"
    );
    let description = execute_description(&mut client);
    assert!(description.contains("broken"), "{description}");
    client.finish();
    // The user sees the same in `zenmode status`, beside the good server.
    let (code, status, stderr) = setup.run(&["status"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        status.contains("broken") && status.contains("bad entry") && status.contains("good"),
        "{status}"
    );
}

#[test]
fn problem3_a_slow_upstream_never_delays_start_up_and_fills_in_later() {
    // Slower than a select's wait (10 s) and a call's (10 s) together.
    let setup = Setup::new(json!({
        "slow": flaky(&["--start-delay", "30"]),
    }));
    let started = Instant::now();
    let mut client = setup.serve(&[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "start-up waited {:?} for a slow upstream",
        started.elapsed()
    );
    // A select waits for a starting server, but not for ever (10 s): past
    // that it answers, and says the server is on its way.
    let asked = Instant::now();
    let reply = select(&mut client, "echo some text back");
    assert!(
        asked.elapsed() >= Duration::from_secs(9) && asked.elapsed() < Duration::from_secs(14),
        "the select waited {:?}",
        asked.elapsed()
    );
    assert!(
        reply.contains("slow: still starting"),
        "the model learns the server is on its way: {reply}"
    );
    let early = execute(&mut client, "slow__echo", json!({"text": "x"}));
    assert_eq!(early["isError"], true);
    assert_eq!(
        early["structuredContent"]["error"], "server_unavailable",
        "{early}"
    );
    // Behind the fixed list, the catalog fills in when the server answers.
    assert!(wait_until(Duration::from_secs(60), || {
        let result = execute(&mut client, "slow__echo", json!({"text": "late"}));
        result["structuredContent"] == json!({"echo": "late"})
    }));
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    let reply = select(&mut client, "echo some text back");
    assert!(reply.contains("slow__echo"), "{reply}");
    client.finish();
}

/// The real `mcp-server-time` (PyPI), when `tests/upstreams/install.sh` has run.
fn real_time_server() -> Option<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/.venv/bin/mcp-server-time");
    if path.exists() {
        return Some(path.display().to_string());
    }
    if std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref() == Ok("1") {
        panic!("mcp-server-time missing (run tests/upstreams/install.sh)");
    }
    eprintln!("skipping: mcp-server-time not installed (tests/upstreams/install.sh)");
    None
}

#[test]
fn problem3_a_real_server_beside_a_slow_one_answers_without_waiting_for_it() {
    let Some(time) = real_time_server() else {
        return;
    };
    let setup = Setup::new(json!({
        "slow": flaky(&["--start-delay", "15"]),
        "time": {"command": time},
    }));
    let started = Instant::now();
    let mut client = setup.serve(&[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "start-up waited {:?} for a slow upstream",
        started.elapsed()
    );
    // The select waits its bounded while for the slow server, then ranks
    // the real one's tools, which arrived meanwhile.
    let reply = select(&mut client, "what time is it in UTC");
    assert!(reply.contains("slow: still starting"), "{reply}");
    assert!(reply.contains("time__get_current_time"), "{reply}");
    // The real server's modes arrive on their own, long before the slow one's.
    let now = execute(
        &mut client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    );
    assert!(now.to_string().contains("UTC"), "{now}");
    assert!(
        started.elapsed() < Duration::from_secs(14),
        "the real server waited for the slow one: {:?}",
        started.elapsed()
    );
    client.finish();
}

#[test]
fn problem3_a_broken_upstream_is_named_and_not_restarted_in_a_loop() {
    let setup = Setup::new(json!({
        "dead": flaky(&["--exit-at-start"]),
        "good": flaky(&[]),
    }));
    let mut client = setup.serve(&[]);
    assert!(wait_until(Duration::from_secs(30), || {
        select(&mut client, "echo some text back").contains("dead: failed to start")
    }));
    let dead = execute(&mut client, "dead__echo", json!({"text": "x"}));
    assert_eq!(dead["isError"], true);
    assert_eq!(
        dead["structuredContent"]["error"], "server_unavailable",
        "{dead}"
    );
    assert!(dead.to_string().contains("failed to start"), "{dead}");
    let description = execute_description(&mut client);
    assert!(description.contains("dead"), "{description}");
    std::thread::sleep(Duration::from_secs(4));
    client.finish();
    let log = setup.log_text();
    let starts = log.matches("refusing to start").count();
    assert!(
        (1..=3).contains(&starts),
        "a broken server is retried with backoff, not in a loop ({starts} starts): {log}"
    );
}

#[test]
fn problem4_reload_added_and_removed_servers_take_effect_without_a_restart() {
    let pid_file = tempfile::NamedTempFile::new().unwrap();
    let pid_path = pid_file.path().display().to_string();
    let setup = Setup::new(json!({
        "first": flaky(&["--pid-file", &pid_path]),
    }));
    let mut client = setup.serve(&[]);
    let first = execute(&mut client, "first__echo", json!({"text": "1"}));
    assert_eq!(first["structuredContent"], json!({"echo": "1"}), "{first}");
    let first_pid = pid_in(pid_file.path()).unwrap();

    // Added by hand: picked up by the file watch.
    setup.write_servers(json!({
        "first": flaky(&["--pid-file", &pid_path]),
        "second": flaky(&[]),
    }));
    assert!(wait_until(Duration::from_secs(30), || {
        let result = execute(&mut client, "second__echo", json!({"text": "2"}));
        result["structuredContent"] == json!({"echo": "2"})
    }));

    // Removed: stopped, and its modes vanish.
    setup.write_servers(json!({"second": flaky(&[])}));
    assert!(wait_until(Duration::from_secs(30), || !is_running(
        first_pid
    )));
    let gone = execute(&mut client, "first__echo", json!({"text": "x"}));
    assert_eq!(gone["isError"], true);
    assert_eq!(gone["structuredContent"]["error"], "unknown_mode", "{gone}");
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);

    // `upstream add` says the running server picked the change up.
    let (code, stdout, stderr) = setup.run(&[
        "upstream",
        "add",
        "third",
        "--",
        "python3",
        &common::gateway::fault_server(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("1 running zenmode server picked this up"),
        "{stdout}"
    );
    assert!(wait_until(Duration::from_secs(30), || {
        let result = execute(&mut client, "third__echo", json!({"text": "3"}));
        result["structuredContent"] == json!({"echo": "3"})
    }));
    // So does `upstream disable`, and the server's modes go.
    let (code, stdout, stderr) = setup.run(&["upstream", "disable", "third"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("1 running zenmode server picked this up"),
        "{stdout}"
    );
    let gone = execute(&mut client, "third__echo", json!({"text": "3"}));
    assert_eq!(gone["isError"], true, "{gone}");
    client.finish();

    let (code, stdout, _) = setup.run(&["upstream", "remove", "third"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("no zenmode server is running"), "{stdout}");
}

#[test]
fn problem4_reload_on_sighup() {
    let setup = Setup::new(json!({"first": flaky(&[])}));
    let mut client = setup.serve(&[]);
    let pid = client.pid().unwrap();
    // Written with the same size and modification time is still seen on SIGHUP.
    setup.write_servers(json!({"other": flaky(&[])}));
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_until(Duration::from_secs(30), || {
        let result = execute(&mut client, "other__echo", json!({"text": "h"}));
        result["structuredContent"] == json!({"echo": "h"})
    }));
    client.finish();
}

#[test]
fn problem4_reload_a_changed_server_restarts_on_next_use_and_a_disabled_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.pid");
    let after = dir.path().join("after.pid");
    let entry = |pid: &std::path::Path| flaky(&["--pid-file", &pid.display().to_string()]);
    let setup = Setup::new(json!({"srv": entry(&before)}));
    let mut client = setup.serve(&[]);
    let first = execute(&mut client, "srv__echo", json!({"text": "1"}));
    assert_eq!(first["structuredContent"], json!({"echo": "1"}), "{first}");
    let old_pid = pid_in(&before).unwrap();

    // Changed: the old process stops; the next call starts the new entry.
    setup.write_servers(json!({"srv": entry(&after)}));
    assert!(wait_until(Duration::from_secs(30), || !is_running(old_pid)));
    assert!(wait_until(Duration::from_secs(30), || {
        let result = execute(&mut client, "srv__echo", json!({"text": "2"}));
        result["structuredContent"] == json!({"echo": "2"})
    }));
    let new_pid = pid_in(&after).unwrap();
    assert_ne!(new_pid, old_pid);

    // Disabled: stopped, and its modes vanish.
    let mut disabled = entry(&after);
    disabled["enabled"] = json!(false);
    setup.write_servers(json!({"srv": disabled}));
    assert!(wait_until(Duration::from_secs(30), || !is_running(new_pid)));
    let gone = execute(&mut client, "srv__echo", json!({"text": "x"}));
    assert_eq!(gone["structuredContent"]["error"], "unknown_mode", "{gone}");
    client.finish();
}

#[test]
fn problem3_a_server_that_crashed_is_named_until_it_runs_again() {
    let setup = Setup::new(json!({"flaky": flaky(&[])}));
    let mut client = setup.serve(&[]);
    let crashed = execute(&mut client, "flaky__crash", json!({}));
    assert_eq!(crashed["isError"], true, "{crashed}");
    let reply = select(&mut client, "echo some text back");
    assert!(reply.contains("flaky: failed ("), "{reply}");
    let again = execute(&mut client, "flaky__echo", json!({"text": "b"}));
    assert_eq!(again["structuredContent"], json!({"echo": "b"}), "{again}");
    let reply = select(&mut client, "echo some text back");
    assert!(!reply.contains("unavailable"), "{reply}");
    client.finish();
}

/// A file broken while servers run: they keep serving, and the warning says
/// so (it used to say no upstream would be served).
#[test]
fn a_broken_reload_says_the_servers_from_before_keep_serving() {
    let setup = Setup::new(json!({"first": flaky(&[])}));
    let mut client = setup.serve(&[]);
    let first = execute(&mut client, "first__echo", json!({"text": "1"}));
    assert_eq!(first["structuredContent"], json!({"echo": "1"}), "{first}");
    std::fs::write(setup.file(), "{\"mcpServers\": {").unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || setup.log_text().contains(
            "the 1 server(s) from before the change keep serving until it is fixed"
        )),
        "{}",
        setup.log_text()
    );
    assert!(!setup.log_text().contains("no upstream until it is fixed"));
    let still = execute(&mut client, "first__echo", json!({"text": "2"}));
    assert_eq!(still["structuredContent"], json!({"echo": "2"}), "{still}");
    client.finish();
}
