//! Gateway benchmarks for the issue's targets, each measured side by side
//! with its baseline in the same run:
//!
//! - `gateway_start`: spawn to first reply of `zenmode serve` with five
//!   upstreams configured and cached, beside a bare `cat` round trip and
//!   `zenmode serve` without upstreams (target ≤ 3× `cat`);
//! - `gateway_cold_call`: the first call to a cold upstream through zenmode
//!   (zenmode already running), beside spawning the same server and calling
//!   it directly (target: at most 5 ms more);
//! - `gateway_warm_call`: a call to a running upstream through
//!   `zen_execute`, beside the same call sent to the server directly
//!   (target: at most 1 ms more);
//! - `gateway_select`: one ranking over the built-in modes plus the real
//!   servers' catalogs in `../shared/catalogs` as gateway modes (p50 ≤ 1 ms).
//!
//! The upstream is `tests/upstreams/fault_server.py` (Python's standard
//! library, so the figures do not depend on npm). Criterion reports medians.

use std::{
    hint::black_box,
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use zenmode::{
    catalog::{Catalog, gateway_modes::upstream_mode, tool_examples::ExampleSource},
    select::Index,
};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fault_server() -> String {
    root()
        .join("tests/upstreams/fault_server.py")
        .display()
        .to_string()
}

/// A temp dir with five cached upstreams (all the fault server, under five names).
struct Configured {
    dir: tempfile::TempDir,
}

impl Configured {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let servers: serde_json::Map<String, Value> = ["alpha", "beta", "gamma", "delta", "epsilon"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                // Distinct args give distinct entries (and cache keys).
                (name.to_string(), json!({"command": "python3", "args": [fault_server(), "--instance", i.to_string()]}))
            })
            .collect();
        std::fs::write(
            dir.path().join("upstreams.json"),
            json!({"mcpServers": servers}).to_string(),
        )
        .unwrap();
        let configured = Configured { dir };
        // Fill the caches once.
        let status = configured
            .zenmode(&["modes", "list"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        configured
    }

    fn zenmode(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zenmode"));
        command
            .args(args)
            .env("RUST_LOG", "error")
            .env("ZEN_UPSTREAMS", self.dir.path().join("upstreams.json"))
            .env("ZEN_CACHE_DIR", self.dir.path().join("cache"))
            .env("ZEN_STATE_DIR", self.dir.path().join("state"))
            .stderr(Stdio::null());
        command
    }
}

/// A stdio JSON-RPC peer: a child process with line I/O.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Peer {
    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Peer {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 100,
        }
    }

    fn line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn initialize(&mut self) {
        self.line(INITIALIZE);
        self.read();
        self.line(INITIALIZED);
    }

    /// `tools/call`, waiting for its reply (skipping anything else).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}})
            .to_string(),
        );
        loop {
            let message = self.read();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{message}");
                return message;
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn first_reply(mut command: Command) {
    command.stderr(Stdio::null());
    let mut peer = Peer::spawn(command);
    peer.line(INITIALIZE);
    assert!(peer.read().get("result").is_some());
}

fn gateway_start(c: &mut Criterion) {
    let configured = Configured::new();
    let mut group = c.benchmark_group("gateway_start");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(6));
    group.bench_function("cat", |b| {
        b.iter(|| {
            let mut peer = Peer::spawn(Command::new("cat"));
            peer.line(INITIALIZE);
            peer.read();
        })
    });
    group.bench_function("zenmode_serve", |b| {
        b.iter(|| {
            let mut bare = Command::new(env!("CARGO_BIN_EXE_zenmode"));
            bare.arg("serve")
                .env("RUST_LOG", "error")
                .env("ZEN_CONFIG_DIR", "/nonexistent");
            first_reply(bare)
        })
    });
    group.bench_function("zenmode_serve_5_cached_upstreams", |b| {
        b.iter(|| first_reply(configured.zenmode(&["serve"])))
    });
    group.finish();
}

fn direct_server() -> Command {
    let mut command = Command::new("python3");
    command.arg(fault_server()).stderr(Stdio::null());
    command
}

fn gateway_cold_call(c: &mut Criterion) {
    let configured = Configured::new();
    let mut group = c.benchmark_group("gateway_cold_call");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    let echo = json!({"text": "hi"});
    group.bench_function("direct_spawn_initialize_call", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let mut peer = Peer::spawn(direct_server());
                peer.initialize();
                black_box(peer.call("echo", echo.clone()));
                total += start.elapsed();
            }
            total
        })
    });
    group.bench_function("through_zenmode_first_call", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let mut peer = Peer::spawn(configured.zenmode(&["serve"]));
                peer.initialize();
                let start = Instant::now();
                black_box(peer.call(
                    "zen_execute",
                    json!({"mode": "alpha__echo", "request": echo}),
                ));
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn gateway_warm_call(c: &mut Criterion) {
    let configured = Configured::new();
    let mut group = c.benchmark_group("gateway_warm_call");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(6));
    let mut direct = Peer::spawn(direct_server());
    direct.initialize();
    group.bench_function("direct", |b| {
        b.iter(|| black_box(direct.call("echo", json!({"text": "hi"}))))
    });
    let mut through = Peer::spawn(configured.zenmode(&["serve"]));
    through.initialize();
    through.call(
        "zen_execute",
        json!({"mode": "alpha__echo", "request": {"text": "warm up"}}),
    );
    group.bench_function("through_zenmode", |b| {
        b.iter(|| {
            black_box(through.call(
                "zen_execute",
                json!({"mode": "alpha__echo", "request": {"text": "hi"}}),
            ))
        })
    });
    group.finish();
}

fn gateway_select(c: &mut Criterion) {
    let catalogs = ["filesystem", "memory", "everything", "git", "time", "fetch"];
    let mut modes = Vec::new();
    for name in catalogs {
        let path: PathBuf = root()
            .join("../shared/catalogs")
            .join(format!("{name}.json"));
        let list: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let tools = list["tools"].as_array().unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        let examples = ExampleSource::for_server(&[name], &names);
        for tool in tools {
            let own = examples.examples(tool["name"].as_str().unwrap_or_default());
            modes.extend(upstream_mode(name, name, tool, own).ok());
        }
    }
    let catalog = Catalog::builtin().unwrap().with_modes(modes);
    let index = Index::build(&catalog);
    let queries = [
        "read the notes file in my home directory",
        "what time is it in Tokyo right now",
        "show me the git status of the repo",
        "remember that Alice works on billing",
        "fetch this web page and summarise it",
        "review my code for security problems",
    ];
    let mut group = c.benchmark_group("gateway_select");
    let mut next = 0;
    group.bench_function(
        format!("rank_builtin_plus_real_upstreams_{}", catalog.len()),
        |b| {
            b.iter(|| {
                next = (next + 1) % queries.len();
                black_box(index.ranking(queries[next]))
            })
        },
    );
    group.finish();
}

criterion_group!(
    benches,
    gateway_start,
    gateway_cold_call,
    gateway_warm_call,
    gateway_select
);
criterion_main!(benches);
