//! Issue 44, items 4 and 6: `status` says when an entry changed since its
//! last run and why a server cannot start (without starting it); `doctor`
//! checks servers side by side, each within the wait; a failed `upstream
//! add` says nothing about a next start. The upstream is the fault server
//! (tests/upstreams/fault_server.py).

mod common;

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use common::gateway::{Setup, execute, fault_server, flaky};
use serde_json::{Value, json};

/// A CLI command with HOME in the test directory (doctor reads the
/// clients' files there) and no `ZEN44_UNSET_TOKEN` in its environment.
fn run(setup: &Setup, args: &[&str]) -> (i32, String, String) {
    let output = setup
        .command(args)
        .env("HOME", setup.path("home"))
        .env_remove("ZEN44_UNSET_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn status_json(setup: &Setup) -> Value {
    let (code, stdout, stderr) = run(setup, &["status", "--json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn row<'a>(status: &'a Value, server: &str) -> &'a Value {
    status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server)
        .unwrap_or_else(|| panic!("{server} missing from {status}"))
}

#[test]
fn status_says_an_entry_changed_and_why_a_server_cannot_start() {
    let setup = Setup::new(json!({"flaky": flaky(&[])}));
    let mut client = setup.serve(&[]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "hi"}));
    assert_eq!(reply["structuredContent"], json!({"echo": "hi"}), "{reply}");
    client.finish();
    let before = status_json(&setup);
    assert_ne!(row(&before, "flaky")["state"], "changed", "{before}");

    // The entry is broken after its run, and three servers that cannot
    // start are added.
    setup.write_servers(json!({
        "flaky": flaky(&["--exit-at-start"]),
        "gh": {"command": "python3", "args": [fault_server()],
               "env": {"GITHUB_TOKEN": "${ZEN44_UNSET_TOKEN}"}},
        "nocmd": {"command": "zen44-no-such-command", "args": ["--stdio"]},
        "badurl": {"url": "https://bad host/mcp"}
    }));
    let status = status_json(&setup);
    let flaky_row = row(&status, "flaky");
    assert_eq!(flaky_row["state"], "changed", "{status}");
    assert_eq!(flaky_row["entry_changed"], true, "{status}");
    assert!(
        flaky_row["note"]
            .as_str()
            .unwrap_or_default()
            .contains("entry changed"),
        "{status}"
    );
    let why = |server: &str| {
        let r = row(&status, server);
        assert_eq!(r["state"], "cannot start", "{status}");
        r["note"].as_str().unwrap_or_default().to_owned()
    };
    assert!(
        why("gh").contains("ZEN44_UNSET_TOKEN is not set"),
        "{status}"
    );
    assert!(
        why("nocmd").contains("\"zen44-no-such-command\" is not found on PATH"),
        "{status}"
    );
    assert!(why("badurl").contains("not a valid URL"), "{status}");
    // Found without starting anything: no state was recorded for them.
    for server in ["gh", "nocmd", "badurl"] {
        assert!(
            !setup.path("state/upstreams").join(server).exists(),
            "{server} was started"
        );
    }
    let (_, plain, _) = run(&setup, &["status"]);
    let line = |server: &str| {
        plain
            .lines()
            .find(|l| l.split_whitespace().next() == Some(server))
            .unwrap_or_else(|| panic!("{server} missing: {plain}"))
            .to_owned()
    };
    assert!(line("flaky").contains("changed"), "{plain}");
    assert!(line("nocmd").contains("cannot start"), "{plain}");
    assert!(plain.contains("is not found on PATH"), "{plain}");
}

#[test]
fn doctor_checks_hanging_servers_side_by_side_each_within_the_wait() {
    // Four servers that never answer and one good one; each check is
    // bounded by the wait, so one after another would take four waits.
    let wait = 4.0;
    let hang = |n: usize| (format!("hang{n}"), flaky(&["--start-delay", "60"]));
    let mut servers = serde_json::Map::new();
    for n in 0..4 {
        let (name, entry) = hang(n);
        servers.insert(name, entry);
    }
    servers.insert("good".into(), flaky(&[]));
    let setup = Setup::new(Value::Object(servers));
    let started = Instant::now();
    let (code, report, stderr) = run(
        &setup,
        &["doctor", "--upstream-wait-secs", &wait.to_string()],
    );
    let took = started.elapsed();
    assert_ne!(
        code, 0,
        "the hanging servers are problems: {report}\n{stderr}"
    );
    assert!(
        took < Duration::from_secs_f64(wait * 3.0),
        "doctor took {took:?} for four hanging servers with a {wait}s wait each: {report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("ok") && l.contains("good") && l.contains("6 tools")),
        "{report}"
    );
    for n in 0..4 {
        assert!(
            report.lines().any(|l| l.starts_with("FAIL")
                && l.contains(&format!("hang{n}"))
                && l.contains("did not list its tools within")),
            "{report}"
        );
    }
}

#[test]
fn a_failed_add_says_nothing_was_written_and_nothing_about_a_next_start() {
    let setup = Setup::new(json!({}));
    let file_before = std::fs::read(setup.file()).unwrap();
    let broken = [
        "python3".to_owned(),
        fault_server(),
        "--exit-at-start".into(),
    ];
    let mut args = vec!["upstream", "add", "broken", "--"];
    args.extend(broken.iter().map(String::as_str));
    let (code, stdout, stderr) = run(&setup, &args);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert!(!stdout.contains("next start"), "{stdout}");
    assert!(!stdout.contains("picked this up"), "{stdout}");
    assert_eq!(std::fs::read(setup.file()).unwrap(), file_before);

    // With --keep the entry is written (disabled), and the line about
    // running servers belongs.
    let mut keep = vec!["upstream", "add", "broken", "--keep", "--"];
    keep.extend(broken.iter().map(String::as_str));
    let (code, stdout, stderr) = run(&setup, &keep);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("added \"broken\""), "{stdout}");
    assert!(stdout.contains("next start uses it"), "{stdout}");
}
