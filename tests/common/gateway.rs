//! The gateway test set-up: a temporary upstreams file with the gateway's
//! cache and state directories, and the deliberately unreliable server in
//! `tests/upstreams/fault_server.py`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::{Client, zenmode};

pub fn fault_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/fault_server.py")
        .display()
        .to_string()
}

/// A temp dir with an upstreams file and the gateway's cache and state dirs.
pub struct Setup {
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub fn new(servers: Value) -> Self {
        let setup = Setup {
            dir: tempfile::tempdir().unwrap(),
        };
        setup.write_servers(servers);
        setup
    }

    pub fn write_servers(&self, servers: Value) {
        std::fs::write(self.file(), json!({ "mcpServers": servers }).to_string()).unwrap();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn file(&self) -> PathBuf {
        self.path("upstreams.json")
    }

    pub fn log(&self) -> PathBuf {
        self.path("zenmode.log")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = zenmode(args);
        command
            .env("ZEN_UPSTREAMS", self.file())
            .env("ZEN_CACHE_DIR", self.path("cache"))
            .env("ZEN_STATE_DIR", self.path("state"))
            .env("RUST_LOG", "info");
        command
    }

    /// `zenmode serve` over stdio, its stderr kept in [`Setup::log`].
    pub fn serve(&self, extra: &[&str]) -> Client {
        let mut args = vec!["serve"];
        args.extend_from_slice(extra);
        let mut command = self.command(&args);
        command.stderr(std::fs::File::create(self.log()).unwrap());
        let mut client = Client::spawn_keeping_stderr(command);
        client.initialize();
        client
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }

    /// Runs a CLI command to its end: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.command(args).stdin(Stdio::null()).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

pub fn flaky(extra_args: &[&str]) -> Value {
    let mut args = vec![fault_server()];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    json!({"command": "python3", "args": args})
}

pub fn execute(client: &mut Client, mode: &str, request: Value) -> Value {
    client.tool("zen_execute", json!({"mode": mode, "request": request}))
}

pub fn pid_in(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether `pid` is a live process (a zombie counts as gone).
pub fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => !status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
        Err(_) => false,
    }
}

pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    done()
}
