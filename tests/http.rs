//! `zenmode serve --transport http`: MCP over Streamable HTTP at /mcp, the
//! health endpoint, and the refusals (foreign Origin, missing or wrong
//! token, oversized body, remote address without a token, too many
//! connections, idle connections).

mod common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use common::{
    REPLY_TIMEOUT, STATELESS_VERSION, TcpServer,
    http::{ACCEPT, client, http_server, runtime},
    stateless_meta, zenmode,
};
use serde_json::{Value, json};

/// The JSON-RPC message with `id` in a response body, which is either JSON
/// or an SSE stream of `data:` lines.
fn message_with_id(body: &str, id: i64) -> Value {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return value;
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no reply with id {id} in {body:?}"))
}

struct Http {
    base: String,
    client: reqwest::Client,
}

impl Http {
    fn new(server: &TcpServer) -> Self {
        Http {
            base: format!("http://{}", server.address),
            client: client(),
        }
    }

    async fn post(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut request = self
            .client
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json")
            .header("accept", ACCEPT)
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }
}

fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "zenmode-tests", "version": "1"}}})
}

#[test]
fn a_legacy_session_initializes_lists_and_calls() {
    let server = http_server(&[]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let (status, headers, body) = http.post(&initialize_request(), &[]).await;
        assert_eq!(status, 200, "{body}");
        let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let init = message_with_id(&body, 1);
        assert_eq!(init["result"]["serverInfo"]["name"], "zenmode");
        let in_session = [
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];

        let (status, _, _) = http
            .post(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                &in_session,
            )
            .await;
        assert_eq!(status, 202);

        let (status, _, body) = http
            .post(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
                &in_session,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let tools = message_with_id(&body, 2)["result"]["tools"].clone();
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["zen_select_mode", "zen_execute"]);

        let (status, _, body) = http
            .post(
                &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                    "name": "zen_select_mode",
                    "arguments": {"task_description": "find why the login page crashes"}}}),
                &in_session,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let reply = message_with_id(&body, 3);
        assert_eq!(
            reply["result"]["structuredContent"]["mode"], "debug",
            "{reply}"
        );

        // An unknown session is refused, and nothing else changes.
        let (status, _, _) = http
            .post(
                &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
                &[
                    ("mcp-session-id", "not-a-session"),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
            )
            .await;
        assert_eq!(status, 404);

        // DELETE ends the session; it is then unknown.
        let deleted = http
            .client
            .delete(format!("{}/mcp", http.base))
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status().as_u16(), 200);
        let (status, _, _) = http
            .post(
                &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
                &in_session,
            )
            .await;
        assert_eq!(status, 404);
    });
}

#[test]
fn stateless_requests_need_no_session() {
    let server = http_server(&[]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "zen_execute",
            "arguments": {"mode": "challenge", "request": {"prompt": "Tabs beat spaces"}},
            "_meta": stateless_meta()}});
        let (status, headers, body) = http
            .post(
                &request,
                &[
                    ("mcp-protocol-version", STATELESS_VERSION),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "zen_execute"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(headers.get("mcp-session-id").is_none());
        let reply = message_with_id(&body, 7);
        assert_eq!(reply["result"]["isError"], false, "{reply}");

        // The method header must match the body.
        let (status, _, body) = http
            .post(
                &request,
                &[
                    ("mcp-protocol-version", STATELESS_VERSION),
                    ("mcp-method", "tools/list"),
                    ("mcp-name", "zen_execute"),
                ],
            )
            .await;
        assert!(status >= 400, "{status} {body}");
    });
}

#[test]
fn health_answers_and_other_paths_are_not_found() {
    let server = http_server(&[]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let health = http
            .client
            .get(format!("{}/healthz", http.base))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status().as_u16(), 200);
        let body: Value = health.json().await.unwrap();
        assert_eq!(body, json!({"status": "ok"}));
        let other = http
            .client
            .get(format!("{}/elsewhere", http.base))
            .send()
            .await
            .unwrap();
        assert_eq!(other.status().as_u16(), 404);
        // The root is a short page saying what this is and where to read on.
        let root = http.client.get(&http.base).send().await.unwrap();
        assert_eq!(root.status().as_u16(), 200);
        let page = root.text().await.unwrap();
        assert!(
            page.contains("zenmode") && page.contains("/mcp") && page.contains("docs/"),
            "{page}"
        );
    });
}

#[test]
fn an_empty_token_file_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "\n").unwrap();
    let output = zenmode(&[
        "serve",
        "--transport",
        "http",
        "--listen",
        "127.0.0.1:0",
        "--auth-token-file",
        file.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is empty"), "{stderr}");
}

#[test]
fn a_foreign_origin_is_forbidden_and_an_allowed_one_passes() {
    let server = http_server(&["--allow-origin", "http://localhost:3000"]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let (status, _, _) = http
            .post(
                &initialize_request(),
                &[("origin", "https://attacker.example")],
            )
            .await;
        assert_eq!(status, 403);
        let (status, _, body) = http
            .post(
                &initialize_request(),
                &[("origin", "http://localhost:3000")],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        // Pages on this machine may call; a look-alike host may not.
        let (status, _, _) = http
            .post(
                &initialize_request(),
                &[("origin", "http://localhost:5173")],
            )
            .await;
        assert_eq!(status, 200);
        let (status, _, _) = http
            .post(
                &initialize_request(),
                &[("origin", "http://localhost.attacker.example")],
            )
            .await;
        assert_eq!(status, 403);
        // No Origin: not a browser, allowed.
        let (status, _, _) = http.post(&initialize_request(), &[]).await;
        assert_eq!(status, 200);
    });
}

#[test]
fn a_token_is_required_when_set_and_never_printed() {
    let secret = "tok-3f9a1c7e-not-in-logs";
    let mut command = zenmode(&["serve", "--transport", "http", "--listen", "127.0.0.1:0"]);
    command
        .env("ZEN_AUTH_TOKEN", secret)
        .env("RUST_LOG", "trace");
    let server = TcpServer::spawn(command);
    let http = Http::new(&server);
    runtime().block_on(async {
        let (status, headers, _) = http.post(&initialize_request(), &[]).await;
        assert_eq!(status, 401);
        assert_eq!(headers["www-authenticate"], "Bearer");
        let (status, _, _) = http
            .post(&initialize_request(), &[("authorization", "Bearer wrong")])
            .await;
        assert_eq!(status, 401);
        let (status, _, _) = http
            .post(&initialize_request(), &[("authorization", "Basic abc")])
            .await;
        assert_eq!(status, 401);
        let bearer = format!("Bearer {secret}");
        let (status, _, body) = http
            .post(&initialize_request(), &[("authorization", bearer.as_str())])
            .await;
        assert_eq!(status, 200, "{body}");
        // Health stays open for load balancers.
        let health = http
            .client
            .get(format!("{}/healthz", http.base))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status().as_u16(), 200);
    });
    let logs = server.stop_and_read_stderr();
    assert!(logs.contains("Streamable HTTP"), "{logs}");
    assert!(!logs.contains(secret), "the token was logged");
}

#[test]
fn an_oversized_body_gets_413_and_the_server_goes_on() {
    let server = http_server(&["--max-message-bytes", "4096"]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "padding": "x".repeat(20_000)}});
        let (status, _, _) = http.post(&big, &[]).await;
        assert_eq!(status, 413);
        let (status, _, _) = http.post(&initialize_request(), &[]).await;
        assert_eq!(status, 200);
    });
}

/// A body that is not JSON is a JSON-RPC parse error (400, code -32700),
/// not a media-type problem; a wrong media type still is one (415).
#[test]
fn malformed_json_gets_a_parse_error_and_the_server_goes_on() {
    let server = http_server(&[]);
    let http = Http::new(&server);
    runtime().block_on(async {
        let url = format!("{}/mcp", http.base);
        let send = |content_type: &'static str, body: &'static str| {
            http.client
                .post(&url)
                .header("content-type", content_type)
                .header("accept", ACCEPT)
                .body(body)
                .send()
        };
        let response = send("application/json", "{not json").await.unwrap();
        assert_eq!(response.status().as_u16(), 400);
        let reply: Value = response.json().await.unwrap();
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        assert!(reply["id"].is_null());
        let response = send("text/plain", "{}").await.unwrap();
        assert_eq!(response.status().as_u16(), 415);
        let (status, _, _) = http.post(&initialize_request(), &[]).await;
        assert_eq!(status, 200);
    });
}

#[test]
fn remote_addresses_need_allow_remote_and_a_token() {
    let refused = |extra: &[&str], env: Option<&str>| {
        let mut args = vec!["serve", "--transport", "http", "--listen", "0.0.0.0:0"];
        args.extend_from_slice(extra);
        let mut command = zenmode(&args);
        command.env_remove("ZEN_AUTH_TOKEN");
        if let Some(token) = env {
            command.env("ZEN_AUTH_TOKEN", token);
        }
        let output = command.output().unwrap();
        assert!(!output.status.success(), "{extra:?} was served");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert!(refused(&[], Some("t")).contains("--allow-remote"));
    assert!(refused(&["--allow-remote"], None).contains("without a token"));

    let mut command = zenmode(&[
        "serve",
        "--transport",
        "http",
        "--listen",
        "0.0.0.0:0",
        "--allow-remote",
    ]);
    command.env("ZEN_AUTH_TOKEN", "t");
    let server = TcpServer::spawn(command);
    assert!(server.address.starts_with("0.0.0.0:"), "{}", server.address);
}

/// Sends raw bytes and reads until the server closes or `limit` passes.
fn raw_exchange(address: &str, request: &[u8], limit: Duration) -> (String, bool) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(limit)).unwrap();
    stream.write_all(request).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let start = Instant::now();
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return (String::from_utf8_lossy(&received).into_owned(), true),
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(_) => return (String::from_utf8_lossy(&received).into_owned(), false),
        }
        if start.elapsed() > limit {
            return (String::from_utf8_lossy(&received).into_owned(), false);
        }
    }
}

#[test]
fn connections_past_the_limit_are_refused_with_503() {
    let server = http_server(&["--max-connections", "1"]);
    // Holds the one slot (connected, no request yet).
    let holder = TcpStream::connect(&server.address).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (reply, closed) = raw_exchange(
        &server.address,
        b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        REPLY_TIMEOUT,
    );
    assert!(reply.starts_with("HTTP/1.1 503"), "{reply}");
    assert!(closed);
    drop(holder);
    // The slot comes back once the holder leaves.
    let deadline = Instant::now() + REPLY_TIMEOUT;
    loop {
        let (reply, _) = raw_exchange(
            &server.address,
            b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
            REPLY_TIMEOUT,
        );
        if reply.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slot never came back: {reply}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_idle_connection_is_closed() {
    let server = http_server(&["--idle-timeout-secs", "1"]);
    // Connected, never sends a request: closed by the server.
    let (reply, closed) = raw_exchange(&server.address, b"", REPLY_TIMEOUT);
    assert!(closed, "still open: {reply}");
    // After a request on a kept-alive connection, idling closes it too.
    let (reply, closed) = raw_exchange(
        &server.address,
        b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        REPLY_TIMEOUT,
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(closed, "kept-alive connection still open");
}
