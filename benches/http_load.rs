//! Load on `zenmode serve --transport http`: 64 clients on loopback, each
//! sending `zen_select_mode` calls back to back over a kept-alive
//! connection, for a few seconds. Prints requests per second and the
//! latency median, p99 and maximum, for stateless 2026-07-28 requests and
//! for legacy sessions (`Mcp-Session-Id`). Not a criterion bench: the
//! figure of interest is throughput under concurrency.
//!
//! `cargo bench --bench http_load`; `ZEN_HTTP_CLIENTS`, `ZEN_HTTP_SECONDS`
//! and `ZEN_HTTP_CLIENT_THREADS` change the defaults (64 clients, 5 s, one
//! client thread).
//! Targets (issue 14): at least 5,000 requests/s, p99 at most 10 ms.

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

/// One client: its own connection pool of one, requests back to back until
/// `until`; returns each request's latency.
async fn client_loop(
    url: String,
    stateless: bool,
    until: Instant,
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
    while Instant::now() < until {
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
        let start = Instant::now();
        let response = request
            .body(body)
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|error| error.to_string())?;
        latencies.push(start.elapsed());
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
async fn planner_loop(url: String, until: Instant) -> Result<Vec<Duration>, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .map_err(|error| error.to_string())?;
    let mut latencies = Vec::new();
    let mut continuation: Option<String> = None;
    let mut step = 1u64;
    while Instant::now() < until {
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
        let start = Instant::now();
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
        latencies.push(start.elapsed());
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

fn run(server: &Server, label: &str, clients: usize, seconds: u64, workload: Workload) {
    // ZEN_HTTP_ONLY=embedded runs only the rows whose label holds that text.
    if let Ok(only) = std::env::var("ZEN_HTTP_ONLY")
        && !label.contains(only.as_str())
    {
        return;
    }
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
    // Warm-up, so connection set-up and first-use parsing are not counted.
    let warm_until = Instant::now() + Duration::from_millis(500);
    let one = |url: String, until: Instant| async move {
        match workload {
            Workload::Select { stateless } => client_loop(url, stateless, until).await,
            Workload::Planner => planner_loop(url, until).await,
        }
    };
    runtime.block_on(async {
        let _ = one(url.clone(), warm_until).await;
    });
    let cpu_before = server.cpu_time();
    let start = Instant::now();
    let until = start + Duration::from_secs(seconds);
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| tokio::spawn(one(url.clone(), until)))
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.expect("client task"));
        }
        all
    });
    let elapsed = start.elapsed();
    let cpu = server
        .cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
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
    println!(
        "http_load {label:<32} clients {clients:>3}  requests {:>7}  {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  server CPU/request {cpu_per_request}",
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
