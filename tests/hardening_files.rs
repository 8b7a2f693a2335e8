//! Issue 45, the files and processes zenmode keeps under unlucky and
//! hostile conditions: commands that write the upstreams file at once,
//! configuration files that are symbolic links (a dotfiles repository),
//! an upstreams file that is briefly missing, and helpers an upstream
//! starts outside its process group.

mod common;

use std::{
    path::Path,
    process::{Child, Stdio},
    time::Duration,
};

use common::{
    Client,
    gateway::{Setup, execute, fault_server, flaky, is_running, pid_in, wait_until},
    text_of, zenmode,
};
use serde_json::{Value, json};

fn servers_in(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap_or_else(|_| "{}".into());
    serde_json::from_str::<Value>(&text).unwrap()["mcpServers"].clone()
}

fn names_in(file: &Path) -> Vec<String> {
    servers_in(file)
        .as_object()
        .map(|servers| servers.keys().cloned().collect())
        .unwrap_or_default()
}

fn finish(child: Child) -> (i32, String) {
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

/// `zenmode upstream add NAME ... -- COMMAND` started (not awaited).
fn start_add(setup: &Setup, name: &str, extra: &[&str], command: &[&str]) -> Child {
    let mut args = vec!["upstream", "add", name];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(command);
    setup
        .command(&args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Item 3: several `upstream add` at once, each started before any ends,
/// keep every entry, with and without a file to begin with, repeated.
#[test]
fn item3_adds_at_once_keep_every_entry() {
    for round in 0..4 {
        let setup = Setup::new(json!({"first": {"command": "echo", "args": ["x"]}}));
        let mut expected = vec!["first".to_owned()];
        if round % 2 == 1 {
            std::fs::remove_file(setup.file()).unwrap();
            expected.clear();
        }
        let names: Vec<String> = (0..8).map(|i| format!("s{round}x{i}")).collect();
        let children: Vec<Child> = names
            .iter()
            .map(|name| start_add(&setup, name, &["--no-fetch"], &["echo", "x"]))
            .collect();
        for child in children {
            let (code, output) = finish(child);
            assert_eq!(code, 0, "round {round}: {output}");
        }
        expected.extend(names);
        let mut found = names_in(&setup.file());
        found.sort();
        expected.sort();
        assert_eq!(found, expected, "round {round}: every add kept its entry");
        let left: Vec<String> = std::fs::read_dir(setup.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "no temporary file left: {left:?}");
    }
}

/// Item 3 with the servers started first (the window in which the old
/// code lost an entry: read, start, write the old copy back).
#[test]
fn item3_adds_at_once_that_start_their_servers_keep_every_entry() {
    let server = fault_server();
    for round in 0..2 {
        let setup = Setup::new(json!({}));
        let names: Vec<String> = (0..6).map(|i| format!("f{round}x{i}")).collect();
        let children: Vec<Child> = names
            .iter()
            .map(|name| start_add(&setup, name, &[], &["python3", &server]))
            .collect();
        for child in children {
            let (code, output) = finish(child);
            assert_eq!(code, 0, "round {round}: {output}");
            assert!(output.contains("approved"), "{output}");
        }
        let mut found = names_in(&setup.file());
        found.sort();
        assert_eq!(found, names, "round {round}: every add kept its entry");
    }
}

/// Item 3: `remove`, `disable` and `add` at once each keep the others'
/// edits.
#[test]
fn item3_mixed_writers_at_once_keep_each_others_edits() {
    let mut servers = serde_json::Map::new();
    for i in 0..6 {
        servers.insert(format!("old{i}"), json!({"command": "echo", "args": ["x"]}));
    }
    let setup = Setup::new(Value::Object(servers));
    let mut children = Vec::new();
    for i in 0..6 {
        children.push(start_add(
            &setup,
            &format!("new{i}"),
            &["--no-fetch"],
            &["echo", "x"],
        ));
        let verb = if i % 2 == 0 { "remove" } else { "disable" };
        children.push(
            setup
                .command(&["upstream", verb, &format!("old{i}")])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    for child in children {
        let (code, output) = finish(child);
        assert_eq!(code, 0, "{output}");
    }
    let servers = servers_in(&setup.file());
    for i in 0..6 {
        assert!(servers.get(format!("new{i}")).is_some(), "{servers}");
        if i % 2 == 0 {
            assert!(servers.get(format!("old{i}")).is_none(), "{servers}");
        } else {
            assert_eq!(servers[format!("old{i}")]["enabled"], false, "{servers}");
        }
    }
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_symlink()
}

/// Item 12: an upstreams file that is a link into a dotfiles folder stays
/// a link, and its target gets the entry.
#[test]
fn item12_a_symlinked_upstreams_file_is_written_through() {
    let setup = Setup::new(json!({}));
    let dotfiles = setup.path("dotfiles");
    std::fs::create_dir(&dotfiles).unwrap();
    let target = dotfiles.join("upstreams.json");
    std::fs::rename(setup.file(), &target).unwrap();
    std::os::unix::fs::symlink("dotfiles/upstreams.json", setup.file()).unwrap();
    let (code, output) = finish(start_add(&setup, "linked", &["--no-fetch"], &["echo", "x"]));
    assert_eq!(code, 0, "{output}");
    assert!(is_link(&setup.file()), "the link stays a link");
    assert_eq!(names_in(&target), ["linked"], "the target got the entry");
    let (code, output) = {
        let (code, out, err) = setup.run(&["upstream", "remove", "linked"]);
        (code, out + &err)
    };
    assert_eq!(code, 0, "{output}");
    assert!(is_link(&setup.file()));
    assert!(names_in(&target).is_empty());
}

/// Item 12: `setup cursor` with `~/.cursor/mcp.json` linked into a dotfiles
/// folder writes zenmode's entry into the target and keeps the link.
#[test]
fn item12_setup_writes_through_a_symlinked_client_file() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path();
    std::fs::create_dir_all(home_path.join("dotfiles")).unwrap();
    std::fs::create_dir_all(home_path.join(".cursor")).unwrap();
    let target = home_path.join("dotfiles/cursor-mcp.json");
    std::fs::write(
        &target,
        r#"{"mcpServers": {"notes": {"command": "notes-server"}}}"#,
    )
    .unwrap();
    let link = home_path.join(".cursor/mcp.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut command = zenmode(&["setup", "cursor"]);
    command
        .env("HOME", home_path)
        .env_remove("XDG_CONFIG_HOME")
        .env("ZEN_CONFIG_DIR", home_path.join("zen-config"))
        .env("ZEN_STATE_DIR", home_path.join("zen-state"))
        .env("ZEN_CACHE_DIR", home_path.join("zen-cache"))
        .current_dir(home_path)
        .stdin(Stdio::null());
    let output = command.output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(is_link(&link), "~/.cursor/mcp.json is still a link: {said}");
    let written = servers_in(&target);
    assert_eq!(written["notes"]["command"], "notes-server", "{written}");
    assert!(written.get("zenmode").is_some(), "{written}");

    // Undo writes through the link too.
    let output = command.arg("--undo").output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(is_link(&link), "still a link after --undo: {said}");
    let restored = servers_in(&target);
    assert!(restored.get("zenmode").is_none(), "{restored}");
    assert_eq!(restored["notes"]["command"], "notes-server", "{restored}");
}

fn slow_call(client: &mut Client, id: &str, seconds: f64) {
    client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "zen_execute",
                   "arguments": {"mode": "flaky__slow", "request": {"seconds": seconds}}}}));
}

/// Item 17: an editor renames the file away and writes it back 2.5 s later
/// (the watcher looks every second): the server keeps running and the call
/// in flight gets its answer.
#[test]
fn item17_a_file_missing_for_a_moment_stops_nothing() {
    let setup = Setup::new(json!({}));
    let pid_file = setup.path("flaky.pid");
    setup.write_servers(json!({"flaky": flaky(&["--pid-file", pid_file.to_str().unwrap()])}));
    let mut client = setup.serve(&[]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "up"}));
    assert_eq!(text_of(&reply), "up");
    let pid = pid_in(&pid_file).expect("the server wrote its pid");
    slow_call(&mut client, "slow", 5.0);
    let aside = setup.path("upstreams.json.editing");
    std::fs::rename(setup.file(), &aside).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    std::fs::rename(&aside, setup.file()).unwrap();
    let reply = client.reply_to(&json!("slow"));
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(text_of(&reply["result"]), "slept 5.0s", "{reply}");
    assert!(is_running(pid), "the same server still runs");
    let reply = execute(&mut client, "flaky__count", json!({}));
    assert_eq!(pid_in(&pid_file), Some(pid), "{reply}");
    assert!(
        setup.log_text().contains("is missing"),
        "the log says why nothing changed: {}",
        setup.log_text()
    );
}

/// Item 17: a removal that lasts past the grace removes the servers; an
/// explicit empty file removes them at once, without the grace.
#[test]
fn item17_a_lasting_removal_or_an_empty_file_removes_the_servers() {
    let setup = Setup::new(json!({}));
    let pid_file = setup.path("flaky.pid");
    let servers = json!({"flaky": flaky(&["--pid-file", pid_file.to_str().unwrap()])});
    setup.write_servers(servers.clone());
    let mut client = setup.serve(&[]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "up"}));
    assert_eq!(text_of(&reply), "up");
    let pid = pid_in(&pid_file).unwrap();
    std::fs::remove_file(setup.file()).unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || !is_running(pid)),
        "the server stops once the file stays away: {}",
        setup.log_text()
    );
    // The log is written by a thread of its own: poll for the line.
    assert!(
        wait_until(Duration::from_secs(10), || setup
            .log_text()
            .contains("has been missing")),
        "{}",
        setup.log_text()
    );

    std::fs::remove_file(&pid_file).unwrap();
    setup.write_servers(servers);
    let back = wait_until(Duration::from_secs(20), || {
        text_of(&execute(
            &mut client,
            "flaky__echo",
            json!({"text": "again"}),
        )) == "again"
    });
    assert!(
        back,
        "served again once the file is back: {}",
        setup.log_text()
    );
    let pid = pid_in(&pid_file).unwrap();
    let missing_notes = setup.log_text().matches("is missing").count();
    std::fs::write(setup.file(), r#"{"mcpServers": {}}"#).unwrap();
    assert!(
        wait_until(Duration::from_secs(20), || !is_running(pid)),
        "an empty file stops the server: {}",
        setup.log_text()
    );
    assert_eq!(
        setup.log_text().matches("is missing").count(),
        missing_notes,
        "an empty file is no missing file"
    );
}

/// A stdio upstream that first starts three helpers out of its process
/// group's reach, each writing its pid to a file in `dir`: one in a new
/// session (`setsid`), one in a new process group (`setpgid`), and one
/// orphaned by a double fork in a new session of its own.
fn server_with_escaping_helpers(dir: &Path) -> Value {
    let d = dir.display();
    let quiet = "</dev/null >/dev/null 2>&1";
    let script = format!(
        "setsid sh -c 'echo $$ > {d}/session.tmp; mv {d}/session.tmp {d}/session; exec sleep 300' {quiet} & \
         python3 -c 'import os, time; os.setpgid(0, 0); open(\"{d}/group.tmp\", \"w\").write(str(os.getpid())); os.rename(\"{d}/group.tmp\", \"{d}/group\"); time.sleep(300)' {quiet} & \
         ( setsid sh -c 'echo $$ > {d}/orphan.tmp; mv {d}/orphan.tmp {d}/orphan; exec sleep 300' {quiet} & ) ; \
         exec python3 {}",
        fault_server()
    );
    json!({"command": "sh", "args": ["-c", script]})
}

const HELPERS: [&str; 3] = ["session", "group", "orphan"];

/// The helpers' pids, once all three have written them.
fn helper_pids(dir: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    assert!(
        wait_until(Duration::from_secs(20), || {
            pids = HELPERS
                .iter()
                .filter_map(|name| pid_in(&dir.join(name)))
                .collect();
            pids.len() == HELPERS.len()
        }),
        "the helpers started"
    );
    for pid in &pids {
        assert!(is_running(*pid), "helper {pid} runs");
    }
    pids
}

/// Waits for the helpers to end; kills and names those left.
fn assert_helpers_end(pids: &[u32], how: &str) {
    let gone = wait_until(Duration::from_secs(10), || {
        pids.iter().all(|pid| !is_running(*pid))
    });
    let left: Vec<u32> = pids.iter().copied().filter(|p| is_running(*p)).collect();
    for pid in &left {
        // SAFETY: test clean-up of processes this test started.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "{how}: helpers left running: {left:?}");
}

fn serve_with_helpers() -> (Setup, Client, Vec<u32>) {
    let setup = Setup::new(json!({}));
    let helpers = setup.path("helpers");
    std::fs::create_dir(&helpers).unwrap();
    setup.write_servers(json!({"flaky": server_with_escaping_helpers(&helpers)}));
    let mut client = setup.serve(&[]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "up"}));
    assert_eq!(text_of(&reply), "up", "{reply}");
    let pids = helper_pids(&helpers);
    (setup, client, pids)
}

/// Item 11: SIGKILL of zenmode ends the helpers that left the group.
#[test]
fn item11_helpers_outside_the_group_die_with_a_sigkilled_zenmode() {
    let (_setup, mut client, pids) = serve_with_helpers();
    let zenmode = client.child.as_mut().unwrap();
    zenmode.kill().unwrap();
    zenmode.wait().unwrap();
    assert_helpers_end(&pids, "after SIGKILL of zenmode");
}

/// Item 11: a clean exit of zenmode (its client closes stdin) ends them.
#[test]
fn item11_helpers_outside_the_group_end_with_a_clean_exit() {
    let (_setup, client, pids) = serve_with_helpers();
    assert!(client.finish().success());
    assert_helpers_end(&pids, "after zenmode exited");
}

/// Item 11: a server zenmode stops while it runs (removed from the file)
/// takes its helpers along; so does a server that exits on its own.
#[test]
fn item11_a_stopped_or_exited_server_takes_its_helpers_along() {
    let (setup, mut client, pids) = serve_with_helpers();
    std::fs::write(setup.file(), r#"{"mcpServers": {}}"#).unwrap();
    assert_helpers_end(&pids, "after the server was removed");

    let helpers = setup.path("helpers");
    for name in HELPERS {
        std::fs::remove_file(helpers.join(name)).unwrap();
    }
    setup.write_servers(json!({"flaky": server_with_escaping_helpers(&helpers)}));
    let up = wait_until(Duration::from_secs(20), || {
        text_of(&execute(
            &mut client,
            "flaky__echo",
            json!({"text": "again"}),
        )) == "again"
    });
    assert!(up, "{}", setup.log_text());
    let pids = helper_pids(&helpers);
    let reply = execute(&mut client, "flaky__crash", json!({}));
    assert_eq!(reply["isError"], true, "{reply}");
    assert_helpers_end(&pids, "after the server exited");
}
