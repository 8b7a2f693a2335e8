//! Issue 9 at scale: the built server over loopback TCP under many
//! sessions at once, each test bounded in time. The single-case tests live
//! beside the code they cover (`files.rs`, `hardening_wire.rs`, `tcp.rs`,
//! `git_confinement.rs`, `hardening_memory.rs`); these check that the fixes
//! hold when the load is concurrent and that other sessions keep being
//! answered meanwhile.
//!
//! Every server here runs with `RUST_LOG=debug` and a stderr pipe that is
//! never read (item 5: logging must never block serving), and is stopped
//! with SIGTERM while connections are open (item 6).

mod common;

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{Arc, Barrier},
    thread,
    time::{Duration, Instant},
};

use common::{
    Client,
    fake_provider::{BackgroundFake, Fake},
    zenmode,
};
use serde_json::{Value, json};

/// How long one ping may take while the server is under load: a second
/// for a release build. A debug build runs the same work about ten times
/// slower on the two cores CI has, so it gets five.
const PING_DEADLINE: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(5)
} else {
    Duration::from_secs(1)
};

/// A TCP server whose stderr is piped and never read, on a port picked
/// up front (its announcement goes to that unread stderr).
struct Server {
    child: Child,
    address: String,
    // Kept open and unread for the server's whole life.
    _stderr: std::process::ChildStderr,
}

impl Server {
    fn start(mut command: Command) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let mut child = command
            .args(["--transport", "tcp", "--listen", &address])
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let started = Instant::now();
        while TcpStream::connect(&address).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the server never listened on {address}"
            );
            thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            address,
            _stderr: stderr,
        }
    }

    /// Peak resident set in MiB (0 where /proc is missing).
    fn peak_rss_mib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kib| kib / 1024)
    }

    /// SIGTERM with connections still open: the server must exit promptly
    /// and cleanly.
    fn stop(mut self) {
        // SAFETY: kill(2) on our own child's pid with a standard signal.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) },
            0
        );
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit after SIGTERM: {status:?}");
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "still running 5 s after SIGTERM"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `zenmode serve` in `root`, with the fake provider configured.
fn serve_in(root: &Path, fake: &Fake, extra: &[&str]) -> Command {
    let mut args = vec!["serve"];
    args.extend_from_slice(extra);
    let mut command = zenmode(&args);
    command
        .current_dir(root)
        .env("OPENAI_API_KEY", "sk-stress-test-key")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.base));
    command
}

/// Pings on a connection of its own until `done`, each within [`PING_DEADLINE`];
/// returns how many were answered and the slowest.
fn keep_pinging(address: String, done: Arc<std::sync::atomic::AtomicBool>) -> (u32, Duration) {
    let mut client = Client::connect(&address);
    client.initialize();
    let mut count = 0;
    let mut slowest = Duration::ZERO;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let started = Instant::now();
        let reply = client.request("ping", Value::Null);
        let took = started.elapsed();
        assert_eq!(reply["result"], json!({}), "{reply}");
        assert!(took < PING_DEADLINE, "a ping took {took:?} under load");
        slowest = slowest.max(took);
        count += 1;
        thread::sleep(Duration::from_millis(25));
    }
    (count, slowest)
}

/// Runs `work` on `count` threads at once (released together) while
/// another connection keeps pinging; returns the workers' results.
fn under_load<T: Send + 'static>(
    server: &Server,
    count: usize,
    work: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pinger = {
        let (address, done) = (server.address.clone(), done.clone());
        thread::spawn(move || keep_pinging(address, done))
    };
    let work = Arc::new(work);
    let barrier = Arc::new(Barrier::new(count));
    let workers: Vec<_> = (0..count)
        .map(|n| {
            let (work, barrier) = (work.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                work(n)
            })
        })
        .collect();
    let results = workers
        .into_iter()
        .map(|worker| worker.join().expect("a worker succeeded"))
        .collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (pings, slowest) = pinger.join().expect("pings were answered in time");
    assert!(pings > 0, "no ping went through");
    eprintln!("stress: {pings} pings answered meanwhile, slowest {slowest:?}");
    results
}

fn execute(client: &mut Client, mode: &str, request: Value) -> Value {
    client.tool("zen_execute", json!({"mode": mode, "request": request}))
}

/// Items 1 and 7: images that are FIFOs (and character devices, where this
/// machine lets us make one) are refused at once, from many sessions at
/// the same time, while other sessions keep being answered.
#[cfg(unix)]
#[test]
fn special_file_images_from_many_sessions_never_stall_the_server() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let fifo = root_path.join("frame.png");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
    let mut specials = vec![fifo.display().to_string()];
    let device = root_path.join("zero.png");
    let c_device = std::ffi::CString::new(device.to_str().unwrap()).unwrap();
    // /dev/zero's numbers; needs privileges, so it is tried, not required.
    // SAFETY: mknod(2) on a path we own.
    let made = unsafe {
        libc::mknod(
            c_device.as_ptr(),
            libc::S_IFCHR | 0o644,
            libc::makedev(1, 5),
        )
    };
    if made == 0 {
        specials.push(device.display().to_string());
    } else {
        eprintln!("stress: cannot make a character device here; FIFO images only");
    }

    let fake = BackgroundFake::start(Vec::new());
    let server = Server::start(serve_in(&root_path, &fake.fake, &[]));
    let address = server.address.clone();
    let cwd = root_path.display().to_string();
    let started = Instant::now();
    let refusals = under_load(&server, 24, move |n| {
        let mut client = Client::connect(&address);
        client.initialize();
        let mut refused = 0;
        for round in 0..5 {
            let image = specials[(n + round) % specials.len()].clone();
            let result = execute(
                &mut client,
                "chat",
                json!({"prompt": "describe the frame", "images": [image],
                       "working_directory_absolute_path": cwd}),
            );
            assert_eq!(result["isError"], true, "{result}");
            refused += 1;
        }
        refused
    });
    assert_eq!(refusals.iter().sum::<u32>(), 24 * 5);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Refused before any model was asked.
    assert!(fake.fake.requests().is_empty());
    server.stop();
}

/// Item 10: hundreds of concurrent sessions (connect, initialize,
/// tools/list, a select, close) are all served.
#[test]
fn hundreds_of_concurrent_sessions_are_all_served() {
    let server = Server::start(zenmode(&["serve"]));
    let address = server.address.clone();
    let started = Instant::now();
    let modes = under_load(&server, 300, move |n| {
        let mut client = Client::connect(&address);
        client.initialize();
        assert_eq!(client.tool_names().len(), 2);
        let reply = client.tool(
            "zen_select_mode",
            json!({"task_description": format!("review the diff of change {n} before committing")}),
        );
        reply["structuredContent"]["mode"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    });
    eprintln!("stress: 300 sessions in {:?}", started.elapsed());
    assert!(modes.iter().all(|mode| !mode.is_empty()), "{modes:?}");
    server.stop();
}

/// Reads what the server sends until it closes the connection (or 10 s pass).
fn read_until_closed(mut stream: TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out = String::new();
    stream
        .read_to_string(&mut out)
        .expect("the server closed the connection");
    out
}

/// Item 10: slow clients (half a line, then nothing) do not lock out new
/// sessions under the cap; at the cap a new connection gets a clear
/// refusal at once; idle slow clients are closed and free their slots.
#[test]
fn slow_clients_neither_lock_out_new_sessions_nor_outlive_the_idle_timeout() {
    let server = Server::start(zenmode(&[
        "serve",
        "--max-connections",
        "48",
        "--idle-timeout-secs",
        "6",
    ]));
    let slow: Vec<TcpStream> = (0..32)
        .map(|_| {
            let mut stream = TcpStream::connect(&server.address).unwrap();
            stream.write_all(br#"{"jsonrpc":"2.0","id":1,"me"#).unwrap();
            stream
        })
        .collect();
    // Under the cap: new sessions are served while the slow ones hang on.
    let address = server.address.clone();
    under_load(&server, 12, move |_| {
        let mut client = Client::connect(&address);
        client.initialize();
        assert_eq!(client.tool_names().len(), 2);
    });
    // Fill the remaining slots: every connection is served until the cap,
    // and the one past it gets a clear refusal at once.
    let mut served = Vec::new();
    let refusal = loop {
        assert!(served.len() <= 48, "no refusal past the cap");
        let mut stream = TcpStream::connect(&server.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = Instant::now();
        stream
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
            .unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let reply: Value = serde_json::from_slice(&line).expect("one JSON-RPC line");
        if reply["id"] == 7 {
            served.push(stream);
            continue;
        }
        break (reply, started.elapsed());
    };
    assert_eq!(refusal.0["error"]["code"], -32000, "{}", refusal.0);
    assert!(refusal.1 < Duration::from_secs(2), "{:?}", refusal.1);
    assert!(
        served.len() >= 8,
        "only {} served beside the 32 slow clients, under a cap of 48",
        served.len()
    );
    drop(served);
    // The slow clients are closed once idle for 6 s, so their slots come back.
    for stream in slow {
        read_until_closed(stream);
    }
    let address = server.address.clone();
    under_load(&server, 40, move |_| {
        let mut client = Client::connect(&address);
        client.initialize();
        assert_eq!(client.tool_names().len(), 2);
    });
    server.stop();
}

/// Item 8: several 3 MB task descriptions at once: each is analysed only
/// up to its cap, pings on another connection are answered throughout, and
/// memory stays far from the gigabytes this once took.
#[test]
fn large_task_descriptions_at_once_do_not_starve_other_sessions() {
    let server = Server::start(zenmode(&["serve"]));
    let address = server.address.clone();
    let text = Arc::new("the checkout page crashes after the deploy ".repeat(70_000));
    let started = Instant::now();
    under_load(&server, 4, move |_| {
        let mut client = Client::connect(&address);
        client.initialize();
        for _ in 0..3 {
            let reply = client.tool(
                "zen_select_mode",
                json!({"task_description": text.as_str()}),
            );
            assert!(reply["structuredContent"]["mode"].is_string(), "{reply}");
        }
    });
    let peak = server.peak_rss_mib();
    eprintln!(
        "stress: 12 selects of 3 MB in {:?}, server peak RSS {peak} MiB",
        started.elapsed()
    );
    assert!(peak < 400, "peak RSS {peak} MiB");
    server.stop();
}

/// Items 3 and 9: many sessions sending steps that hold many values, and
/// final steps over a directory of many files: replies stay short, the
/// prompts sent to the model stay within budget, memory stays bounded.
#[test]
fn wide_steps_and_big_directories_from_many_sessions_stay_bounded() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let many = root_path.join("many");
    std::fs::create_dir(&many).unwrap();
    for n in 0..20_000 {
        // Binary, so every one of them is skipped and reported.
        std::fs::write(many.join(format!("blob{n:05}.dat")), [0u8, 1, 2, 0]).unwrap();
    }
    let fake = BackgroundFake::start(Vec::new());
    let server = Server::start(serve_in(&root_path, &fake.fake, &[]));
    let address = server.address.clone();
    let directory = many.display().to_string();
    let started = Instant::now();
    let sizes = under_load(&server, 8, move |n| {
        let mut client = Client::connect(&address);
        client.initialize();
        // Three wide steps: 100,000 empty strings each.
        let wide = vec![""; 100_000];
        for step in 1..=3 {
            let result = execute(
                &mut client,
                "codereview",
                json!({"step": format!("session {n} step {step}"), "step_number": 1,
                       "total_steps": 2, "next_step_required": true,
                       "findings": "wide", "files_checked": wide}),
            );
            assert_eq!(result["isError"].as_bool(), Some(false), "{result}");
        }
        // A final step over the big directory, with the expert model.
        let result = execute(
            &mut client,
            "codereview",
            json!({"step": "final", "step_number": 2, "total_steps": 2,
                   "next_step_required": false, "findings": "done",
                   "relevant_files": [directory], "model": "gpt-5"}),
        );
        assert_eq!(result["isError"].as_bool(), Some(false), "{result}");
        result.to_string().len()
    });
    let largest_reply = sizes.iter().max().copied().unwrap_or(0);
    let largest_prompt = fake
        .fake
        .requests()
        .iter()
        .map(|request| request.body.to_string().len())
        .max()
        .unwrap_or(0);
    let peak = server.peak_rss_mib();
    eprintln!(
        "stress: wide steps and 20,000-file directories from 8 sessions in {:?}: largest reply {largest_reply} B, largest prompt {largest_prompt} B, peak RSS {peak} MiB",
        started.elapsed()
    );
    assert_eq!(fake.fake.requests().len(), 8, "one expert call per session");
    assert!(largest_reply < 512 * 1024, "{largest_reply} bytes");
    assert!(largest_prompt < 2 * 1024 * 1024, "{largest_prompt} bytes");
    assert!(peak < 600, "peak RSS {peak} MiB");
    server.stop();
}
