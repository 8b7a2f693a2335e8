//! Issue 9, the wire: logging that never stops the server, signals, ids,
//! nesting and size limits, duplicate ids, and TCP limits.

mod common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use common::{
    Client, TcpServer,
    fake_provider::{BackgroundFake, Reply},
    zenmode,
};
use serde_json::{Value, json};

fn ping(id: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

/// Waits up to `limit` for `child` to exit.
fn exits_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.kill().ok();
    child.wait().ok();
    None
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

// ---- logging (item 4) ----

/// stderr is a pipe whose read end is gone: every log write fails with
/// EPIPE. This used to panic ("failed printing to stderr", exit 101).
#[test]
fn a_closed_stderr_neither_kills_nor_stalls_the_server() {
    let mut command = zenmode(&["serve"]);
    command.env("RUST_LOG", "debug");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    for _ in 0..20 {
        writeln!(stdin, "not json").unwrap();
    }
    writeln!(stdin, "{}", ping(json!(1))).unwrap();
    drop(stdin);
    let status = exits_within(&mut child, Duration::from_secs(20)).expect("exited at EOF");
    assert!(status.success(), "{status:?}");
    let replies: Vec<Value> = reader
        .join()
        .unwrap()
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // Replies need not come in order: the transport's own error replies go
    // out beside rmcp's.
    assert_eq!(replies.len(), 21, "{replies:?}");
    let errors = replies
        .iter()
        .filter(|reply| reply["error"]["code"] == -32700)
        .count();
    assert_eq!(errors, 20, "{replies:?}");
    assert!(
        replies.contains(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        "{replies:?}"
    );
}

/// stderr is a pipe nobody reads: once it is full, a blocking log write
/// would stop the server. Every malformed line must still get its reply.
#[test]
fn an_unread_stderr_never_stops_the_replies() {
    let mut command = zenmode(&["serve"]);
    command.env("RUST_LOG", "debug");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _unread = child.stderr.take();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, replies) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    const LINES: usize = 5_000;
    let writer = thread::spawn(move || {
        // Long lines make long log lines, to fill the pipe sooner.
        let junk = format!("{{not json {}", "x".repeat(200));
        for _ in 0..LINES {
            writeln!(stdin, "{junk}").unwrap();
        }
        writeln!(stdin, "{}", ping(json!("last"))).unwrap();
        stdin
    });
    let (mut errors, mut answered) = (0, false);
    for n in 0..=LINES {
        let line = replies
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("only {n} replies came"));
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == "last" {
            answered = true;
        } else {
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            errors += 1;
        }
    }
    assert!(answered && errors == LINES, "{errors} errors");
    drop(writer.join().unwrap());
    let status = exits_within(&mut child, Duration::from_secs(20)).expect("exited at EOF");
    assert!(status.success(), "{status:?}");
}

// ---- signals (item 5) ----

#[test]
fn sigterm_ends_a_stdio_server_whose_stdin_stays_open() {
    let mut child = zenmode(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": common::LEGACY_VERSION, "capabilities": {},
        "clientInfo": {"name": "zenmode-tests", "version": "1"}}});
    writeln!(stdin, "{initialize}").unwrap();
    let mut reply = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut reply)
        .unwrap();
    assert!(reply.contains("serverInfo"), "{reply}");
    sigterm(&child);
    let status = exits_within(&mut child, Duration::from_secs(2));
    // stdin is still open here.
    drop(stdin);
    let status = status.expect("exited within 2 s of SIGTERM");
    assert!(status.success(), "{status:?}");
}

/// A port that was free a moment ago (the server must be told one up front
/// when its stderr, where it announces the port, is closed).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn sigterm_ends_a_tcp_server_whose_stderr_is_closed() {
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let mut command = zenmode(&["serve", "--transport", "tcp", "--listen", &address]);
    command.env("RUST_LOG", "debug");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let mut connected = None;
    for _ in 0..200 {
        if let Ok(stream) = TcpStream::connect(&address) {
            connected = Some(stream);
            break;
        }
        thread::sleep(Duration::from_millis(25));
    }
    let stream = connected.expect("the server listens");
    drop(stream);
    let mut client = Client::connect(&address);
    client.initialize();
    client.send_raw("garbage");
    assert_eq!(client.tool_names().len(), 2);
    sigterm(&child);
    let status = exits_within(&mut child, Duration::from_secs(5)).expect("exited after SIGTERM");
    assert!(status.success(), "{status:?}");
}

// ---- ids, nesting and sizes (item 7) ----

/// Sends `lines` to a fresh `zenmode serve` and returns every reply.
fn replies_to(args: &[&str], lines: &[String]) -> Vec<Value> {
    let mut child = zenmode(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut input = Vec::new();
    for line in lines {
        input.extend_from_slice(line.as_bytes());
    }
    let writer = thread::spawn(move || {
        stdin.write_all(&input).unwrap();
    });
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success());
    out.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn ids_that_are_not_strings_or_integers_are_refused_and_never_echoed() {
    let bad = [
        json!({"a": 1}),
        json!([1]),
        json!(true),
        json!(1.5),
        json!(null),
    ];
    let mut lines: Vec<String> = bad.iter().map(|id| ping(id.clone()) + "\n").collect();
    // 2^64 (and beyond i64, which rmcp cannot hold) written out by hand.
    lines.push("{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}\n".into());
    lines.push("{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"method\":\"ping\"}\n".into());
    lines.push(ping(json!("ok")) + "\n");
    let replies = replies_to(&["serve"], &lines);
    assert_eq!(replies.len(), lines.len(), "{replies:?}");
    let (answered, refused): (Vec<&Value>, Vec<&Value>) =
        replies.iter().partition(|reply| reply["id"] == "ok");
    assert_eq!(
        answered,
        [&json!({"jsonrpc": "2.0", "id": "ok", "result": {}})]
    );
    for reply in refused {
        assert_eq!(reply["id"], Value::Null, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains("string or an integer"), "{message}");
    }
}

#[test]
fn a_notification_sent_with_an_id_is_an_invalid_request() {
    let line = json!({"jsonrpc": "2.0", "id": 4, "method": "notifications/initialized"});
    let replies = replies_to(&["serve"], &[line.to_string() + "\n"]);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["id"], 4);
    assert_eq!(replies[0]["error"]["code"], -32600);
    let message = replies[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("without an id"), "{message}");
}

/// A ping nesting `depth` levels in all (the message object counts as one).
fn nested_ping(id: u64, depth: usize) -> String {
    // message { params { _meta { x [ ... ] } } }: three objects around the arrays.
    let arrays = depth - 3;
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\",\"params\":{{\"_meta\":{{\"x\":{}{}}}}}}}\n",
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
}

#[test]
fn nesting_past_the_limit_is_refused_as_too_deep_not_as_invalid_json() {
    let limit = zenmode::server::transport::MAX_NESTING;
    let replies = replies_to(
        &["serve"],
        &[nested_ping(1, limit), nested_ping(2, limit + 1)],
    );
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert!(
        replies.contains(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        "{replies:?}"
    );
    let refusal = replies.iter().find(|reply| reply["id"] != 1).unwrap();
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{limit} levels deep")) && !message.contains("not valid JSON"),
        "{message}"
    );
}

/// A ping padded with spaces to exactly `bytes` bytes.
fn padded_ping(id: u64, bytes: usize) -> String {
    let core = ping(json!(id));
    let mut line = core[..core.len() - 1].to_owned();
    line.push_str(&" ".repeat(bytes - core.len()));
    line.push('}');
    assert_eq!(line.len(), bytes);
    line
}

#[test]
fn the_size_limit_does_not_count_a_carriage_return() {
    let args = ["serve", "--max-message-bytes", "1024"];
    let lines = [
        padded_ping(1, 1024) + "\r\n",
        padded_ping(2, 1024) + "\n",
        padded_ping(3, 1025) + "\r\n",
        padded_ping(4, 1025) + "\n",
    ];
    let replies = replies_to(&args, &lines);
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert!(replies.contains(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})));
    assert!(replies.contains(&json!({"jsonrpc": "2.0", "id": 2, "result": {}})));
    for refusal in replies.iter().filter(|reply| reply.get("error").is_some()) {
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
        assert!(
            refusal["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1024 byte limit")
        );
    }
}

// ---- duplicate ids (item 8) ----

#[test]
fn a_second_request_with_an_id_in_flight_is_refused() {
    let fake = BackgroundFake::start(vec![Reply::Stall]);
    let mut command = zenmode(&["serve"]);
    command
        .env("OPENAI_API_KEY", "sk-hardening-secret")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
    let mut client = Client::spawn_command(command);
    client.initialize();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    let chat = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "zen_execute",
            "arguments": {"mode": "chat", "request": {"prompt": "hello", "model": "gpt-5",
                "working_directory_absolute_path": cwd}}}})
    };
    client.send(&chat(9));
    for _ in 0..200 {
        if !fake.fake.requests().is_empty() {
            break;
        }
        thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(fake.fake.requests().len(), 1, "the first call is in flight");
    client.send(&chat(9));
    let refusal = client.reply_to(&json!(9));
    assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still in progress"),
        "{refusal}"
    );
    // The duplicate never ran.
    thread::sleep(Duration::from_millis(300));
    assert_eq!(fake.fake.requests().len(), 1);

    // Other ids are served meanwhile.
    client.send_raw(&ping(json!(10)));
    let reply = client.reply_to(&json!(10));
    assert_eq!(reply["result"], json!({}), "{reply}");
}

// ---- TCP limits (item 9) ----

/// Everything the server sends on `stream` until it closes it (or 20 s).
fn read_until_closed(mut stream: TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut out = String::new();
    stream
        .read_to_string(&mut out)
        .expect("the server closed the connection");
    out
}

#[test]
fn connections_over_the_cap_get_an_error_line_and_are_closed() {
    let server = TcpServer::start(&["--max-connections", "1"]);
    let mut first = Client::connect(&server.address);
    first.initialize();
    let refused = read_until_closed(TcpStream::connect(&server.address).unwrap());
    let reply: Value = serde_json::from_str(refused.trim()).expect("one JSON-RPC line");
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(reply["error"]["code"], -32000);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 connections"),
        "{reply}"
    );
    // The first connection is unaffected.
    assert_eq!(first.tool_names().len(), 2);
}

#[test]
fn idle_connections_are_closed_and_free_their_slot() {
    let server = TcpServer::start(&["--max-connections", "1", "--idle-timeout-secs", "1"]);
    let idle = TcpStream::connect(&server.address).unwrap();
    let mut writer = idle.try_clone().unwrap();
    writeln!(writer, "{}", ping(json!(1))).unwrap();
    let said = read_until_closed(idle);
    assert_eq!(said.lines().count(), 1, "the ping was answered: {said}");
    // Its slot is free again.
    let mut next = Client::connect(&server.address);
    next.initialize();
    assert_eq!(next.tool_names().len(), 2);
}

#[test]
fn an_ipv4_mapped_loopback_address_counts_as_loopback() {
    let server = TcpServer::listen("[::ffff:127.0.0.1]:0", &[]);
    let mut client = Client::connect(&server.address);
    client.initialize();
    assert_eq!(client.tool_names().len(), 2);
}

#[test]
fn a_connection_with_a_request_in_progress_is_not_idle() {
    let fake = BackgroundFake::start(vec![Reply::Stall]);
    let mut command = zenmode(&[
        "serve",
        "--transport",
        "tcp",
        "--listen",
        "127.0.0.1:0",
        "--idle-timeout-secs",
        "1",
    ]);
    command
        .env("OPENAI_API_KEY", "sk-hardening-secret")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
    let server = TcpServer::spawn(command);
    let mut client = Client::connect(&server.address);
    client.initialize();
    let cwd = std::env::current_dir().unwrap().display().to_string();
    client.send(
        &json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
        "name": "zen_execute",
        "arguments": {"mode": "chat", "request": {"prompt": "hello", "model": "gpt-5",
            "working_directory_absolute_path": cwd}}}}),
    );
    // Well past the idle timeout, with nothing sent, while the call waits.
    thread::sleep(Duration::from_millis(2_500));
    assert_eq!(fake.fake.requests().len(), 1);
    assert_eq!(client.tool_names().len(), 2, "the connection is still open");
}
