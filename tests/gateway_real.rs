//! The gateway in front of real MCP servers from the registries: npm
//! `@modelcontextprotocol/server-{filesystem,memory,everything}` and PyPI
//! `mcp-server-{git,time,fetch}`, installed by `tests/upstreams/install.sh`
//! (`.ci/run` runs it). Without them these tests say so and pass, unless
//! `ZEN_REQUIRE_UPSTREAMS=1` (set by CI) makes their absence a failure.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::Duration,
};

use common::{Client, text_of, zenmode};
use serde_json::{Value, json};

fn upstreams_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams")
}

fn npm_bin(name: &str) -> PathBuf {
    upstreams_dir().join("node_modules/.bin").join(name)
}

fn pypi_bin(name: &str) -> PathBuf {
    upstreams_dir().join(".venv/bin").join(name)
}

/// The installed servers, or `None` (with a note) when they are missing.
fn installed() -> Option<()> {
    let needed = [
        npm_bin("mcp-server-filesystem"),
        npm_bin("mcp-server-memory"),
        npm_bin("mcp-server-everything"),
        pypi_bin("mcp-server-git"),
        pypi_bin("mcp-server-time"),
        pypi_bin("mcp-server-fetch"),
    ];
    let missing: Vec<String> = needed
        .iter()
        .filter(|path| !path.exists())
        .map(|path| path.display().to_string())
        .collect();
    if missing.is_empty() {
        return Some(());
    }
    if std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref() == Ok("1") {
        panic!("real upstream servers missing (run tests/upstreams/install.sh): {missing:?}");
    }
    eprintln!(
        "skipping: real upstream servers not installed (tests/upstreams/install.sh): {missing:?}"
    );
    None
}

struct Real {
    dir: tempfile::TempDir,
}

impl Real {
    fn new() -> Self {
        let real = Real {
            dir: tempfile::tempdir().unwrap(),
        };
        let work = real.work();
        std::fs::create_dir_all(&work).unwrap();
        let config = json!({"mcpServers": {
            "fs": {"command": npm_bin("mcp-server-filesystem"), "args": [work]},
            "memory": {"command": npm_bin("mcp-server-memory"),
                       "env": {"MEMORY_FILE_PATH": real.dir.path().join("memory.jsonl")}},
            "everything": {"command": npm_bin("mcp-server-everything")},
            "git": {"command": pypi_bin("mcp-server-git")},
            "time": {"command": pypi_bin("mcp-server-time")},
            "fetch": {"command": pypi_bin("mcp-server-fetch")},
        }});
        std::fs::write(real.file(), config.to_string()).unwrap();
        real
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("upstreams.json")
    }

    fn serve(&self) -> Client {
        let mut command = zenmode(&["serve", "--upstream-wait-secs", "60"]);
        command
            .env("ZEN_UPSTREAMS", self.file())
            .env("ZEN_CACHE_DIR", self.dir.path().join("cache"))
            .env("ZEN_STATE_DIR", self.dir.path().join("state"));
        let mut client = Client::spawn_command(command);
        client.initialize();
        client
    }
}

fn execute(client: &mut Client, mode: &str, request: Value) -> Value {
    let result = client.tool("zen_execute", json!({"mode": mode, "request": request}));
    assert_ne!(result["isError"], true, "{mode}: {result}");
    result
}

#[test]
fn real_servers_work_through_the_two_tools() {
    let Some(()) = installed() else { return };
    let real = Real::new();
    std::fs::write(real.work().join("notes.txt"), "gateway says hello\n").unwrap();
    let repo = real.work().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("untracked.txt"), "x").unwrap();

    let mut client = real.serve();
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);

    // filesystem: read a file in the allowed directory.
    let path = real.work().join("notes.txt");
    let read = execute(&mut client, "fs__read_text_file", json!({"path": path}));
    assert!(text_of(&read).contains("gateway says hello"), "{read}");

    // memory: create entities, then read the graph back.
    execute(
        &mut client,
        "memory__create_entities",
        json!({"entities": [
        {"name": "zenmode", "entityType": "project", "observations": ["fronts other servers"]}]}),
    );
    let graph = execute(&mut client, "memory__read_graph", json!({}));
    assert!(text_of(&graph).contains("fronts other servers"), "{graph}");

    // git: status of a fresh repository.
    let status = execute(&mut client, "git__git_status", json!({"repo_path": repo}));
    assert!(text_of(&status).contains("untracked.txt"), "{status}");

    // time: the current time in UTC.
    let now = execute(
        &mut client,
        "time__get_current_time",
        json!({"timezone": "UTC"}),
    );
    assert!(text_of(&now).contains("UTC"), "{now}");

    // fetch: listed and selectable without any network.
    // A first start of this Python server on a busy machine can outlast
    // the call's wait for it: ask again until it has joined.
    let started = std::time::Instant::now();
    let described = loop {
        let described = client.tool("zen_select_mode", json!({"mode": "fetch__fetch"}));
        if described["structuredContent"]["server"] == "fetch"
            || started.elapsed() > std::time::Duration::from_secs(90)
        {
            break described;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(
        described["structuredContent"]["server"], "fetch",
        "{described}"
    );

    // everything: an image result passes through exactly as the server sent it.
    let image = execute(&mut client, "everything__get-tiny-image", json!({}));
    let mut direct = Client::spawn_command(Command::new(npm_bin("mcp-server-everything")));
    direct.initialize();
    let original = direct.tool("get-tiny-image", json!({}));
    assert_eq!(image["content"], original["content"]);
    assert!(
        image["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == "image"),
        "{image}"
    );
    drop(direct);
    client.finish();
}

#[test]
fn a_real_long_operation_reports_progress_and_can_be_cancelled() {
    let Some(()) = installed() else { return };
    let real = Real::new();
    let mut client = real.serve();
    client.send(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "zen_execute", "_meta": {"progressToken": 99},
        "arguments": {"mode": "everything__trigger-long-running-operation",
                      "request": {"duration": 1, "steps": 4}}}}),
    );
    let done = client.reply_to(&json!(5));
    assert_ne!(done["result"]["isError"], true, "{done}");
    thread::sleep(Duration::from_millis(200));
    client.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}));
    client.reply_to(&json!(0));
    let progress = client
        .stray
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 99)
        .count();
    assert!(progress >= 2, "progress forwarded: {:?}", client.stray);

    // A long one, cancelled: the server keeps answering other calls at once.
    client.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "zen_execute",
        "arguments": {"mode": "everything__trigger-long-running-operation",
                      "request": {"duration": 60, "steps": 60}}}}),
    );
    thread::sleep(Duration::from_millis(500));
    client.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 6, "reason": "test"}}),
    );
    let sum = execute(&mut client, "everything__get-sum", json!({"a": 2, "b": 3}));
    assert!(text_of(&sum).contains('5'), "{sum}");
    client.finish();
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_streamable_http_upstream_with_headers_works() {
    let Some(()) = installed() else { return };
    let port = free_port();
    let mut everything = Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = (0..100).any(|_| {
        thread::sleep(Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "server-everything listens on {port}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("upstreams.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {"remote": {"type": "http",
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Api-Key": "header-secret-123456"}}}})
        .to_string(),
    )
    .unwrap();
    let mut command = zenmode(&["serve"]);
    command
        .env("ZEN_UPSTREAMS", &file)
        .env("ZEN_CACHE_DIR", dir.path().join("cache"))
        .env("ZEN_STATE_DIR", dir.path().join("state"));
    let mut client = Client::spawn_command(command);
    client.initialize();
    let echoed = execute(&mut client, "remote__echo", json!({"message": "over http"}));
    assert!(text_of(&echoed).contains("over http"), "{echoed}");
    let version = execute(&mut client, "version", json!({}));
    assert!(
        !version.to_string().contains("header-secret-123456"),
        "{version}"
    );
    client.finish();
    everything.kill().ok();
    everything.wait().ok();
}
