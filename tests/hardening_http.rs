//! Hardening of the Streamable HTTP front (items 8, 9, 10 and 14 of the
//! hardening issue): a cap on legacy sessions, a deadline for request
//! bodies, a short deadline for request headers with a per-address
//! connection cap, and 400 for a malformed chunked body.
//!
//! Timeouts are set short through flags so each test runs in seconds; the
//! figures the tests measure are printed (`--nocapture` shows them).

mod common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use common::{
    REPLY_TIMEOUT,
    http::{ACCEPT, client, http_server, runtime},
};
use serde_json::{Value, json};

fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "zenmode-tests", "version": "1"}}})
}

async fn post(
    client: &reqwest::Client,
    base: &str,
    body: &Value,
    session: Option<&str>,
) -> (u16, Option<String>, String) {
    let mut request = client
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap().to_owned());
    (status, session, response.text().await.unwrap())
}

/// A new legacy session, initialized and ready for requests.
async fn open_session(client: &reqwest::Client, base: &str) -> String {
    let (status, session, body) = post(client, base, &initialize_request(), None).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let (status, _, body) = post(
        client,
        base,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&session),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    session
}

async fn list_tools(client: &reqwest::Client, base: &str, session: &str) -> (u16, String) {
    let (status, _, body) = post(
        client,
        base,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        Some(session),
    )
    .await;
    (status, body)
}

/// Resident memory of a process, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// Sends raw bytes and reads until the server closes or `limit` passes.
fn raw_exchange(address: &str, request: &[u8], limit: Duration) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    stream.write_all(request).unwrap();
    read_until_closed(&mut stream, limit)
}

fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> String {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let start = Instant::now();
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
        }
        if start.elapsed() > limit {
            break;
        }
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// A connection from `source` (another loopback address, such as
/// 127.0.0.2: Linux routes all of 127.0.0.0/8 to the loopback interface).
fn connect_from(source: &str, address: &str) -> TcpStream {
    runtime().block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        let stream = socket.connect(address.parse().unwrap()).await.unwrap();
        let stream = stream.into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        stream
    })
}

/// `GET /healthz` on `stream`; the reply's first line.
fn health_on(mut stream: TcpStream) -> String {
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .unwrap();
    let reply = read_until_closed(&mut stream, REPLY_TIMEOUT);
    reply.lines().next().unwrap_or_default().to_owned()
}

/// Opens `count` connections that send the start of a request and never
/// finish its headers. Connections the server refused at once are counted.
fn stuck_header_connections(address: &str, count: usize) -> (Vec<TcpStream>, usize) {
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = TcpStream::connect(address).unwrap();
        // The server may already have refused and closed it.
        let _ = stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n");
        streams.push(stream);
    }
    // Those refused got a 503 and were closed right away.
    thread::sleep(Duration::from_millis(300));
    let mut refused = 0;
    for stream in &mut streams {
        stream.set_nonblocking(true).unwrap();
        let mut buffer = [0u8; 64];
        if let Ok(read) = stream.read(&mut buffer)
            && buffer[..read].starts_with(b"HTTP/1.1 503")
        {
            refused += 1;
        }
        stream.set_nonblocking(false).unwrap();
    }
    (streams, refused)
}

// Item 8: no cap on HTTP sessions.

/// Past `--max-sessions`, a new session ends the least recently used one,
/// whose client is then told its session is gone and to initialize again.
#[test]
fn sessions_past_the_cap_end_the_least_recently_used() {
    let server = http_server(&["--max-sessions", "3"]);
    let base = format!("http://{}", server.address);
    let client = client();
    runtime().block_on(async {
        let first = open_session(&client, &base).await;
        let second = open_session(&client, &base).await;
        let third = open_session(&client, &base).await;
        // The first is used again: the second is now the idlest.
        assert_eq!(list_tools(&client, &base, &first).await.0, 200);
        let fourth = open_session(&client, &base).await;

        let (status, body) = list_tools(&client, &base, &second).await;
        assert_eq!(status, 404, "the idlest session still answers: {body}");
        assert!(body.contains("initialize"), "{body}");
        for session in [&first, &third, &fourth] {
            let (status, body) = list_tools(&client, &base, session).await;
            assert_eq!(status, 200, "{body}");
        }
    });
}

/// 2,000 `initialize` calls cost the memory of `--max-sessions` sessions,
/// not of 2,000 (about 135 KB each: 270 MB without a cap).
#[test]
fn an_initialize_flood_stays_within_the_session_cap() {
    const CALLS: usize = 2_000;
    let server = http_server(&["--max-sessions", "100"]);
    let base = format!("http://{}", server.address);
    let pid = server.child.id();
    let client = client();
    let (before, after) = runtime().block_on(async {
        // Warm up (first requests allocate lasting structures).
        for _ in 0..10 {
            open_session(&client, &base).await;
        }
        let before = resident_kib(pid);
        let initialize = initialize_request();
        for _ in 0..CALLS / 20 {
            let batch = (0..20).map(|_| post(&client, &base, &initialize, None));
            for (status, session, body) in futures_util::future::join_all(batch).await {
                assert_eq!(status, 200, "{body}");
                assert!(session.is_some());
            }
        }
        (before, resident_kib(pid))
    });
    let grown_mb = after.saturating_sub(before) as f64 / 1024.0;
    eprintln!(
        "memory: {:.1} MB before, {:.1} MB after {CALLS} initialize calls with --max-sessions 100 (+{grown_mb:.1} MB)",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
    );
    assert!(
        grown_mb < 60.0,
        "{CALLS} sessions grew the server by {grown_mb:.1} MB"
    );
}

// Item 9: request bodies had no read timeout.

/// A body sent one byte at a time past `--body-timeout-secs` gets 408 and
/// frees its slot: the other clients are served again.
#[test]
fn a_body_trickled_past_the_body_timeout_gets_408_and_frees_its_slot() {
    let server = http_server(&["--max-requests-in-flight", "2", "--body-timeout-secs", "1"]);
    let start = Instant::now();
    let (replies, received) = mpsc::channel();
    for _ in 0..2 {
        let address = server.address.clone();
        let replies = replies.clone();
        thread::spawn(move || {
            // On a loaded machine the normal client below may hold a slot
            // when this body's headers arrive; a quick 503 then means
            // "try again", not a failure of the timeout under test.
            let (reply, elapsed) = loop {
                let began = Instant::now();
                let reply = trickle_a_body_that_never_ends(&address, start);
                if reply.starts_with("HTTP/1.1 503")
                    && began.elapsed() < Duration::from_millis(500)
                    && start.elapsed() < Duration::from_secs(8)
                {
                    thread::sleep(Duration::from_millis(20));
                    continue;
                }
                break (reply, began.elapsed());
            };
            let _ = replies.send((reply, elapsed));
        });
    }
    // A normal client first sees both slots held by the slow bodies (503),
    // then is served once the body timeout lets them go.
    let base = format!("http://{}", server.address);
    let client = client();
    let served_after = runtime().block_on(async {
        let mut refused = false;
        loop {
            let (status, _, body) = post(&client, &base, &initialize_request(), None).await;
            match status {
                200 if refused => break start.elapsed(),
                200 => {}
                503 => refused = true,
                _ => panic!("status {status}: {body}"),
            }
            assert!(
                start.elapsed() < Duration::from_secs(12),
                "after {:?}: the slow bodies {}",
                start.elapsed(),
                if refused {
                    "still hold every slot"
                } else {
                    "never held both slots"
                }
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    for _ in 0..2 {
        let (reply, elapsed) = received.recv_timeout(REPLY_TIMEOUT).unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 408"),
            "after {elapsed:?}: {reply:?}"
        );
        assert!(
            elapsed < Duration::from_secs(6),
            "the 1 s body timeout took {elapsed:?}"
        );
    }
    eprintln!("slow bodies: a normal client served again after {served_after:?}");
}

/// Sends a POST announcing 400 bytes, then one byte every 200 ms (the body
/// is never whole), and returns whatever the server answers.
fn trickle_a_body_that_never_ends(address: &str, start: Instant) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 400\r\n\r\n{",
        )
        .unwrap();
    let mut reader = stream.try_clone().unwrap();
    let (got, reply) = mpsc::channel();
    thread::spawn(move || {
        let _ = got.send(read_until_closed(&mut reader, Duration::from_secs(15)));
    });
    loop {
        if let Ok(reply) = reply.recv_timeout(Duration::from_millis(200)) {
            return reply;
        }
        if start.elapsed() > Duration::from_secs(14) || stream.write_all(b" ").is_err() {
            return reply
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
        }
    }
}

// Item 10: header slowloris.

/// 520 connections that never finish their headers are closed after
/// `--header-timeout-secs`, not after the idle timeout: normal clients
/// from the same address are served again within seconds.
#[test]
fn connections_that_never_finish_their_headers_are_closed_after_the_header_timeout() {
    let server = http_server(&[
        "--header-timeout-secs",
        "1",
        "--max-connections-per-ip",
        "1000",
    ]);
    let (stuck, refused) = stuck_header_connections(&server.address, 520);
    let start = Instant::now();
    // 512 (--max-connections) are held; the rest were refused.
    assert_eq!(refused, 520 - 512);
    loop {
        let reply = raw_exchange(
            &server.address,
            b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
            REPLY_TIMEOUT,
        );
        if reply.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "stuck connections still hold every slot after {:?}",
            start.elapsed()
        );
        thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "520 stuck header connections, --header-timeout-secs 1: served again after {:?}",
        start.elapsed()
    );
    drop(stuck);
}

/// One address cannot take every connection: past
/// `--max-connections-per-ip` it is refused, and other addresses are
/// still served while its connections sit there.
#[test]
fn one_address_cannot_take_every_connection() {
    // Headers may take long here: only the per-address cap is at work.
    let server = http_server(&["--header-timeout-secs", "60"]);
    let (stuck, refused) = stuck_header_connections(&server.address, 520);
    let start = Instant::now();
    let status = health_on(connect_from("127.0.0.2", &server.address));
    let elapsed = start.elapsed();
    assert_eq!(status, "HTTP/1.1 200 OK", "another address was refused");
    // 64 (the default per address) are held, the other 456 refused.
    assert_eq!(refused, 520 - 64);
    let status = health_on(TcpStream::connect(&server.address).unwrap());
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    eprintln!(
        "520 stuck header connections from 127.0.0.1: 127.0.0.2 served after {elapsed:?}, {refused} of 520 refused at once"
    );
    drop(stuck);
}

// Item 14: a malformed chunked body got 500.

/// A chunk size that overflows, or a chunk extension past hyper's limit, is
/// the client's mistake: 400, and the server goes on.
#[test]
fn a_malformed_chunked_body_gets_400() {
    let server = http_server(&[]);
    let head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let overflow = format!("{head}FFFFFFFFFFFFFFFFFF\r\n{{}}\r\n0\r\n\r\n");
    let extension = format!("{head}2;{}\r\n{{}}\r\n0\r\n\r\n", "x".repeat(70_000));
    for (name, request) in [
        ("chunk-size overflow", overflow),
        ("70 KB extension", extension),
    ] {
        let reply = raw_exchange(&server.address, request.as_bytes(), REPLY_TIMEOUT);
        assert!(reply.starts_with("HTTP/1.1 400"), "{name}: {reply:?}");
    }
    // A well-formed chunked body still works.
    let body = initialize_request().to_string();
    let good = format!("{head}{:x}\r\n{body}\r\n0\r\n\r\n", body.len());
    let reply = raw_exchange(&server.address, good.as_bytes(), REPLY_TIMEOUT);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply:?}");
}

/// When the cap is reached and every session is streaming a response (none
/// can be ended), a new session is refused at once with 503 and a JSON-RPC
/// error, never left waiting.
#[test]
fn a_new_session_is_refused_when_every_session_is_streaming() {
    let server = http_server(&["--max-sessions", "1"]);
    let base = format!("http://{}", server.address);
    let client = client();
    runtime().block_on(async {
        let session = open_session(&client, &base).await;
        // The standalone SSE stream keeps the one session busy.
        let stream = client
            .get(format!("{base}/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status().as_u16(), 200);
        let (status, _, body) = post(&client, &base, &initialize_request(), None).await;
        assert_eq!(status, 503, "{body}");
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(reply["error"]["code"], -32000, "{reply}");
        assert_eq!(reply["id"], 1, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Too many sessions"),
            "{reply}"
        );
        // The session still works.
        assert_eq!(list_tools(&client, &base, &session).await.0, 200);
    });
}
