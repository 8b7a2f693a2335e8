//! Load on `zenmode serve --transport http`: 64 clients on loopback, each
//! over a kept-alive connection, for a few seconds, for stateless
//! 2026-07-28 selects, legacy sessions (`Mcp-Session-Id`) and planner steps
//! on each store. Not a criterion bench: the figures of interest are
//! throughput and latency under concurrency.
//!
//! Every row runs twice:
//! - **saturated**: each client sends its next request as soon as the last
//!   one is answered. This finds the most requests per second; its latency
//!   is queueing time, 64 clients over that rate (Little's law), so it says
//!   little about how fast a request is served.
//! - **paced**: the 64 clients together offer a fixed rate (5,000 requests
//!   per second by default), each request on a schedule. Latency counts
//!   from the moment a request was due, not when it left, so a server that
//!   falls behind is charged for the wait (no coordinated omission), and
//!   the timer's lateness (up to a millisecond) is charged too.
//!
//! `cargo bench --bench http_load`; `ZEN_HTTP_CLIENTS`, `ZEN_HTTP_SECONDS`,
//! `ZEN_HTTP_RATE` (0 leaves out the paced runs) and
//! `ZEN_HTTP_CLIENT_THREADS` change the defaults (64 clients, 5 s, 5,000
//! requests/s, one client thread).
//! Targets: at least 5,000 requests/s, p99 at most 10 ms.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const TASKS: [&str; 4] = [
    "find why the login page crashes after the deploy",
    "review my staged changes before I commit",
    "plan the migration of the billing service",
    "ask another model for a second opinion on this design",
];

struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        // ZEN_HTTP_BIN runs another build (say, last release) for a side
        // by side comparison.
        let binary = std::env::var("ZEN_HTTP_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_zenmode").to_owned());
        let mut child = Command::new(binary)
            .args(["serve", "--transport", "http", "--listen", "127.0.0.1:0"])
            .args(["--max-connections", "4096"])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn zenmode");
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("zenmode: listening on ") {
                    let _ = sender.send(address.trim().to_owned());
                }
            }
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the server announced its address");
        Server { child, address }
    }
}

impl Server {
    /// CPU time the server process has used so far (user + system), read
    /// from /proc on Linux: per request it is a steadier figure than
    /// latency on a shared machine. `None` elsewhere.
    fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // Fields after the command name, which is in parentheses and may
        // hold spaces: utime and stime are the 14th and 15th fields.
        let after = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // The kernel's USER_HZ is 100 on every Linux this runs on.
        Some(Duration::from_millis(ticks * 10))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn select_call(id: u64, task: &str, stateless: bool) -> Value {
    let mut params = json!({"name": "zen_select_mode", "arguments": {"task_description": task}});
    if stateless {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "http-load", "version": "1"}
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// When a client sends: as soon as it can, or on a schedule.
struct Pace {
    interval: Option<Duration>,
    next: Instant,
}

impl Pace {
    /// Back to back, or one request every `interval` from `first`.
    fn new(interval: Option<Duration>, first: Instant) -> Self {
        Pace {
            interval,
            next: first,
        }
    }

    /// Waits for the next request's turn; returns the instant its latency
    /// counts from (when it was due, for a paced client).
    async fn turn(&mut self) -> Instant {
        let Some(interval) = self.interval else {
            return Instant::now();
        };
        let due = self.next;
        self.next += interval;
        tokio::time::sleep_until(due.into()).await;
        due
    }
}

/// The span a run measures: clients start earlier, so that connecting and
/// first-use costs fall before `from`.
#[derive(Clone, Copy)]
struct Window {
    from: Instant,
    until: Instant,
}

impl Window {
    fn counts(&self, start: Instant) -> bool {
        start >= self.from
    }
}

/// One client: its own connection pool of one, requests back to back (or
/// paced) until the window ends; returns the latency of each request that
/// started inside it.
async fn client_loop(
    url: String,
    stateless: bool,
    window: Window,
    mut pace: Pace,
) -> Result<Vec<Duration>, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|error| error.to_string())?;
    let mut session: Option<String> = None;
    let version = if stateless {
        "2026-07-28"
    } else {
        "2025-11-25"
    };
    if !stateless {
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "http-load", "version": "1"}}})
                .to_string(),
            )
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .ok_or("no session id")?
            .to_owned();
        response.text().await.map_err(|error| error.to_string())?;
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", version)
            .body(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .send()
            .await
            .map_err(|error| error.to_string())?;
        session = Some(id);
    }
    let mut latencies = Vec::new();
    let mut id = 1u64;
    while Instant::now() < window.until {
        let body = select_call(id, TASKS[id as usize % TASKS.len()], stateless).to_string();
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "zen_select_mode");
        if let Some(session) = &session {
            request = request.header("mcp-session-id", session);
        }
        let start = pace.turn().await;
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|error| error.to_string())?;
        if window.counts(start) {
            latencies.push(start.elapsed());
        }
        if !status.is_success() || !text.contains("\"mode\"") {
            return Err(format!("request {id}: {status} {text}"));
        }
        id += 1;
    }
    Ok(latencies)
}

/// One client of the planner workload (stateless requests): ten-step
/// plans, each step continuing the thread the first one started, so every
/// request reads and appends to the store.
async fn planner_loop(
    url: String,
    window: Window,
    mut pace: Pace,
) -> Result<Vec<Duration>, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|error| error.to_string())?;
    let mut latencies = Vec::new();
    let mut continuation: Option<String> = None;
    let mut step = 1u64;
    while Instant::now() < window.until {
        let mut request = json!({"step": format!("Step {step}: move the invoices table"),
            "step_number": step, "total_steps": 10, "next_step_required": step < 10});
        if let Some(id) = &continuation {
            request["continuation_id"] = json!(id);
        }
        let body = json!({"jsonrpc": "2.0", "id": step, "method": "tools/call", "params": {
        "name": "zen_execute", "arguments": {"mode": "planner", "request": request},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "http-load", "version": "1"}
        }}});
        let start = pace.turn().await;
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "zen_execute")
            .body(body.to_string())
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let reply: Value = response.json().await.map_err(|error| error.to_string())?;
        if window.counts(start) {
            latencies.push(start.elapsed());
        }
        let result = &reply["result"];
        if result["isError"] != false {
            return Err(format!("planner step {step}: {reply}"));
        }
        continuation = result["structuredContent"]["continuation_id"]
            .as_str()
            .map(str::to_owned);
        step = if step == 10 { 1 } else { step + 1 };
        if step == 1 {
            continuation = None;
        }
    }
    Ok(latencies)
}

#[derive(Clone, Copy)]
enum Workload {
    Select { stateless: bool },
    Planner,
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * share).round() as usize;
    sorted[index]
}

/// A row: saturated, then paced at `ZEN_HTTP_RATE` requests per second.
fn run(server: &Server, label: &str, clients: usize, seconds: u64, workload: Workload) {
    // ZEN_HTTP_ONLY=embedded runs only the rows whose label holds that text.
    if let Ok(only) = std::env::var("ZEN_HTTP_ONLY")
        && !label.contains(only.as_str())
    {
        return;
    }
    let rate: f64 = std::env::var("ZEN_HTTP_RATE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5000.0);
    measure(server, label, clients, seconds, workload, None);
    if rate > 0.0 {
        measure(server, label, clients, seconds, workload, Some(rate));
    }
}

/// One run of a row; `rate` paces the clients, `None` lets them go as fast
/// as the server answers.
fn measure(
    server: &Server,
    label: &str,
    clients: usize,
    seconds: u64,
    workload: Workload,
    rate: Option<f64>,
) {
    // One client thread by default: the load generator then leaves the
    // other core to the server and adds less scheduling noise of its own
    // to the latencies (select p99 6.4-6.9 ms with one, 8.3-8.5 ms with
    // two, in one sitting). ZEN_HTTP_CLIENT_THREADS=2 gives the old set-up.
    let client_threads: usize = std::env::var("ZEN_HTTP_CLIENT_THREADS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(client_threads)
        .enable_all()
        .build()
        .unwrap();
    let url = format!("http://{}/mcp", server.address);
    let one = |url: String, window: Window, pace: Pace| async move {
        match workload {
            Workload::Select { stateless } => client_loop(url, stateless, window, pace).await,
            Workload::Planner => planner_loop(url, window, pace).await,
        }
    };
    // Each paced client sends every `clients / rate` seconds, the clients'
    // schedules spread evenly over one interval. Half a second of warm-up
    // (connections, first-use parsing, a paced schedule settling) is not
    // counted.
    let interval = rate.map(|rate| Duration::from_secs_f64(clients as f64 / rate));
    let begin = Instant::now();
    let window = Window {
        from: begin + Duration::from_millis(500),
        until: begin + Duration::from_millis(500) + Duration::from_secs(seconds),
    };
    let (results, cpu) = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|client| {
                let first = begin
                    + interval.map_or(Duration::ZERO, |every| {
                        every.mul_f64(client as f64 / clients as f64)
                    });
                tokio::spawn(one(url.clone(), window, Pace::new(interval, first)))
            })
            .collect();
        tokio::time::sleep_until(window.from.into()).await;
        let cpu_before = server.cpu_time();
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.expect("client task"));
        }
        let cpu = server
            .cpu_time()
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        (all, cpu)
    });
    let elapsed = window.until - window.from;
    let mut latencies = Vec::new();
    for result in results {
        match result {
            Ok(found) => latencies.extend(found),
            Err(error) => panic!("a client failed: {error}"),
        }
    }
    latencies.sort();
    let cpu_per_request = cpu
        .map(|cpu| {
            format!(
                "{:>5.0} µs",
                cpu.as_secs_f64() * 1e6 / latencies.len() as f64
            )
        })
        .unwrap_or_else(|| "    ?".to_owned());
    let how = match rate {
        None => "saturated".to_owned(),
        Some(rate) => format!("at {rate:.0}/s"),
    };
    println!(
        "http_load {label:<32} {how:<10} clients {clients:>3}  requests {:>7}  {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  server CPU/request {cpu_per_request}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not used here.
    let clients: usize = std::env::var("ZEN_HTTP_CLIENTS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(64);
    let seconds: u64 = std::env::var("ZEN_HTTP_SECONDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5);
    // reqwest is built without a default TLS provider (see Cargo.toml).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = Server::start(&[]);
    run(
        &server,
        "select, stateless (2026-07-28)",
        clients,
        seconds,
        Workload::Select { stateless: true },
    );
    run(
        &server,
        "select, legacy sessions",
        clients,
        seconds,
        Workload::Select { stateless: false },
    );
    drop(server);
    let server = Server::start(&["--store", "memory:"]);
    run(
        &server,
        "planner step, memory store",
        clients,
        seconds,
        Workload::Planner,
    );
    drop(server);
    let dir = std::env::temp_dir().join(format!("zenmode-http-load-{}", std::process::id()));
    let store = format!("sqlite:{}", dir.join("threads.db").display());
    let server = Server::start(&["--store", &store]);
    run(
        &server,
        "planner step, embedded store",
        clients,
        seconds,
        Workload::Planner,
    );
    drop(server);
    // A WAL that never starts over grows with every commit under load.
    if let Ok(wal) = std::fs::metadata(dir.join("threads.db-wal")) {
        println!(
            "http_load embedded store: WAL file {:.1} MB after the run",
            wal.len() as f64 / 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    match start_redis() {
        Some(redis) => {
            let url = format!("redis://127.0.0.1:{}/", redis.1);
            let server = Server::start(&["--store", &url]);
            run(
                &server,
                "planner step, Redis store",
                clients,
                seconds,
                Workload::Planner,
            );
        }
        None => println!("http_load: redis-server not found; the Redis row is left out"),
    }
}

struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A `redis-server` of its own on a free loopback port, if installed.
fn start_redis() -> Option<Redis> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    for _ in 0..250 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(Redis(child, port));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
