//! Latency of 500 concurrent TCP sessions.
//!
//! Each session connects, initializes, lists the tools, makes one
//! `zen_select_mode` call and closes; all 500 start together. Prints the
//! p50, p99 and slowest connect time and whole-session time over a few
//! rounds, and how many sessions failed.
//!
//! ```sh
//! cargo bench --bench tcp_sessions
//! # side by side with another build (e.g. one from before the TCP fixes):
//! ZEN_BENCH_BEFORE=/tmp/zenmode-before cargo bench --bench tcp_sessions
//! ```
//!
//! `ZEN_BENCH_SESSIONS` (default 500) and `ZEN_BENCH_ROUNDS` (default 5)
//! change the load. It is a report, not a pass/fail check.

use std::{
    io::{BufRead, BufReader, Write},
    net::{TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    sync::{Arc, Barrier},
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

struct Sample {
    connect: Duration,
    session: Duration,
}

/// A `serve --transport tcp` child on a free loopback port.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(binary: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let child = Command::new(binary)
            .args(["serve", "--transport", "tcp", "--listen", &address])
            .env("RUST_LOG", "error")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .env_remove("OPENROUTER_API_KEY")
            .env_remove("XAI_API_KEY")
            .env_remove("CUSTOM_API_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {binary}: {error}"));
        let started = Instant::now();
        while TcpStream::connect(&address).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{binary} never listened"
            );
            thread::sleep(Duration::from_millis(20));
        }
        // Warm up: the selection index is built on the first select.
        session(&address, 0).expect("a warm-up session");
        Server { child, address }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn request(
    writer: &mut TcpStream,
    reader: &mut impl BufRead,
    message: Value,
) -> Result<Value, String> {
    let id = message["id"].clone();
    let mut line = message.to_string();
    line.push('\n');
    writer
        .write_all(line.as_bytes())
        .map_err(|e| e.to_string())?;
    loop {
        let mut reply = String::new();
        if reader.read_line(&mut reply).map_err(|e| e.to_string())? == 0 {
            return Err("closed".to_owned());
        }
        let reply: Value = serde_json::from_str(&reply).map_err(|e| e.to_string())?;
        if reply["id"] == id {
            return match reply.get("error") {
                Some(error) => Err(error.to_string()),
                None => Ok(reply),
            };
        }
    }
}

/// One whole session; the time to connect and the time for all of it.
fn session(address: &str, n: usize) -> Result<Sample, String> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(address).map_err(|e| e.to_string())?;
    let connect = started.elapsed();
    stream.set_nodelay(true).ok();
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
    request(
        &mut stream,
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "tcp-bench", "version": "1"}}}),
    )?;
    stream
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .map_err(|e| e.to_string())?;
    request(
        &mut stream,
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )?;
    request(
        &mut stream,
        &mut reader,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "zen_select_mode",
            "arguments": {"task_description": format!("find why request {n} times out under load")}}}),
    )?;
    stream.shutdown(std::net::Shutdown::Both).ok();
    Ok(Sample {
        connect,
        session: started.elapsed(),
    })
}

/// `sessions` sessions started together.
fn round(address: &str, sessions: usize) -> (Vec<Sample>, Vec<String>) {
    let barrier = Arc::new(Barrier::new(sessions));
    let workers: Vec<_> = (0..sessions)
        .map(|n| {
            let (address, barrier) = (address.to_owned(), barrier.clone());
            thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    barrier.wait();
                    session(&address, n)
                })
                .unwrap()
        })
        .collect();
    let mut samples = Vec::new();
    let mut failures = Vec::new();
    for worker in workers {
        match worker.join().unwrap() {
            Ok(sample) => samples.push(sample),
            Err(error) => failures.push(error),
        }
    }
    (samples, failures)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1000.0)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not used here.
    let sessions = env_number("ZEN_BENCH_SESSIONS", 500);
    let rounds = env_number("ZEN_BENCH_ROUNDS", 5);
    let mut builds = Vec::new();
    if let Ok(before) = std::env::var("ZEN_BENCH_BEFORE") {
        builds.push(("before".to_owned(), before));
    }
    builds.push((
        "this build".to_owned(),
        env!("CARGO_BIN_EXE_zenmode").to_owned(),
    ));

    println!(
        "{sessions} concurrent TCP sessions (connect, initialize, tools/list, zen_select_mode, close), {rounds} rounds"
    );
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>9}",
        "build",
        "conn p50",
        "conn p99",
        "conn max",
        "session p50",
        "session p99",
        "session max",
        "failed"
    );
    // Rounds alternate between the builds, so both see the same machine load.
    let servers: Vec<Server> = builds
        .iter()
        .map(|(_, binary)| Server::start(binary))
        .collect();
    let mut results: Vec<(Vec<Duration>, Vec<Duration>, Vec<String>)> =
        builds.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        for (server, result) in servers.iter().zip(&mut results) {
            let (samples, failures) = round(&server.address, sessions);
            result.0.extend(samples.iter().map(|s| s.connect));
            result.1.extend(samples.iter().map(|s| s.session));
            result.2.extend(failures);
            // Let closed connections drain before the next round.
            thread::sleep(Duration::from_millis(500));
        }
    }
    for ((name, _), (mut connect, mut session, failures)) in builds.iter().zip(results) {
        connect.sort();
        session.sort();
        println!(
            "{:<12} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11} {:>9}",
            name,
            ms(percentile(&connect, 50.0)),
            ms(percentile(&connect, 99.0)),
            ms(connect.last().copied().unwrap_or_default()),
            ms(percentile(&session, 50.0)),
            ms(percentile(&session, 99.0)),
            ms(session.last().copied().unwrap_or_default()),
            failures.len(),
        );
        if let Some(first) = failures.first() {
            println!("  first failure: {first}");
        }
    }
    println!("(times in milliseconds)");
}
