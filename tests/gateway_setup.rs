//! Setting the gateway up as a new user would: importing other
//! clients' files, never fronting zenmode itself, upstreams that die with
//! their zenmode, secrets kept out of the file, and remote errors a person
//! can act on. Real npm servers come from `tests/upstreams/install.sh`.

mod common;

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::Duration,
};

use common::{
    binary,
    gateway::{Setup, execute, fault_server, flaky, wait_until},
    text_of, zenmode,
};
use serde_json::{Value, json};

/// A `zenmode` command with HOME (and so every client's config) in `home`,
/// and the default upstreams file under it.
fn at_home(home: &Path, args: &[&str]) -> Command {
    let mut command = zenmode(args);
    command
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("ZEN_CONFIG_DIR")
        .env("ZEN_CACHE_DIR", home.join("cache"))
        .env("ZEN_STATE_DIR", home.join("state"))
        .stdin(Stdio::null());
    command
}

fn run(mut command: Command) -> (i32, String) {
    let output = command.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

fn home_upstreams(home: &Path) -> PathBuf {
    home.join(".config/zenmode/upstreams.json")
}

fn servers_in(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap_or_else(|_| "{}".into());
    serde_json::from_str::<Value>(&text).unwrap()["mcpServers"].clone()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn problem1_self_import_skips_every_entry_that_runs_zenmode_and_spawns_none() {
    let home = tempfile::tempdir().unwrap();
    let marker = home.path().join("spawned");
    let desktop = home.path().join("claude_desktop_config.json");
    let wrapped = format!("touch {}; exec {} serve", marker.display(), binary());
    std::fs::write(
        &desktop,
        json!({"mcpServers": {
            "zen-direct": {"command": binary(), "args": ["serve"]},
            "zen-by-name": {"command": "zenmode", "args": ["serve", "--full"]},
            "zen-sh": {"command": "sh", "args": ["-c", wrapped]},
            "zen-npx": {"command": "npx", "args": ["-y", "zenmode@latest", "serve"]},
            "zen-env": {"command": "env", "args": ["RUST_LOG=info", binary(), "serve"]},
            "zen-cargo": {"command": "cargo", "args": ["run", "--bin", "zenmode", "--", "serve"]},
            "flaky": flaky(&[]),
        }})
        .to_string(),
    )
    .unwrap();
    let (code, output) = run(at_home(
        home.path(),
        &["upstream", "import", desktop.to_str().unwrap()],
    ));
    assert_eq!(code, 0, "{output}");
    let written = servers_in(&home_upstreams(home.path()));
    let names: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        ["flaky"],
        "only the real server is imported: {output}"
    );
    for name in [
        "zen-direct",
        "zen-by-name",
        "zen-sh",
        "zen-npx",
        "zen-env",
        "zen-cargo",
    ] {
        assert!(
            output
                .lines()
                .any(|l| l.contains(name) && l.contains("runs zenmode itself")),
            "{name} is skipped with a line saying why: {output}"
        );
    }
    assert!(!marker.exists(), "no zenmode was spawned: {output}");

    // `add` refuses it too, and writes nothing.
    let before = std::fs::read(home_upstreams(home.path())).unwrap();
    let (code, output) = run(at_home(
        home.path(),
        &[
            "upstream", "add", "me", "--", "npx", "-y", "zenmode", "serve",
        ],
    ));
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("runs zenmode itself"), "{output}");
    assert_eq!(std::fs::read(home_upstreams(home.path())).unwrap(), before);

    // A hand-written entry that runs zenmode is skipped by serve too.
    let setup = Setup::new(json!({
        "me": {"command": binary(), "args": ["serve"]},
        "flaky": flaky(&[]),
    }));
    let mut client = setup.serve(&[]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "hi"}));
    assert_eq!(text_of(&reply), "hi");
    drop(client);
    assert!(
        setup.log_text().contains("runs zenmode itself"),
        "{}",
        setup.log_text()
    );
}

/// zenmode hidden from the command rule: an HTTP entry pointing at a
/// serving zenmode, and a copy of the binary under another name. Both
/// answer the handshake as zenmode, so `upstream import` and `setup
/// --move-servers` leave them out and say why.
#[test]
fn an_entry_that_answers_as_zenmode_is_neither_imported_nor_moved() {
    let home = tempfile::tempdir().unwrap();
    let http = common::http::http_server(&[]);
    let url = format!("http://{}/mcp", http.address);
    let copy = home.path().join("bin/other-name");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(binary(), &copy).unwrap();
    let servers = json!({
        "zen-http": {"type": "http", "url": url},
        "zen-copy": {"command": copy, "args": ["serve"]},
        "flaky": flaky(&[]),
    });
    let desktop = home.path().join("claude_desktop_config.json");
    std::fs::write(&desktop, json!({"mcpServers": servers}).to_string()).unwrap();
    let (_, output) = run(at_home(
        home.path(),
        &["upstream", "import", desktop.to_str().unwrap()],
    ));
    let written = servers_in(&home_upstreams(home.path()));
    let names: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(names, ["flaky"], "{output}");
    for name in ["zen-http", "zen-copy"] {
        assert!(
            output.lines().any(|l| l.contains(name)
                && l.contains("runs zenmode itself")
                && l.contains("serverInfo")),
            "{name}: {output}"
        );
    }

    // The same entries in Cursor: setup moves the real server only.
    std::fs::remove_file(home_upstreams(home.path())).unwrap();
    let cursor = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, json!({"mcpServers": servers}).to_string()).unwrap();
    let (code, output) = run(at_home(home.path(), &["setup", "cursor", "--move-servers"]));
    assert_eq!(code, 0, "{output}");
    let client: Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    let left = client["mcpServers"].as_object().unwrap();
    assert!(
        left.contains_key("zen-http") && left.contains_key("zen-copy"),
        "{client}"
    );
    assert!(!left.contains_key("flaky"), "{client}");
    let written = servers_in(&home_upstreams(home.path()));
    let names: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(names, ["flaky"], "{output}");
}

/// The reports of `doctor` and `status`, and `upstream tools`' table, as a
/// person reads them: no servers' INFO lines between doctor's own, tools
/// in columns whatever their names' length, and a broken upstreams file
/// said on stdout by `status` as by `doctor`.
#[test]
fn reports_read_cleanly() {
    let home = tempfile::tempdir().unwrap();
    let tools = home.path().join("tools.json");
    let long = "a_tool_whose_name_is_much_longer_than_any_column_would_guess";
    std::fs::write(
        &tools,
        json!([
            {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}},
            {"name": long, "description": "Long.", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true}},
        ])
        .to_string(),
    )
    .unwrap();
    let file = home_upstreams(home.path());
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        json!({"mcpServers": {"noisy": flaky(&["--tools-file", tools.to_str().unwrap(),
                                                 "--log-env", "HOME"])}})
        .to_string(),
    )
    .unwrap();
    let mut doctor = at_home(home.path(), &["doctor"]);
    doctor.env_remove("RUST_LOG");
    let (_, output) = run(doctor);
    assert!(output.contains("noisy"), "{output}");
    assert!(!output.contains(" INFO "), "{output}");

    let (code, output) = run(at_home(home.path(), &["upstream", "tools", "noisy"]));
    assert_eq!(code, 0, "{output}");
    let columns: Vec<usize> = output
        .lines()
        .filter(|line| line.starts_with("echo") || line.starts_with(long))
        .map(|line| {
            line.find("not approved")
                .unwrap_or_else(|| panic!("{output}"))
        })
        .collect();
    assert_eq!(columns.len(), 2, "{output}");
    assert_eq!(columns[0], columns[1], "{output}");

    std::fs::write(&file, "{\"mcpServers\": ").unwrap();
    let output = at_home(home.path(), &["status"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stdout.contains("does not load") && stdout.contains("fix:"),
        "{output:?}"
    );
    let (_, doctor) = run(at_home(home.path(), &["doctor"]));
    let said = stdout.trim();
    assert!(doctor.contains(said), "status: {said}\ndoctor: {doctor}");
}

/// Every process whose parent chain leads to `root`.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some((ppid, _)) = stat_of(pid) {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    found.remove(0);
    found
}

/// (parent pid, process group) of a live, non-zombie process.
fn stat_of(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some((fields.get(1)?.parse().ok()?, fields.get(2)?.parse().ok()?))
}

fn live_in_groups(groups: &BTreeSet<u32>) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| stat_of(*pid).is_some_and(|(_, group)| groups.contains(&group)))
        .collect()
}

fn upstreams_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams")
}

#[test]
fn problem1_upstream_process_groups_die_with_a_sigkilled_zenmode() {
    let memory_bin = upstreams_dir().join("node_modules/.bin/mcp-server-memory");
    if !memory_bin.exists() {
        assert_ne!(
            std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref(),
            Ok("1"),
            "real upstream servers missing (run tests/upstreams/install.sh)"
        );
        eprintln!("skipping: tests/upstreams/install.sh has not been run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // npx runs node under itself; the fault server leaves a helper behind
    // that never reads stdin, as servers that start browsers or language
    // servers do.
    let helper = format!("sleep 300 & exec python3 {}", fault_server());
    let setup = Setup::new(json!({
        "memory": {"command": "npx", "args": ["--no-install", "mcp-server-memory"],
                   "cwd": upstreams_dir(),
                   "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
        "flaky": {"command": "sh", "args": ["-c", helper]},
    }));
    let mut client = setup.serve(&["--upstream-wait-secs", "60"]);
    let reply = execute(&mut client, "flaky__echo", json!({"text": "up"}));
    assert_eq!(text_of(&reply), "up");
    let reply = execute(&mut client, "memory__read_graph", json!({}));
    assert_ne!(reply["isError"], true, "{reply}");
    let zenmode_pid = client.pid().unwrap();
    let upstreams = descendants(zenmode_pid);
    let groups: BTreeSet<u32> = upstreams
        .iter()
        .filter_map(|pid| stat_of(*pid).map(|(_, group)| group))
        .filter(|group| *group != zenmode_pid)
        .collect();
    assert!(
        upstreams.len() >= 4 && !groups.is_empty(),
        "the servers and their children run: {upstreams:?}"
    );
    // SIGKILL: zenmode gets no chance to clean up.
    client.child.as_mut().unwrap().kill().unwrap();
    client.child.as_mut().unwrap().wait().unwrap();
    let gone = wait_until(Duration::from_secs(5), || {
        live_in_groups(&groups).is_empty()
    });
    let left: Vec<(u32, String)> = live_in_groups(&groups)
        .into_iter()
        .map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (pid, String::from_utf8_lossy(&line).replace('\0', " "))
        })
        .collect();
    for (pid, _) in &left {
        // SAFETY: test clean-up of processes this test started.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(gone, "processes left after zenmode died: {left:?}");
}

#[test]
fn problem7_upstreams_file_is_private_and_add_works_on_a_fresh_home() {
    let home = tempfile::tempdir().unwrap();
    let (code, output) = run(at_home(
        home.path(),
        &[
            "upstream",
            "add",
            "api",
            "--url",
            "https://example.invalid/mcp",
            "--header",
            "Authorization: Bearer tok-secret-123",
            "--no-fetch",
        ],
    ));
    assert_eq!(code, 0, "{output}");
    let file = home_upstreams(home.path());
    assert_eq!(mode_of(&file), 0o600, "the file is private");
    assert_eq!(mode_of(file.parent().unwrap()), 0o700, "its directory too");
    assert!(!output.contains("tok-secret-123"), "{output}");

    // An existing readable file becomes private when zenmode rewrites it.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, output) = run(at_home(
        home.path(),
        &["upstream", "add", "two", "--no-fetch", "--", "true"],
    ));
    assert_eq!(code, 0, "{output}");
    assert_eq!(mode_of(&file), 0o600);
    for entry in std::fs::read_dir(file.parent().unwrap()).unwrap().flatten() {
        assert_eq!(mode_of(&entry.path()), 0o600, "{}", entry.path().display());
    }
}

#[test]
fn problem7_placeholders_are_expanded_from_the_environment_and_stay_secret() {
    let setup = Setup::new(json!({
        "flaky": {"command": "python3", "args": [fault_server(), "--hostile"],
                  "env": {"TOKEN": "${ZT_SETUP_TOKEN}", "LITERAL": "$${NOT_EXPANDED}",
                          "WORD": "${ZT_SETUP_WORD}"}},
        "broken": {"command": "python3", "args": [fault_server()],
                   "env": {"TOKEN": "${ZT_SETUP_UNSET}"}},
    }));
    let mut command = setup.command(&["serve"]);
    command
        .env("ZT_SETUP_TOKEN", "expanded-secret-4711")
        // Too short to count as a secret, so the server's echo shows it.
        .env("ZT_SETUP_WORD", "hey")
        .env_remove("ZT_SETUP_UNSET")
        .stderr(std::fs::File::create(setup.log()).unwrap());
    let mut client = common::Client::spawn_keeping_stderr(command);
    client.initialize();
    let reply = execute(&mut client, "flaky__env_error", json!({"name": "TOKEN"}));
    let text = text_of(&reply);
    assert!(
        text.contains("[redacted]") && !text.contains("expanded-secret-4711"),
        "the expanded value is set and hidden: {text}"
    );
    assert!(!text.contains("${"), "{text}");
    let reply = execute(&mut client, "flaky__env_error", json!({"name": "WORD"}));
    assert!(
        text_of(&reply).contains("key hey was"),
        "the server got the filled value: {reply}"
    );
    // `$${NOT_EXPANDED}` is a literal, so its unset variable did not stop
    // the server (the value itself is hidden like any env value).
    drop(client);
    // The entry with an unset variable fails alone, and says which.
    let log = setup.log_text();
    assert!(
        log.lines()
            .any(|l| l.contains("broken") && l.contains("ZT_SETUP_UNSET") && l.contains("not set")),
        "the unset variable is named: {log}"
    );
    assert!(!setup.log_text().contains("expanded-secret-4711"));
}

/// An HTTP server answering every request with `status` (4 connections).
fn status_server(status: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope"
            );
        }
    });
    format!("http://{address}/mcp")
}

#[test]
fn problem8_remote_errors_say_what_happened_and_what_to_do() {
    let refused = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        format!("http://{address}/mcp")
    };
    // A plain HTTP server asked to speak TLS.
    let tls = status_server("200 OK").replace("http://", "https://");
    let cases = [
        (
            "unauthorized",
            status_server("401 Unauthorized"),
            "401",
            "--header 'Authorization: Bearer",
        ),
        (
            "forbidden",
            status_server("403 Forbidden"),
            "403",
            "permission",
        ),
        ("missing", status_server("404 Not Found"), "404", "URL"),
        (
            "wrongmethod",
            status_server("405 Method Not Allowed"),
            "405",
            "Streamable HTTP",
        ),
        (
            "broken",
            status_server("503 Service Unavailable"),
            "503",
            "try again",
        ),
        ("refused", refused, "connection refused", "running"),
        (
            "nodns",
            "http://zenmode-test.invalid/mcp".to_owned(),
            "not found",
            "host name",
        ),
        ("tls", tls, "TLS", "https"),
    ];
    let mut servers = serde_json::Map::new();
    for (name, url, _, _) in &cases {
        servers.insert(
            (*name).into(),
            json!({"type": "http", "url": url, "timeout": 10}),
        );
    }
    let setup = Setup::new(Value::Object(servers));
    let (_, stdout, stderr) = setup.run(&["upstream", "refresh"]);
    let output = stdout + &stderr;
    for (name, _, what, hint) in cases {
        let line = output
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no line for {name}: {output}"));
        assert!(
            line.contains(what) && line.contains(hint),
            "{name}: wants {what:?} and {hint:?}: {line}"
        );
        assert!(
            !line.contains("rmcp::") && !line.contains("WorkerTransport"),
            "{name}: no type names: {line}"
        );
    }
}

#[test]
fn problem9_import_reads_every_client_and_finds_the_usual_files() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let write = |path: PathBuf, value: Value| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    };
    let entry = |tag: &str| json!({"command": "python3", "args": [fault_server(), tag]});
    let project_key = project.display().to_string();
    write(
        home.path().join(".claude.json"),
        json!({"numStartups": 3, "mcpServers": {"cc-user": entry("u")},
               "projects": {project_key: {"mcpServers": {"cc-local": entry("l")}}}}),
    );
    write(
        project.join(".mcp.json"),
        json!({"mcpServers": {"cc-project": entry("p")}}),
    );
    write(
        home.path().join(".cursor/mcp.json"),
        json!({"mcpServers": {"cursor-user": entry("c")}}),
    );
    write(
        project.join(".cursor/mcp.json"),
        json!({"mcpServers": {"cursor-project": entry("cp")}}),
    );
    let mut vscode = entry("v");
    vscode["type"] = json!("stdio");
    write(
        project.join(".vscode/mcp.json"),
        json!({"inputs": [], "servers": {"vscode-project": vscode}}),
    );
    write(
        home.path().join(".codeium/windsurf/mcp_config.json"),
        json!({"mcpServers": {"windsurf": entry("w")}}),
    );
    let everything = [
        "cc-user",
        "cc-local",
        "cc-project",
        "cursor-user",
        "cursor-project",
        "vscode-project",
        "windsurf",
    ];

    // One Claude Code file, explicitly: user and local scopes.
    let claude = home.path().join(".claude.json");
    let mut command = at_home(
        home.path(),
        &["upstream", "import", claude.to_str().unwrap(), "--no-fetch"],
    );
    command.current_dir(&project);
    let (code, output) = run(command);
    assert_eq!(code, 0, "{output}");
    let written = servers_in(&home_upstreams(home.path()));
    assert!(
        written.get("cc-user").is_some() && written.get("cc-local").is_some(),
        "{output}"
    );
    std::fs::remove_file(home_upstreams(home.path())).unwrap();

    // Without a file, stdin not a terminal: shows, writes nothing, says what to run.
    let mut command = at_home(home.path(), &["upstream", "import", "--no-fetch"]);
    command.current_dir(&project);
    let (code, output) = run(command);
    assert_eq!(code, 0, "{output}");
    for name in everything {
        assert!(output.contains(name), "{name} is shown: {output}");
    }
    assert!(output.contains("--yes"), "says how to import: {output}");
    assert!(!home_upstreams(home.path()).exists(), "nothing written");

    let mut command = at_home(home.path(), &["upstream", "import", "--yes", "--no-fetch"]);
    command.current_dir(&project);
    let (code, output) = run(command);
    assert_eq!(code, 0, "{output}");
    let written = servers_in(&home_upstreams(home.path()));
    for name in everything.iter().filter(|name| **name != "cc-project") {
        assert!(written.get(name).is_some(), "{name} imported: {output}");
    }
    // A repository's .mcp.json server Claude Code has not approved is not
    // imported (nor started) by discovery, and the line says why.
    assert!(written.get("cc-project").is_none(), "{output}");
    assert!(
        output
            .lines()
            .any(|l| l.contains("cc-project") && l.contains("has not approved")),
        "{output}"
    );
}

#[test]
fn problem10_a_failed_add_writes_nothing_unless_keep() {
    let setup = Setup::new(json!({"flaky": flaky(&[])}));
    let before = std::fs::read(setup.file()).unwrap();
    let script = fault_server();
    let (code, stdout, stderr) = setup.run(&[
        "upstream",
        "add",
        "bad",
        "--",
        "python3",
        &script,
        "--exit-at-start",
    ]);
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        std::fs::read(setup.file()).unwrap(),
        before,
        "the file is unchanged: {stdout}{stderr}"
    );
    let (code, stdout, stderr) = setup.run(&[
        "upstream",
        "add",
        "bad",
        "--keep",
        "--",
        "python3",
        &script,
        "--exit-at-start",
    ]);
    let output = stdout + &stderr;
    assert_ne!(code, 0, "{output}");
    let written = servers_in(&setup.file());
    assert_eq!(written["bad"]["enabled"], false, "{output}");
    assert!(output.contains("disabled"), "{output}");
}
