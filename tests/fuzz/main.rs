//! Fuzz campaign over the real request path, on the stable toolchain.
//!
//! The built `zenmode serve` runs as a child over stdio with no provider
//! keys, confined to a scratch directory, with clink pointed at a program
//! that does not exist. The harness feeds it mutated lines (see
//! `mutate.rs`) built from the seed corpus in `tests/fuzz/corpus/`, so every
//! layer sees hostile input: line framing, JSON-RPC, the MCP lifecycle, tool
//! arguments, every mode's validation, and the executors that run without a
//! model (workflows with their threads and files, planner, challenge,
//! apilookup, version, listmodels; chat, consensus and clink answer errors).
//! Behind the gateway sits a hostile upstream (`fault_server.py --chaos`):
//! seeded from the same seed, it answers the calls that reach it with
//! garbage, unknown ids, double or missing replies, replies over its limit,
//! huge errors, notification floods, stderr without newlines or UTF-8, and
//! its own secret echoed everywhere.
//!
//! Asserted:
//! - no panic (none reported on stderr) and the process never exits;
//! - no hang: after every [`BATCH`] inputs a ping must be answered within
//!   [`PING_DEADLINE`];
//! - every stdout line is a JSON-RPC 2.0 message: a response (a `result` or
//!   an `error` with an integer code) whose id is null or one the harness
//!   sent, or a notification;
//! - the upstream's secret never reaches stdout or stderr;
//! - hostile scripts (`corpus/script.jsonl`) reach the sandbox: some end
//!   answered, some at each of the time, memory and stack limits; and some
//!   replies carry result handles, which the mutator then quotes and reads;
//! - bounded memory: the server's peak resident set (VmHWM) stays under
//!   [`RSS_CEILING_MIB`];
//! - every request ends: no request the server admitted goes unanswered for
//!   [`REQUEST_BOUND`] (checked after every batch and at the end, which
//!   waits for the last ones), and requests refused as busy stay under
//!   [`MAX_BUSY_SHARE`] of the inputs. The requests that were stuck are
//!   printed. (A server whose 256 places in progress stay full answers
//!   "busy" to everything and still answers pings, so neither shows
//!   otherwise.)
//!
//! Size: `ZEN_FUZZ_INPUTS` (default [`DEFAULT_INPUTS`]; `.ci/run` runs
//! 400,000 in its optimized `ci` build, the last 100,000 with the
//! model), seed `ZEN_FUZZ_SEED`. The server runs without the full model
//! unless `ZEN_EMBEDDING_MODEL` names one (a model found in the home by
//! chance made the figures depend on the machine). Run it with `cargo test
//! --profile ci --test fuzz -- --nocapture` to see the figures.

#[path = "../common/mod.rs"]
mod common;
mod mutate;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// Inputs for a plain `cargo test` (a debug build manages a few thousand a second).
const DEFAULT_INPUTS: u64 = 20_000;
const DEFAULT_SEED: u64 = 0x007a_656e_6d6f_6465;
/// The server's longest script (`serve --script-max-ms`): the time limit
/// is reached the same way at 0.5 s as at 30.
const SCRIPT_MAX_MS: u64 = 500;
/// Inputs between two pings.
const BATCH: u64 = 100;
/// How long a ping may take to come back before the server counts as
/// hung. Generous on purpose: CI runs the campaign beside other CPU-bound
/// steps on two cores, where a batch that takes 100 ms alone once took
/// over a second. The ping times are printed (median, 99th percentile,
/// slowest) so that a slow path shows in the figures without making the
/// test depend on the machine's load.
const PING_DEADLINE: Duration = Duration::from_secs(5);
/// How long the harness pauses for each request the server refused as busy
/// ([`zenmode::server::transport::BUSY_CODE`]) since the last batch, and the
/// longest such pause.
const BUSY_PAUSE: Duration = Duration::from_millis(5);
const LONGEST_BUSY_PAUSE: Duration = Duration::from_millis(500);
/// The longest a request may stay unanswered. The longest bound any
/// request has in the campaign is the chaos upstream's 2 s timeout (plus
/// its start and zenmode's 2 s margin); the rest is room for a request
/// queued behind a full session's worth of model rankings on a loaded
/// machine. The watchdog allows a minute without progress as well.
const REQUEST_BOUND: Duration = Duration::from_secs(60);
/// The share of inputs that may be refused as busy. A campaign where
/// requests end refuses about 0.5% (3,914 of 800,000); one where requests
/// stayed in progress for good refused 34%.
const MAX_BUSY_SHARE: f64 = 0.05;
/// The first pass over the seeds builds the selection index and compiles
/// every schema; it gets longer.
const WARM_UP_DEADLINE: Duration = Duration::from_secs(30);
/// The server's peak resident set may not pass this. The conversation
/// store alone may hold 256 MiB by design; the rest is the process
/// (catalog, index, compiled schemas, buffers), well under 100 MiB.
const RSS_CEILING_MIB: u64 = 400;
/// The server's line limit for the campaign: small, so that oversized
/// lines are cheap to send and the discarding path is exercised often.
const MAX_MESSAGE_BYTES: usize = 64 * 1024;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {text:?}")),
        Err(_) => default,
    }
}

/// The seed corpus, with `@ROOT@` replaced by the scratch directory.
fn load_corpus(root: &Path) -> Vec<Vec<u8>> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .expect("the corpus directory")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    let root = root.display().to_string();
    let mut seeds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            seeds.push(line.replace("@ROOT@", &root).into_bytes());
        }
    }
    assert!(seeds.len() > 100, "the corpus has {} seeds", seeds.len());
    seeds
}

/// A directory for the server to serve files from: sources, a directory,
/// a tiny PNG, a binary file.
fn scratch_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = root.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    write(
        "app.py",
        b"def total(items):\n    return sum(i.price for i in items)\n",
    );
    write(
        "src/lib.rs",
        b"pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    write("src/util.rs", b"pub fn id<T>(t: T) -> T {\n    t\n}\n");
    write("notes.md", "# Notes\n\nUnicode: 中文 😀\n".as_bytes());
    write("data.bin", &[0, 159, 146, 150, 0, 255, 1, 2]);
    // The smallest valid PNG: one transparent pixel.
    write(
        "pixel.png",
        &[
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
            0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
            0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78,
            0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00,
            0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
        ],
    );
    root
}

/// The upstream behind the gateway during the campaign: the fault server
/// misbehaving at random (`--chaos`), with this value in its environment.
/// It must never reach the client or the log.
const CHAOS_SECRET: &str = "chaos-secret-31337";
/// The chaos upstream's tools, as modes.
const CHAOS_TOOLS: &[&str] = &[
    "echo",
    "hang",
    "crash",
    "slow",
    "count",
    "ask",
    "stderr",
    "big",
    "env_error",
    "fail",
];

/// The mode names: the built-in ones, from the manifests, and the chaos
/// upstream's.
fn mode_names() -> Vec<String> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("modes");
    let mut names: Vec<String> = std::fs::read_dir(directory)
        .unwrap()
        .filter_map(|entry| {
            let path = entry.unwrap().path();
            (path.extension()? == "json").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.extend(CHAOS_TOOLS.iter().map(|tool| format!("chaos__{tool}")));
    names.sort();
    names
}

/// What the stdout reader saw.
#[derive(Default)]
struct Tally {
    lines: u64,
    responses: u64,
    notifications: u64,
    tool_results: u64,
    tool_errors: u64,
    error_codes: BTreeMap<i64, u64>,
    /// Failures of calls that reached the chaos upstream, by kind.
    upstream_errors: BTreeMap<String, u64>,
    /// How scripts ended: "answered", or the kind of their error
    /// (`script_timeout`, `script_memory`, ...).
    script_ends: BTreeMap<String, u64>,
    /// Replies that carried a result handle.
    handles: u64,
    /// The first few violations, for the failure message.
    violations: Vec<String>,
    violation_count: u64,
}

impl Tally {
    fn violation(&mut self, what: String) {
        self.violation_count += 1;
        if self.violations.len() < 10 {
            self.violations.push(what);
        }
    }
}

/// State shared between the feeding thread and the reader threads.
#[derive(Default)]
struct Shared {
    /// Ids the harness sent (as JSON text), that responses may carry.
    sent_ids: Mutex<HashSet<String>>,
    tally: Mutex<Tally>,
    /// Continuation ids handed out lately (the mutator reuses them).
    threads: Mutex<Vec<String>>,
    /// Result handle ids handed out lately (quoted as `{"$result": id}` and
    /// read as `zenmode://results/<id>` by the mutator).
    handles: Mutex<Vec<String>>,
    panicked: AtomicBool,
    /// The chaos upstream's secret appeared on stderr.
    secret_logged: AtomicBool,
    stderr_tail: Mutex<Vec<String>>,
    stderr_lines: AtomicU64,
    /// Requests sent and not yet answered: id (as JSON text) -> when, and
    /// the start of the line.
    outstanding: Mutex<HashMap<String, (Instant, String)>>,
}

const THREAD_POOL: usize = 64;

/// The ids a line may get answers for, registered before it is sent. The
/// server frames on `\n` and trims each line (as `str::trim` does); this
/// mirrors that. A well-formed request (a string or integer id, a method,
/// within the line limit) is also noted as outstanding until its answer
/// comes; one the line cancels is no longer waited for (a cancelled
/// request gets no answer).
fn register_ids(shared: &Shared, line: &[u8]) {
    let mut sent = shared.sent_ids.lock().unwrap();
    let mut outstanding = shared.outstanding.lock().unwrap();
    for segment in line.split(|byte| *byte == b'\n') {
        let Ok(text) = std::str::from_utf8(segment) else {
            continue;
        };
        let Ok(Value::Object(message)) = serde_json::from_str::<Value>(text.trim()) else {
            continue;
        };
        if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled")
            && let Some(id) = message
                .get("params")
                .and_then(|params| params.get("requestId"))
        {
            outstanding.remove(&id.to_string());
        }
        let Some(id) = message.get("id") else {
            continue;
        };
        sent.insert(id.to_string());
        // A `subscriptions/listen` stream is open for as long as the client
        // likes: it is the one request that need not end.
        let method = message.get("method").and_then(Value::as_str);
        let request = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && method.is_some_and(|method| method != "subscriptions/listen")
            && (id.is_string() || id.is_i64())
            && segment.len() <= MAX_MESSAGE_BYTES;
        if request {
            let shown: String = text.trim().chars().take(200).collect();
            outstanding.insert(id.to_string(), (Instant::now(), shown));
        }
    }
}

/// The requests unanswered for longer than `bound`, oldest first, as lines
/// to print.
fn stuck_requests(shared: &Shared, bound: Duration) -> Vec<String> {
    let outstanding = shared.outstanding.lock().unwrap();
    let mut stuck: Vec<(Duration, String)> = outstanding
        .iter()
        .filter(|(_, (sent, _))| sent.elapsed() > bound)
        .map(|(id, (sent, shown))| {
            (
                sent.elapsed(),
                format!(
                    "id {id}, unanswered for {:.0} s: {shown}",
                    sent.elapsed().as_secs_f64()
                ),
            )
        })
        .collect();
    stuck.sort_by_key(|(age, _)| std::cmp::Reverse(*age));
    stuck.into_iter().map(|(_, line)| line).collect()
}

/// Fails the campaign when a request has been unanswered for longer than
/// [`REQUEST_BOUND`], listing the first of them.
fn assert_no_stuck_request(shared: &Shared, when: &str) {
    let stuck = stuck_requests(shared, REQUEST_BOUND);
    assert!(
        stuck.is_empty(),
        "{} request(s) stayed unanswered for over {REQUEST_BOUND:?} ({when}), for example:\n{}\nstderr tail:\n{}",
        stuck.len(),
        stuck
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        shared.stderr_tail.lock().unwrap().join("\n")
    );
}

/// Requests the server has refused as busy so far.
fn busy_refusals(shared: &Shared) -> u64 {
    let tally = shared.tally.lock().unwrap();
    tally
        .error_codes
        .get(&i64::from(zenmode::server::transport::BUSY_CODE))
        .copied()
        .unwrap_or(0)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Checks one stdout line; returns the ping number it answers, if it does.
fn check_line(shared: &Shared, line: &[u8]) -> Option<u64> {
    let mut tally = shared.tally.lock().unwrap();
    tally.lines += 1;
    let shown = || String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
    if contains(line, CHAOS_SECRET.as_bytes()) {
        tally.violation(format!(
            "the upstream's secret reached the client: {}",
            shown()
        ));
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(Value::Object(message)) => Value::Object(message),
        Ok(_) | Err(_) => {
            tally.violation(format!("not a JSON object: {}", shown()));
            return None;
        }
    };
    if message["jsonrpc"] != "2.0" {
        tally.violation(format!("not JSON-RPC 2.0: {}", shown()));
        return None;
    }
    if message.get("method").is_some() {
        // An upstream's sampling, elicitation or roots request is passed to
        // the client during a call (the gateway's flowback): those are the
        // only requests zenmode may send.
        let forwarded = matches!(
            message["method"].as_str(),
            Some("sampling/createMessage" | "elicitation/create" | "roots/list")
        );
        if message.get("id").is_some() && forwarded {
            tally.notifications += 1;
        } else if message.get("id").is_some() {
            tally.violation(format!("a request from the server: {}", shown()));
        } else if !message["method"].is_string() {
            tally.violation(format!("a notification without a method name: {}", shown()));
        } else {
            tally.notifications += 1;
        }
        return None;
    }
    let Some(id) = message.get("id") else {
        tally.violation(format!("a response without an id: {}", shown()));
        return None;
    };
    tally.responses += 1;
    match (message.get("result"), message.get("error")) {
        (Some(result), None) => {
            if let Some(flag) = result.get("isError") {
                tally.tool_results += 1;
                if flag == true {
                    tally.tool_errors += 1;
                }
            }
            if result["structuredContent"]["server"] == "chaos"
                && let Some(kind) = result["structuredContent"]["error"].as_str()
            {
                *tally.upstream_errors.entry(kind.to_owned()).or_default() += 1;
            }
            let structured = &result["structuredContent"];
            let script_end = match structured["error"].as_str() {
                Some(kind) if kind.starts_with("script_") => Some(kind),
                None if structured.get("result").is_some() && structured["calls"].is_u64() => {
                    Some("answered")
                }
                _ => None,
            };
            if let Some(end) = script_end {
                *tally.script_ends.entry(end.to_owned()).or_default() += 1;
            }
            // A handle reply's resource_link names the id last in its URI.
            let handle = result["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|block| block["type"] == "resource_link")
                .find_map(|block| block["uri"].as_str()?.strip_prefix("zenmode://results/"))
                .map(|id| Value::from(id.to_owned()))
                .unwrap_or(Value::Null);
            tally.handles += u64::from(handle.is_string());
            for (found, pool) in [
                (
                    &result["structuredContent"]["continuation_id"],
                    &shared.threads,
                ),
                (&handle, &shared.handles),
            ] {
                if let Some(id) = found.as_str() {
                    let mut pool = pool.lock().unwrap();
                    if pool.len() >= THREAD_POOL {
                        pool.remove(0);
                    }
                    pool.push(id.to_owned());
                }
            }
        }
        (None, Some(error)) => match (error["code"].as_i64(), error["message"].as_str()) {
            (Some(code), Some(_)) => *tally.error_codes.entry(code).or_default() += 1,
            _ => tally.violation(format!("a malformed error object: {}", shown())),
        },
        _ => tally.violation(format!("neither one result nor one error: {}", shown())),
    }
    if !id.is_null() {
        shared.outstanding.lock().unwrap().remove(&id.to_string());
    }
    if let Some(ping) = id.as_str().and_then(|id| id.strip_prefix("fuzz-ping-")) {
        return ping.parse().ok();
    }
    if !id.is_null() && !shared.sent_ids.lock().unwrap().contains(&id.to_string()) {
        tally.violation(format!("an id that was never sent: {}", shown()));
    }
    None
}

/// The server under test, with threads draining its stdout and stderr.
struct Server {
    child: Child,
    stdin: ChildStdin,
    pings: mpsc::Receiver<u64>,
    _root: tempfile::TempDir,
    _config: tempfile::TempDir,
}

impl Server {
    fn start(shared: &Arc<Shared>, root: tempfile::TempDir) -> Self {
        // clink may run only a program that does not exist: spawning fails at once.
        let config = tempfile::tempdir().unwrap();
        let clink = config.path().join("clink.json");
        let missing = config.path().join("no-such-cli");
        let cli = json!({"command": missing, "args": []});
        std::fs::write(
            &clink,
            json!({"clis": {"claude": cli, "codex": cli, "gemini": cli}, "default_cli": "gemini", "timeout": 2})
                .to_string(),
        )
        .unwrap();
        // The chaos upstream: small limits so its faults are cheap to hit.
        let upstreams = config.path().join("upstreams.json");
        let fault_server =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/fault_server.py");
        let seed = env_number("ZEN_FUZZ_SEED", DEFAULT_SEED) % 1_000_000;
        std::fs::write(
            &upstreams,
            json!({"mcpServers": {"chaos": {
                "command": "python3",
                "args": [fault_server, "--chaos", seed.to_string()],
                "env": {"CHAOS_SECRET": CHAOS_SECRET},
                "timeout": 2, "max_reply_bytes": 65536, "idle_shutdown": 0}}})
            .to_string(),
        )
        .unwrap();
        let mut child = common::zenmode(&[
            "serve",
            "--max-message-bytes",
            &MAX_MESSAGE_BYTES.to_string(),
            // A script whose time limit a mutation removed would hold a
            // core for the default 30 s, most of a short campaign's time;
            // the time limit is reached the same way below it.
            "--script-max-ms",
            &SCRIPT_MAX_MS.to_string(),
        ])
        .current_dir(root.path())
        .env("ZEN_UPSTREAMS", &upstreams)
        .env("ZEN_CACHE_DIR", config.path().join("cache"))
        .env("ZEN_STATE_DIR", config.path().join("state"))
        .env("ZEN_CLINK_CONFIG", &clink)
        // The full model only when the caller names one, never one found
        // by chance in this home.
        .env(
            "ZEN_EMBEDDING_MODEL",
            std::env::var_os("ZEN_EMBEDDING_MODEL").unwrap_or_else(|| "none".into()),
        )
        // Upstream stderr is logged, so a leaked secret would show.
        .env("RUST_LOG", "warn,zenmode::upstream=info")
        .env_remove("CONVERSATION_TIMEOUT_HOURS")
        .env_remove("MAX_CONVERSATION_TURNS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zenmode");
        let stdin = child.stdin.take().unwrap();

        let stdout = child.stdout.take().unwrap();
        let (ping_sender, pings) = mpsc::channel();
        let reader_shared = shared.clone();
        thread::spawn(move || {
            let mut stdout = BufReader::with_capacity(1 << 20, stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if let Some(ping) = check_line(&reader_shared, &line) {
                    let _ = ping_sender.send(ping);
                }
            }
        });

        let stderr = child.stderr.take().unwrap();
        let stderr_shared = shared.clone();
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { continue };
                stderr_shared.stderr_lines.fetch_add(1, Ordering::Relaxed);
                if line.contains("panicked") {
                    stderr_shared.panicked.store(true, Ordering::Relaxed);
                }
                if line.contains(CHAOS_SECRET) {
                    stderr_shared.secret_logged.store(true, Ordering::Relaxed);
                }
                let mut tail = stderr_shared.stderr_tail.lock().unwrap();
                if tail.len() >= 20 {
                    tail.remove(0);
                }
                tail.push(line);
            }
        });
        Server {
            child,
            stdin,
            pings,
            _root: root,
            _config: config,
        }
    }

    fn status_field(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// Resident set now, and its peak so far, in KiB (0 off Linux).
    fn rss_kib(&self) -> (u64, u64) {
        (self.status_field("VmRSS:"), self.status_field("VmHWM:"))
    }
}

fn send(stdin: &mut ChildStdin, shared: &Shared, line: &[u8]) {
    register_ids(shared, line);
    let mut framed = Vec::with_capacity(line.len() + 1);
    framed.extend_from_slice(line);
    framed.push(b'\n');
    stdin
        .write_all(&framed)
        .expect("the server reads its input (it has not exited)");
}

/// The `quantile` of `times` in milliseconds (0 for none).
fn percentile_ms(times: &mut [Duration], quantile: f64) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    times.sort_unstable();
    let at = ((times.len() - 1) as f64 * quantile).round() as usize;
    times[at].as_secs_f64() * 1000.0
}

/// Sends ping `number` and waits for its answer.
fn ping(server: &mut Server, shared: &Shared, number: u64, deadline: Duration) -> Duration {
    let line = json!({"jsonrpc": "2.0", "id": format!("fuzz-ping-{number}"), "method": "ping"});
    send(&mut server.stdin, shared, line.to_string().as_bytes());
    server.stdin.flush().unwrap();
    let sent = Instant::now();
    loop {
        let left = deadline.saturating_sub(sent.elapsed());
        match server.pings.recv_timeout(left) {
            Ok(answered) if answered == number => return sent.elapsed(),
            Ok(_) => continue,
            Err(_) => {
                let tail = shared.stderr_tail.lock().unwrap().join("\n");
                panic!(
                    "hang: ping {number} was not answered within {deadline:?}; stderr tail:\n{tail}"
                );
            }
        }
    }
}

/// Kills the server if the campaign makes no progress for a while, so a
/// write blocked on a hung server ends in a failure instead of hanging CI.
fn watchdog(pid: u32, progress: Arc<AtomicU64>, done: Arc<AtomicBool>) {
    thread::spawn(move || {
        let mut last = progress.load(Ordering::Relaxed);
        let mut still = 0;
        while !done.load(Ordering::Relaxed) {
            thread::sleep(Duration::from_secs(1));
            let now = progress.load(Ordering::Relaxed);
            still = if now == last { still + 1 } else { 0 };
            last = now;
            if still >= 60 {
                eprintln!("fuzz: no progress for 60 s; killing the server");
                // SAFETY: kill(2) on our own child's pid.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                return;
            }
        }
    });
}

#[test]
fn fuzz_campaign_over_stdio() {
    let inputs = env_number("ZEN_FUZZ_INPUTS", DEFAULT_INPUTS);
    let seed = env_number("ZEN_FUZZ_SEED", DEFAULT_SEED);
    let root = scratch_root();
    let seeds = load_corpus(root.path());
    let shared = Arc::new(Shared::default());
    let mut server = Server::start(&shared, root);
    let progress = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    watchdog(server.child.id(), progress.clone(), done.clone());

    // A session begins with the handshake, then every seed once, unmutated.
    send(
        &mut server.stdin,
        &shared,
        json!({"jsonrpc": "2.0", "id": "fuzz-init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "zenmode-fuzz", "version": "1"}}})
        .to_string()
        .as_bytes(),
    );
    send(
        &mut server.stdin,
        &shared,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    for line in &seeds {
        send(&mut server.stdin, &shared, line);
    }
    ping(&mut server, &shared, 0, WARM_UP_DEADLINE);
    let seed_tally = {
        let tally = shared.tally.lock().unwrap();
        (tally.tool_results, tally.tool_errors)
    };

    let seed_count = seeds.len();
    let mut mutator = mutate::Mutator::new(seed, seeds, mode_names());
    let started = Instant::now();
    let mut bytes = 0u64;
    let mut slowest_ping = Duration::ZERO;
    let mut ping_times = Vec::with_capacity((inputs / BATCH) as usize + 1);
    let mut peak_sampled = 0;
    let mut sent = 0u64;
    let mut threads = Vec::new();
    let mut handles = Vec::new();
    let mut last_busy = 0;
    while sent < inputs {
        threads.clone_from(&shared.threads.lock().unwrap());
        handles.clone_from(&shared.handles.lock().unwrap());
        let batch = BATCH.min(inputs - sent);
        for _ in 0..batch {
            let line = mutator.next(&threads, &handles);
            bytes += line.len() as u64 + 1;
            send(&mut server.stdin, &shared, &line);
        }
        sent += batch;
        let number = sent / BATCH + 1;
        let took = ping(&mut server, &shared, number, PING_DEADLINE);
        slowest_ping = slowest_ping.max(took);
        ping_times.push(took);
        progress.store(sent, Ordering::Relaxed);
        // Refused as busy since the last batch: the server has a full
        // session's worth of requests in progress (the model ranks slower
        // than this harness writes). Pausing lets them finish, so that most
        // inputs reach the code behind admission rather than the refusal.
        let busy = busy_refusals(&shared);
        if busy > last_busy {
            let refused = u32::try_from(busy - last_busy).unwrap_or(u32::MAX);
            thread::sleep(BUSY_PAUSE.saturating_mul(refused).min(LONGEST_BUSY_PAUSE));
        }
        last_busy = busy;
        if number.is_multiple_of(10) {
            peak_sampled = peak_sampled.max(server.rss_kib().0);
        }
        assert_no_stuck_request(&shared, &format!("after {sent} inputs"));
        assert!(
            !shared.panicked.load(Ordering::Relaxed),
            "the server panicked; stderr tail:\n{}",
            shared.stderr_tail.lock().unwrap().join("\n")
        );
        if sent.is_multiple_of(100_000) {
            eprintln!(
                "fuzz: {sent} inputs, {:.0} s, RSS {} MiB",
                started.elapsed().as_secs_f64(),
                server.rss_kib().0 / 1024
            );
        }
    }
    let elapsed = started.elapsed();
    let (rss, peak) = server.rss_kib();
    let peak = peak.max(peak_sampled).max(rss);
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "the server exited during the campaign"
    );

    // Every request sent gets its answer: wait for the last ones (each
    // within its bound) before closing the input.
    let waiting = Instant::now();
    while !shared.outstanding.lock().unwrap().is_empty() && waiting.elapsed() < REQUEST_BOUND {
        progress.fetch_add(1, Ordering::Relaxed);
        thread::sleep(Duration::from_millis(50));
    }
    let unanswered = stuck_requests(&shared, Duration::ZERO);
    assert!(
        unanswered.is_empty(),
        "{} request(s) were still unanswered {REQUEST_BOUND:?} after the last input, for example:\n{}",
        unanswered.len(),
        unanswered
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );

    // End of input: the server must drain and exit cleanly.
    done.store(true, Ordering::Relaxed);
    let Server {
        mut child, stdin, ..
    } = server;
    drop(stdin);
    let exit_started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if exit_started.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            panic!("the server did not exit within 20 s of its input closing");
        }
        thread::sleep(Duration::from_millis(20));
    };
    // Let the reader threads see the last lines.
    thread::sleep(Duration::from_millis(200));

    let tally = shared.tally.lock().unwrap();
    eprintln!(
        "fuzz: {inputs} inputs (seed {seed:#x}, {} seeds, {} MiB sent) in {:.1} s: {:.0} inputs/s (debug assertions {})",
        seed_count,
        bytes / (1024 * 1024),
        elapsed.as_secs_f64(),
        inputs as f64 / elapsed.as_secs_f64().max(1e-9),
        // `.ci/run` builds an optimized zenmode that keeps debug
        // assertions (Cargo.toml, profile.ci), so say which, not "debug".
        if cfg!(debug_assertions) { "on" } else { "off" },
    );
    eprintln!(
        "fuzz: {} output lines: {} responses ({} tool results, {} of them isError), {} notifications; error codes {:?}",
        tally.lines,
        tally.responses,
        tally.tool_results,
        tally.tool_errors,
        tally.notifications,
        tally.error_codes
    );
    eprintln!(
        "fuzz: failed calls to the chaos upstream, by kind: {:?}",
        tally.upstream_errors
    );
    eprintln!(
        "fuzz: scripts, by how they ended: {:?}; replies with a result handle: {}",
        tally.script_ends, tally.handles
    );
    eprintln!(
        "fuzz: ping after each batch of {BATCH}: median {:.1} ms, 99th percentile {:.1} ms, slowest {:.1} ms; server peak RSS {} MiB (ceiling {RSS_CEILING_MIB} MiB), {} stderr lines",
        percentile_ms(&mut ping_times, 0.50),
        percentile_ms(&mut ping_times, 0.99),
        slowest_ping.as_secs_f64() * 1000.0,
        peak / 1024,
        shared.stderr_lines.load(Ordering::Relaxed),
    );
    let busy = tally
        .error_codes
        .get(&i64::from(zenmode::server::transport::BUSY_CODE))
        .copied()
        .unwrap_or(0);
    assert!(
        (busy as f64) <= MAX_BUSY_SHARE * inputs as f64,
        "{busy} of {inputs} inputs were refused as busy, over {:.0}%: requests stay in progress",
        MAX_BUSY_SHARE * 100.0
    );
    assert!(
        tally.violations.is_empty(),
        "{} output lines broke JSON-RPC, for example:\n{}",
        tally.violation_count,
        tally.violations.join("\n")
    );
    assert!(
        !shared.panicked.load(Ordering::Relaxed),
        "the server panicked"
    );
    assert!(
        !shared.secret_logged.load(Ordering::Relaxed),
        "the chaos upstream's secret reached the log"
    );
    assert!(
        tally.upstream_errors.len() >= 3,
        "the chaos upstream's faults were reached: {:?}",
        tally.upstream_errors
    );
    // Hostile scripts reached the sandbox and its limits, not only the
    // request's validation.
    for kind in [
        "answered",
        "script_timeout",
        "script_memory",
        "script_stack",
    ] {
        assert!(
            tally.script_ends.contains_key(kind),
            "no script ended as {kind}: {:?}",
            tally.script_ends
        );
    }
    assert!(
        tally.handles > 0,
        "no reply carried a result handle, so none was quoted or read back"
    );
    assert!(status.success(), "the server exited with {status:?}");
    assert!(
        peak / 1024 < RSS_CEILING_MIB,
        "peak RSS {} MiB is over the {RSS_CEILING_MIB} MiB ceiling",
        peak / 1024
    );
    // The unmutated seeds ran real tools, and not all of them failed.
    let (results, errors) = seed_tally;
    assert!(
        results > 50 && errors < results,
        "the seeds produced {results} tool results, {errors} errors"
    );
}
