//! `zenmode setup CLIENT`: in a temporary HOME, the client files it writes
//! (Claude Desktop, Cursor, VS Code), their backups, a second run that
//! changes nothing, `--undo` byte for byte, and the errors that change
//! nothing; and Claude Code for real (`tests/peers/run.sh` installs it):
//! `claude mcp list` shows zenmode connected, a moved server answers
//! through zenmode's two tools and is gone from Claude Code's own list.
//!
//! The moves start real servers from `tests/upstreams/install.sh`. Without
//! them, or without Claude Code, these tests say so and pass, unless
//! `ZEN_REQUIRE_UPSTREAMS=1` or `ZEN_REQUIRE_CLAUDE=1` (CI) makes it a
//! failure.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::{Client, text_of};
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn time_server() -> Option<PathBuf> {
    let path = repo().join("tests/upstreams/.venv/bin/mcp-server-time");
    if path.exists() {
        return Some(path);
    }
    assert_ne!(
        std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref(),
        Ok("1"),
        "{} is missing: run tests/upstreams/install.sh",
        path.display()
    );
    eprintln!("skipping: {} is not installed", path.display());
    None
}

fn claude_bin_dir() -> Option<PathBuf> {
    let dir = repo().join("tests/peers/node_modules/.bin");
    if dir.join("claude").exists() {
        return Some(dir);
    }
    assert_ne!(
        std::env::var("ZEN_REQUIRE_CLAUDE").as_deref(),
        Ok("1"),
        "Claude Code is missing: run tests/peers/run.sh claude"
    );
    eprintln!("skipping: Claude Code is not installed (tests/peers/run.sh claude)");
    None
}

/// A throw-away HOME with zenmode's and the clients' directories in it.
struct Home {
    dir: tempfile::TempDir,
    /// Directories put first on PATH (Claude Code's `claude`).
    path: Vec<PathBuf>,
}

impl Home {
    fn new() -> Self {
        Home {
            dir: tempfile::tempdir().unwrap(),
            path: Vec::new(),
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn gateway_file(&self) -> PathBuf {
        self.path("zen-config/upstreams.json")
    }

    /// A command with this HOME and nothing of the machine's own
    /// configuration: no XDG or Claude directories, no API keys.
    fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command.args(args);
        for (key, _) in std::env::vars() {
            let upper = key.to_ascii_uppercase();
            if ["ANTHROPIC_", "CLAUDE", "XDG_", "ZEN_"]
                .iter()
                .any(|p| upper.starts_with(p))
                || common::PROVIDER_VARIABLES.contains(&key.as_str())
            {
                command.env_remove(&key);
            }
        }
        let mut path = self.path.clone();
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        command
            .env("PATH", std::env::join_paths(path).unwrap())
            .env("HOME", self.dir.path())
            .env("ZEN_CONFIG_DIR", self.path("zen-config"))
            .env("ZEN_STATE_DIR", self.path("zen-state"))
            .env("ZEN_CACHE_DIR", self.path("zen-cache"))
            .env("ZEN_STORE", "memory:")
            .env("CI", "true")
            .env("NO_COLOR", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("RUST_LOG", "warn")
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::null());
        command
    }

    /// Runs zenmode; (exit code, stdout, stderr).
    fn zenmode(&self, args: &[&str]) -> (i32, String, String) {
        let output = self
            .command(Path::new(common::binary()), args)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let file = self.path(relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        file
    }
}

fn read_json(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// The entry every file client gets: the test binary itself, `serve`.
fn our_binary() -> String {
    std::fs::canonicalize(common::binary())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn file_clients_get_zenmode_once_and_undo_restores_bytes() {
    let cases = [
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            "mcpServers",
        ),
        ("vscode", ".config/Code/User/mcp.json", "servers"),
    ];
    for (client, relative, key) in cases {
        let home = Home::new();
        // Odd spacing and an unrelated key: undo must give these bytes back.
        let original = format!(
            "{{\"theme\":  \"dark\",\n \"{key}\": {{\"notes\": {{\"type\": \"stdio\", \"command\": \"notes-server\", \"args\": [\"--db\", \"x\"]}}}},\n \"inputs\": []}}\n"
        );
        let file = home.write(relative, &original);

        let (code, out, err) = home.zenmode(&["setup", client]);
        assert_eq!(code, 0, "{client}: {out}{err}");
        assert!(
            out.contains(&format!("zenmode setup {client} --undo")),
            "{out}"
        );
        let written = read_json(&file);
        assert_eq!(written["theme"], "dark", "{client}: other keys stay");
        assert_eq!(written["inputs"], json!([]));
        assert_eq!(written[key]["notes"]["command"], "notes-server");
        let entry = &written[key]["zenmode"];
        assert_eq!(entry["command"], our_binary(), "{client}: {written}");
        assert_eq!(entry["args"], json!(["serve"]));
        if client == "vscode" {
            assert_eq!(entry["type"], "stdio", "VS Code entries carry a type");
        } else {
            assert!(entry.get("type").is_none(), "{entry}");
        }
        let backup = home.path(&format!("zen-state/setup/{client}/client-before.json"));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);

        // Twice: no second entry, the file untouched, the backup kept.
        let after_first = std::fs::read(&file).unwrap();
        let (code, out, _) = home.zenmode(&["setup", client]);
        assert_eq!(code, 0);
        assert!(out.contains("already runs zenmode"), "{out}");
        assert_eq!(std::fs::read(&file).unwrap(), after_first);
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);

        let (code, out, err) = home.zenmode(&["setup", client, "--undo"]);
        assert_eq!(code, 0, "{out}{err}");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            original,
            "{client}"
        );
        assert!(!backup.exists(), "the backup is used up");
        let (code, _, err) = home.zenmode(&["setup", client, "--undo"]);
        assert_ne!(code, 0);
        assert!(err.contains("has not changed"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    }
}

#[test]
fn a_missing_file_is_created_and_undo_removes_it() {
    let home = Home::new();
    std::fs::create_dir_all(home.path(".cursor")).unwrap();
    let file = home.path(".cursor/mcp.json");
    let (code, out, err) = home.zenmode(&["setup", "cursor"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read_json(&file)["mcpServers"]["zenmode"]["args"],
        json!(["serve"])
    );
    let (code, out, _) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0);
    assert!(out.contains("did not exist before setup"), "{out}");
    assert!(!file.exists());
}

#[test]
fn a_shared_entry_runs_connect_with_its_profile_and_undo_removes_it() {
    let home = Home::new();
    std::fs::create_dir_all(home.path(".cursor")).unwrap();
    let file = home.path(".cursor/mcp.json");
    home.write(
        "zen-config/upstreams.json",
        r#"{"mcpServers": {"files": {"command": "true"}}}"#,
    );
    // A profile that does not exist is refused before anything changes.
    let (code, _, err) = home.zenmode(&["setup", "cursor", "--shared", "--profile", "work"]);
    assert_ne!(code, 0);
    assert!(err.contains("no profile \"work\""), "{err}");
    assert!(!file.exists());
    let (code, _, err) = home.zenmode(&["profile", "add", "work", "files"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--shared", "--profile", "work"]);
    assert_eq!(code, 0, "{out}{err}");
    let entry = &read_json(&file)["mcpServers"]["zenmode"];
    assert_eq!(entry["command"], our_binary());
    assert_eq!(entry["args"], json!(["connect", "--profile", "work"]));
    let (code, out, _) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0, "{out}");
    assert!(!file.exists());
}

#[test]
fn bad_input_changes_nothing() {
    let home = Home::new();
    // Not installed: no client directory, and nothing is created.
    let (code, _, err) = home.zenmode(&["setup", "cursor"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not seem installed"), "{err}");
    assert!(!home.path(".cursor").exists());
    // Claude Code without `claude` on PATH.
    let (code, _, err) = home.zenmode_with_path(&["setup", "claude-code"], "/nonexistent");
    assert_eq!(code, 2);
    assert!(err.contains("no `claude` command"), "{err}");
    assert!(!home.path(".claude.json").exists());

    // Not JSON (VS Code allows comments; zenmode says why it stops).
    let text = "{\n  // my servers\n  \"servers\": {}\n}\n";
    let file = home.write(".config/Code/User/mcp.json", text);
    let (code, _, err) = home.zenmode(&["setup", "vscode", "--move-servers"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("is not JSON") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(!home.path("zen-state/setup").exists(), "no backup either");

    // A server of zenmode's name that is something else is not replaced.
    let text = "{\"mcpServers\": {\"zenmode\": {\"command\": \"other-tool\"}}}";
    let file = home.write(".cursor/mcp.json", text);
    let (code, _, err) = home.zenmode(&["setup", "cursor"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not run zenmode"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

impl Home {
    fn zenmode_with_path(&self, args: &[&str], path: &str) -> (i32, String, String) {
        let output = self
            .command(Path::new(common::binary()), args)
            .env("PATH", path)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

#[test]
fn cursor_servers_move_behind_zenmode_and_back() {
    let Some(time) = time_server() else { return };
    let home = Home::new();
    let original = serde_json::to_string_pretty(&json!({"mcpServers": {
        "time": {"command": time},
        // zenmode under another name: never imported into itself, never added twice.
        "zen-old": {"command": our_binary(), "args": ["serve", "--full"]},
        // A transport zenmode does not speak stays where it is.
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }}))
    .unwrap();
    let file = home.write(".cursor/mcp.json", &original);
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("moved time (user scope) behind zenmode"),
        "{out}"
    );
    assert!(out.contains("kept in Cursor: legacy"), "{out}");
    let client = read_json(&file);
    let names: Vec<&String> = client["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["zen-old", "legacy"], "{client}");
    let gateway = read_json(&home.gateway_file());
    let moved: Vec<&String> = gateway["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(moved, ["time"], "only the time server moves: {gateway}");

    let (code, out, err) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    assert!(
        !home.gateway_file().exists(),
        "the gateway file did not exist before"
    );
}

/// Undo reverses what setup changed and nothing else: the client's file
/// changed after setup (a server added, a key written), and undo keeps those
/// changes while it takes zenmode out and puts the moved server back.
#[test]
fn undo_keeps_what_the_client_wrote_after_setup() {
    let Some(time) = time_server() else { return };
    let home = Home::new();
    let file = home.write(
        ".cursor/mcp.json",
        &json!({"mcpServers": {"time": {"command": time}}}).to_string(),
    );
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("moved time (user scope) behind zenmode"),
        "{out}"
    );

    // Cursor (or its user) changes the file after setup.
    let mut changed = read_json(&file);
    changed["mcpServers"]["later"] = json!({"command": "later-server", "args": ["--x"]});
    changed["editor"] = json!({"fontSize": 14});
    std::fs::write(&file, serde_json::to_string_pretty(&changed).unwrap()).unwrap();

    let (code, out, err) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("put time back in Cursor (user scope)"),
        "{out}"
    );
    let after = read_json(&file);
    let servers = after["mcpServers"].as_object().unwrap();
    assert!(servers.get("zenmode").is_none(), "{after}");
    assert_eq!(servers["time"], json!({"command": time}), "{after}");
    assert_eq!(servers["later"]["command"], "later-server", "{after}");
    assert_eq!(after["editor"]["fontSize"], 14, "{after}");
    assert!(
        !home.gateway_file().exists(),
        "nothing else changed the gateway's file: it goes back to not existing"
    );
    assert!(!home.path("zen-state/setup/cursor/journal.json").exists());
}

/// Two setups with the user's own changes between them: a server the user
/// added to zenmode's gateway after the first setup, and one added to the
/// client and moved by the second. Undo reverses both setups and keeps
/// the user's server (the gateway file no longer goes back whole).
#[test]
fn undo_after_two_setups_keeps_a_server_added_between_them() {
    let Some(time) = time_server() else { return };
    let home = Home::new();
    let time = time.to_str().unwrap();
    let file = home.write(
        ".cursor/mcp.json",
        &json!({"mcpServers": {"a": {"command": time}}}).to_string(),
    );
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = home.zenmode(&["upstream", "add", "b", "--", time]);
    assert_eq!(code, 0, "{out}{err}");
    let mut client = read_json(&file);
    client["mcpServers"]["c"] = json!({"command": time, "args": ["--local-timezone", "UTC"]});
    std::fs::write(&file, serde_json::to_string_pretty(&client).unwrap()).unwrap();
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("moved c (user scope)"), "{out}");

    let (code, out, err) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("did not exist before setup"), "{out}");
    let gateway = read_json(&home.gateway_file());
    let names: Vec<&String> = gateway["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["b"], "the user's server stays: {out}");
    let after = read_json(&file);
    let names: Vec<&String> = after["mcpServers"].as_object().unwrap().keys().collect();
    assert!(
        names.contains(&&"a".to_owned()) && names.contains(&&"c".to_owned()),
        "{after}"
    );
    assert!(after["mcpServers"].get("zenmode").is_none(), "{after}");
}

/// An entry setup touched that the user changed since is not overwritten:
/// undo says which and changes nothing at all.
#[test]
fn undo_refuses_to_overwrite_an_entry_changed_since() {
    let Some(time) = time_server() else { return };
    let home = Home::new();
    let file = home.write(
        ".cursor/mcp.json",
        &json!({"mcpServers": {"time": {"command": time}}}).to_string(),
    );
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    // The user adds a different server under the moved one's name.
    let mut changed = read_json(&file);
    changed["mcpServers"]["time"] = json!({"command": "my-own-time"});
    std::fs::write(&file, changed.to_string()).unwrap();
    let client_before = std::fs::read(&file).unwrap();
    let gateway_before = std::fs::read(home.gateway_file()).unwrap();

    let (code, out, err) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        err.contains("changed since setup") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), client_before);
    assert_eq!(std::fs::read(home.gateway_file()).unwrap(), gateway_before);
    assert!(home.path("zen-state/setup/cursor/journal.json").exists());
}

/// Real Claude Code in a temporary HOME: servers added in each of its
/// scopes (a plain `claude mcp add` is the local one) move behind zenmode,
/// a moved server is reached through zen_execute, Claude Code's file
/// changes after setup, and undo puts each server back in its own scope
/// while keeping those changes.
#[test]
fn claude_code_setup_moves_every_scope_and_undo_keeps_later_changes() {
    let Some(bin) = claude_bin_dir() else { return };
    let Some(time) = time_server() else { return };
    let mut home = Home::new();
    home.path.push(bin.clone());
    let claude = bin.join("claude");
    let project = home.path("project");
    std::fs::create_dir_all(&project).unwrap();
    let run_claude = |args: &[&str]| {
        let output = home
            .command(&claude, args)
            .current_dir(&project)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "claude {args:?}: {text}");
        text
    };
    let time = time.to_str().unwrap();
    // The user's servers, added Claude Code's own way, one per scope.
    run_claude(&["mcp", "add", "time", "--", time]);
    run_claude(&[
        "mcp",
        "add",
        "--scope",
        "project",
        "time-project",
        "--",
        time,
    ]);
    run_claude(&["mcp", "add", "--scope", "user", "time-user", "--", time]);
    let config = home.path(".claude.json");
    let scopes = |config: &Value| {
        let local = config["projects"][project.to_str().unwrap()]["mcpServers"].clone();
        let project_file = read_json(&project.join(".mcp.json"))["mcpServers"].clone();
        (local, project_file, config["mcpServers"].clone())
    };
    let (local, project_servers, user) = scopes(&read_json(&config));
    assert!(local.get("time").is_some(), "a plain add is local: {local}");
    approve_project_servers(&config, &project, &["time-project"]);

    let zenmode_here = |args: &[&str]| {
        let output = home
            .command(Path::new(common::binary()), args)
            .current_dir(&project)
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, out, err) = zenmode_here(&["setup", "claude-code", "--move-servers"]);
    assert_eq!(code, 0, "{out}{err}");
    for (name, scope) in [
        ("time", "local scope of"),
        ("time-project", "project scope of"),
        ("time-user", "user scope"),
    ] {
        assert!(out.contains(&format!("moved {name} ({scope}")), "{out}");
    }

    let listing = run_claude(&["mcp", "list"]);
    let zen_line = listing
        .lines()
        .find(|line| line.starts_with("zenmode:"))
        .unwrap_or_else(|| panic!("no zenmode in claude mcp list:\n{listing}"));
    assert!(zen_line.contains("Connected"), "{listing}");
    assert!(zen_line.contains(&our_binary()), "{zen_line}");
    assert!(
        !listing.lines().any(|line| line.starts_with("time")),
        "a moved server is still in Claude Code's own list:\n{listing}"
    );

    // A moved server's tool, through zenmode's two tools.
    let mut command = home.command(Path::new(common::binary()), &["serve"]);
    command.stdin(std::process::Stdio::piped());
    let mut client = Client::spawn_command(command);
    client.initialize();
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    let result = client.tool(
        "zen_execute",
        json!({"mode": "time__get_current_time", "request": {"timezone": "Europe/Paris"}}),
    );
    assert_ne!(result["isError"], true, "{result}");
    assert!(text_of(&result).contains("Europe/Paris"), "{result}");
    drop(client);

    // A second setup adds nothing.
    let (code, out, _) = zenmode_here(&["setup", "claude-code", "--move-servers"]);
    assert_eq!(code, 0);
    assert!(out.contains("already runs zenmode"), "{out}");

    // Claude Code's file changes after setup: a server in two scopes, and
    // state of its own.
    run_claude(&[
        "mcp",
        "add",
        "--scope",
        "user",
        "later",
        "--",
        "later-server",
    ]);
    run_claude(&["mcp", "add", "later-local", "--", "later-server"]);
    let mut state = read_json(&config);
    state["zenTestAccountNote"] = json!("kept");
    std::fs::write(&config, serde_json::to_string_pretty(&state).unwrap()).unwrap();

    let (code, out, err) = zenmode_here(&["setup", "claude-code", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("put time back in Claude Code (local scope of"),
        "{out}"
    );
    let after = read_json(&config);
    let (local_after, project_after, user_after) = scopes(&after);
    assert_eq!(local_after["time"], local["time"], "{after}");
    assert_eq!(
        project_after["time-project"],
        project_servers["time-project"]
    );
    assert_eq!(user_after["time-user"], user["time-user"], "{after}");
    assert!(user_after.get("zenmode").is_none(), "{after}");
    assert_eq!(user_after["later"]["command"], "later-server", "{after}");
    assert_eq!(local_after["later-local"]["command"], "later-server");
    assert_eq!(after["zenTestAccountNote"], "kept");
    let gateway = home.gateway_file();
    if gateway.exists() {
        let servers = read_json(&gateway)["mcpServers"].clone();
        assert_eq!(servers, json!({}), "{servers}");
    }
    let listing = run_claude(&["mcp", "list"]);
    for name in ["time:", "time-project:", "time-user:", "later:"] {
        assert!(listing.lines().any(|l| l.starts_with(name)), "{listing}");
    }
    assert!(
        !listing.lines().any(|l| l.starts_with("zenmode:")),
        "{listing}"
    );
}

/// What a user does in Claude Code to approve a folder's `.mcp.json`
/// servers: trust the folder and enable them (kept in `~/.claude.json`).
fn approve_project_servers(config: &Path, folder: &Path, names: &[&str]) {
    let mut state = if config.exists() {
        read_json(config)
    } else {
        json!({})
    };
    let project = &mut state["projects"][folder.to_str().unwrap()];
    project["hasTrustDialogAccepted"] = json!(true);
    project["enabledMcpjsonServers"] = json!(names);
    std::fs::write(config, serde_json::to_string_pretty(&state).unwrap()).unwrap();
}

/// A cloned repository's committed `.mcp.json`: a server Claude Code has
/// not approved is neither started nor moved, an approved one stays too
/// (the file is tracked), and the file is byte for byte as committed.
#[test]
fn claude_code_setup_leaves_a_repositorys_project_servers_alone() {
    let Some(bin) = claude_bin_dir() else { return };
    let Some(time) = time_server() else { return };
    let mut home = Home::new();
    home.path.push(bin.clone());
    let repo = home.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let started = home.path("teamtime-started");
    let script = format!("touch {}; exec {}", started.display(), time.display());
    let committed = serde_json::to_string_pretty(&json!({"mcpServers": {
        "teamtime": {"command": "sh", "args": ["-c", script]},
        "approved": {"command": time},
    }}))
    .unwrap();
    std::fs::write(repo.join(".mcp.json"), &committed).unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    };
    git(&["init", "-q", "."]);
    git(&["add", ".mcp.json"]);
    git(&["commit", "-q", "-m", "servers"]);
    // Claude Code writes its state file on first use; then the user
    // approves one of the two servers.
    let output = home
        .command(&bin.join("claude"), &["mcp", "list"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    approve_project_servers(&home.path(".claude.json"), &repo, &["approved"]);

    let output = home
        .command(
            Path::new(common::binary()),
            &["setup", "claude-code", "--move-servers"],
        )
        .current_dir(&repo)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}{output:?}");
    assert!(
        out.lines()
            .any(|l| l.contains("kept in Claude Code: teamtime") && l.contains("not approved")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("kept in Claude Code: approved") && l.contains("tracked by git")),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join(".mcp.json")).unwrap(),
        committed
    );
    assert!(!started.exists(), "the unapproved server was started");
    let gateway = home.gateway_file();
    if gateway.exists() {
        assert_eq!(read_json(&gateway)["mcpServers"], json!({}));
    }
}

/// `--env` gives zenmode's entry the variables its upstreams' `${NAME}`
/// placeholders need: on a new entry, and added to the one setup made
/// before, so the client keeps one zenmode; a bad name changes nothing.
#[test]
fn env_goes_into_the_one_zenmode_entry() {
    let home = Home::new();
    let file = home.write(".cursor/mcp.json", "{\"mcpServers\": {}}");
    let (code, out, err) = home.zenmode(&["setup", "cursor", "--env", "GITHUB_TOKEN=abc"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read_json(&file)["mcpServers"]["zenmode"]["env"],
        json!({"GITHUB_TOKEN": "abc"})
    );
    let mut command = home.command(
        Path::new(common::binary()),
        &["setup", "cursor", "--env", "TRACKER_TOKEN"],
    );
    let output = command.env("TRACKER_TOKEN", "from-shell").output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let servers = read_json(&file)["mcpServers"].clone();
    assert_eq!(servers.as_object().unwrap().len(), 1, "{servers}");
    assert_eq!(
        servers["zenmode"]["env"],
        json!({"GITHUB_TOKEN": "abc", "TRACKER_TOKEN": "from-shell"})
    );
    let before = std::fs::read(&file).unwrap();
    let (code, _, err) = home.zenmode(&["setup", "cursor", "--env", "NOT-A NAME=1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    let (code, _, err) = home.zenmode(&["setup", "cursor", "--env", "ZEN_TEST_UNSET_VAR"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not set"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let (code, out, err) = home.zenmode(&["setup", "cursor", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read_json(&file)["mcpServers"].get("zenmode").is_none());
}

/// The same with Claude Code: after `setup` and `setup --env`, `claude mcp
/// list` shows one zenmode, with no conflicting scopes.
#[test]
fn claude_code_env_keeps_one_zenmode_entry() {
    let Some(bin) = claude_bin_dir() else { return };
    let mut home = Home::new();
    home.path.push(bin.clone());
    let (code, out, err) = home.zenmode(&["setup", "claude-code"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = home.zenmode(&["setup", "claude-code", "--env", "GITHUB_TOKEN=abc"]);
    assert_eq!(code, 0, "{out}{err}");
    let config = read_json(&home.path(".claude.json"));
    assert_eq!(
        config["mcpServers"]["zenmode"]["env"]["GITHUB_TOKEN"],
        "abc"
    );
    let output = home
        .command(&bin.join("claude"), &["mcp", "list"])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        listing
            .lines()
            .filter(|l| l.starts_with("zenmode:"))
            .count(),
        1,
        "{listing}"
    );
    assert!(!listing.contains("Conflicting"), "{listing}");
    let (code, out, err) = home.zenmode(&["setup", "claude-code", "--undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("removed zenmode from Claude Code"), "{out}");
}
