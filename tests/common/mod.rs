//! A minimal MCP client for driving the real `zenmode` binary in tests.
//!
//! It writes newline-delimited JSON-RPC and reads replies on a thread, so a
//! hung server fails the test after [`REPLY_TIMEOUT`] instead of hanging CI.
//! Every stdout line must be a JSON-RPC message: anything else fails the
//! test, which is how "stdout carries only protocol messages" is enforced.

#![allow(dead_code)] // each test binary uses a different subset

pub mod fake_provider;
pub mod gateway;
pub mod http;
pub mod redis;
pub mod sets;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{Child, ChildStdin, Command, Stdio},
    sync::{
        Arc, Mutex,
        mpsc::{self, Receiver},
    },
    thread,
    time::Duration,
};

use serde_json::{Value, json};

pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);
pub const LEGACY_VERSION: &str = "2025-11-25";
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Variables that configure model providers; tests start from none of them.
pub const PROVIDER_VARIABLES: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "OPENROUTER_API_KEY",
    "OPENROUTER_BASE_URL",
    "XAI_API_KEY",
    "XAI_BASE_URL",
    "CUSTOM_API_URL",
    "CUSTOM_API_KEY",
    "CUSTOM_MODEL_NAME",
    "DEFAULT_MODEL",
];

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_zenmode")
}

/// A base command with logs quiet unless the test run asks for them.
pub fn zenmode(args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(args)
        .env_remove("ZEN_TOKEN_OPTIMIZATION")
        .env_remove("ZEN_PINNED_MODES")
        .env_remove("ZEN_MODES_DIR")
        .env_remove("ZEN_ALLOWED_ROOTS")
        .env_remove("ZEN_CLINK_CONFIG")
        .env_remove("ZEN_UPSTREAMS")
        // The table alone, whatever model the machine has installed: the
        // tests' rankings must not depend on it (tests/transformer.rs
        // tests the model).
        .env("ZEN_EMBEDDING_MODEL", "none")
        // No default upstreams file from the machine running the tests.
        .env("ZEN_CONFIG_DIR", "/nonexistent/zenmode-test-config")
        // Threads stay in the process: tests never write the machine's
        // state directory (tests/stores.rs tests the stores themselves).
        .env("ZEN_STORE", "memory:")
        // Nor learn examples there, which would change later rankings
        // (tests/learned_examples.rs turns it on in a folder of its own).
        .env("ZEN_LEARN_EXAMPLES", "off");
    for variable in PROVIDER_VARIABLES {
        command.env_remove(variable);
    }
    command.env(
        "RUST_LOG",
        std::env::var("TEST_RUST_LOG").unwrap_or("warn".into()),
    );
    command
}

/// Where replies come from and where requests go.
pub struct Client {
    writer: Box<dyn Write + Send>,
    lines: Receiver<String>,
    next_id: u64,
    /// Messages without a matching id seen while waiting (errors with id null, notifications).
    pub stray: Vec<Value>,
    pub child: Option<Child>,
    /// The connection, for a TCP client: shut down on drop, since the
    /// reader thread's handle would otherwise keep it open.
    socket: Option<TcpStream>,
}

fn spawn_line_reader(reader: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

impl Client {
    /// Spawns `zenmode <args>` and talks to it over stdio.
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_command(zenmode(args))
    }

    pub fn spawn_command(mut command: Command) -> Self {
        command.stderr(Stdio::inherit());
        Self::spawn_keeping_stderr(command)
    }

    /// Like [`Client::spawn_command`], with stderr wherever `command` sends it.
    pub fn spawn_keeping_stderr(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn zenmode");
        let stdin: ChildStdin = child.stdin.take().unwrap();
        let lines = spawn_line_reader(child.stdout.take().unwrap());
        Client {
            writer: Box::new(stdin),
            lines,
            next_id: 1,
            stray: Vec::new(),
            child: Some(child),
            socket: None,
        }
    }

    pub fn connect(address: &str) -> Self {
        let stream = TcpStream::connect(address).expect("connect to zenmode");
        let reader = stream.try_clone().unwrap();
        let socket = stream.try_clone().unwrap();
        Client {
            writer: Box::new(stream),
            lines: spawn_line_reader(reader),
            next_id: 1,
            stray: Vec::new(),
            child: None,
            socket: Some(socket),
        }
    }

    /// The spawned server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
        self.writer.flush().unwrap();
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// The next stdout message; panics on a non-JSON-RPC line or a timeout.
    pub fn next_message(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(REPLY_TIMEOUT)
            .expect("zenmode replied in time");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {line}");
        message
    }

    /// Waits for the reply with `id`, keeping anything else in `stray`.
    pub fn reply_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next_message();
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.stray.push(message);
        }
    }

    /// Waits for a message matching `predicate`, looking at `stray` first.
    pub fn wait_for(&mut self, predicate: impl Fn(&Value) -> bool) -> Value {
        if let Some(index) = self.stray.iter().position(&predicate) {
            return self.stray.remove(index);
        }
        loop {
            let message = self.next_message();
            if predicate(&message) {
                return message;
            }
            self.stray.push(message);
        }
    }

    /// Sends a request and returns the whole response (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
        self.reply_to(&id)
    }

    /// Sends a request that must succeed and returns its `result`.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// The legacy handshake (Python and TypeScript SDKs).
    pub fn initialize(&mut self) -> Value {
        let result = self.call(
            "initialize",
            json!({
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "zenmode-tests", "version": "1"}
            }),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    pub fn tool_names(&mut self) -> Vec<String> {
        self.call("tools/list", Value::Null)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// `tools/call`; returns the result (which may have `isError`).
    pub fn tool(&mut self, name: &str, arguments: Value) -> Value {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes stdin and waits for the process to exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(std::mem::replace(
            &mut self.writer,
            Box::new(std::io::sink()),
        ));
        let mut child = self.child.take().expect("a spawned client");
        for _ in 0..200 {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            thread::sleep(Duration::from_millis(50));
        }
        child.kill().ok();
        panic!("zenmode did not exit after stdin closed");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(socket) = &self.socket {
            socket.shutdown(std::net::Shutdown::Both).ok();
        }
        if let Some(child) = &mut self.child {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

/// A `zenmode serve --transport tcp` child on a loopback port, killed on
/// drop. Its stderr is drained on a thread (after the address line).
pub struct TcpServer {
    pub child: Child,
    pub address: String,
    /// Everything the server wrote to stderr so far.
    stderr: Arc<Mutex<String>>,
    drain: Option<thread::JoinHandle<()>>,
}

impl TcpServer {
    /// `zenmode serve --transport tcp --listen 127.0.0.1:0 <extra>`.
    pub fn start(extra: &[&str]) -> Self {
        Self::listen("127.0.0.1:0", extra)
    }

    /// `zenmode serve --transport tcp --listen <listen> <extra>`.
    pub fn listen(listen: &str, extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--transport", "tcp", "--listen", listen];
        args.extend_from_slice(extra);
        Self::spawn(zenmode(&args))
    }

    /// Spawns `command` (a TCP `serve`, with whatever environment the test
    /// gave it) and waits for the address it announces on stderr.
    pub fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn zenmode");
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = mpsc::channel();
        let collected = Arc::new(Mutex::new(String::new()));
        let sink = collected.clone();
        let drain = thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("zenmode: listening on ") {
                    let _ = sender.send(address.trim().to_owned());
                }
                let mut text = sink.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let address = receiver
            .recv_timeout(REPLY_TIMEOUT)
            .expect("server announced its address");
        TcpServer {
            child,
            address,
            stderr: collected,
            drain: Some(drain),
        }
    }

    /// Kills the server and returns all it wrote to stderr.
    pub fn stop_and_read_stderr(mut self) -> String {
        self.child.kill().ok();
        self.child.wait().ok();
        if let Some(drain) = self.drain.take() {
            drain.join().ok();
        }
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// `_meta` that a 2026-07-28 client puts on every request.
pub fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "zenmode-tests", "version": "1"}
    })
}

/// structuredContent of a tool result, checking the error flag.
pub fn structured(result: &Value, expect_error: bool) -> Value {
    assert_eq!(
        result["isError"].as_bool().unwrap_or(false),
        expect_error,
        "unexpected isError in {result}"
    );
    let structured = result["structuredContent"].clone();
    // The text content is the same JSON, for clients that ignore structuredContent.
    let text = result["content"][0]["text"].as_str().expect("text content");
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), structured);
    structured
}

/// The text blocks of a tool result, joined by newlines.
pub fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs a zenmode command with no upstreams and quiet logs; its JSON
/// output, failing the test with its stderr when it fails.
pub fn json_out(mut command: Command) -> Value {
    let output = command
        .env("RUST_LOG", "error")
        .env("ZEN_UPSTREAMS", "/nonexistent/upstreams.json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
