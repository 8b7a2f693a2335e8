//! OAuth sign-in to an HTTP upstream, against a real authorization server
//! and protected MCP server (tests/upstreams/oauth_server.py, Python's
//! standard library) that issue 2-second access tokens.

mod common;

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{
    Client,
    gateway::{Setup, execute, wait_until},
};
use serde_json::{Value, json};

const MACHINE_SECRET: &str = "machine-secret-0123456789";

/// The OAuth test server; killed when dropped.
struct OAuthServer {
    child: Child,
    base: String,
}

impl OAuthServer {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// The server with more of its options (see its docstring).
    fn start_with(options: &[&str]) -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/upstreams/oauth_server.py"
        );
        let mut child = Command::new("python3")
            .args([
                script,
                "--lifetime",
                "2",
                "--machine-secret",
                MACHINE_SECRET,
            ])
            .args(options)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").expect("a port");
        OAuthServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn post(&self, path: &str) {
        let runtime = common::http::runtime();
        runtime.block_on(async {
            common::http::client()
                .post(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap()
        });
    }

    fn stats(&self) -> Value {
        let runtime = common::http::runtime();
        runtime.block_on(async {
            common::http::client()
                .get(format!("{}/stats", self.base))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap()
        })
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(setup: &Setup) -> Client {
    let mut command = setup.command(&["serve"]);
    command
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .env("RUST_LOG", "debug")
        .stderr(std::fs::File::create(setup.log()).unwrap());
    let mut client = Client::spawn_keeping_stderr(command);
    client.initialize();
    client
}

/// 200 calls over 10 s, in bursts of 10 sent at once; every one succeeds.
/// Returns how long they took (more than 10 s on a loaded machine).
fn two_hundred_calls(client: &mut Client) -> f64 {
    let started = Instant::now();
    for burst in 0..20u64 {
        let ids: Vec<Value> = (0..10u64)
            .map(|i| json!(100_000 + burst * 10 + i))
            .collect();
        for id in &ids {
            client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "zen_execute", "arguments": {"mode": "secure__echo",
                "request": {"text": format!("call {id}")}}}}));
        }
        for id in &ids {
            let reply = client.wait_for(|m| &m["id"] == id && m.get("method").is_none());
            let text = common::text_of(&reply["result"]);
            assert!(
                reply["result"]["isError"] != true && text.contains(&format!("echo: call {id}")),
                "call {id} failed after {:?}: {reply}",
                started.elapsed()
            );
        }
        let due = Duration::from_millis(500 * (burst + 1));
        if let Some(wait) = due.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    started.elapsed().as_secs_f64()
}

/// Issued tokens of `grant` and the shortest gap between two of them.
fn issued(stats: &Value, grant: &str) -> (Vec<f64>, Vec<String>) {
    let list: Vec<&Value> = stats["issued"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["grant"] == grant)
        .collect();
    (
        list.iter().map(|t| t["at"].as_f64().unwrap()).collect(),
        list.iter()
            .map(|t| t["token"].as_str().unwrap().to_owned())
            .collect(),
    )
}

fn assert_one_renewal_per_expiry(times: &[f64], elapsed: f64, what: &str) {
    let gaps: Vec<String> = times
        .windows(2)
        .map(|p| format!("{:.2}", p[1] - p[0]))
        .collect();
    eprintln!(
        "{what}: {} tokens, {} s apart",
        times.len(),
        gaps.join(", ")
    );
    // Tokens live 2 s and are renewed a quarter of their life early, at
    // the first call after that: one token per 1.5 to 2 s of calls (about 6
    // in 10 s). Two renewals for one expiry (calls that raced) would come
    // within milliseconds of each other.
    let most = (elapsed / 1.5).ceil() as usize + 1;
    let least = (elapsed / 2.0).floor() as usize - 1;
    assert!(
        (least..=most).contains(&times.len()),
        "{what}: {} tokens in {elapsed:.1} s",
        times.len()
    );
    for pair in times.windows(2) {
        assert!(
            pair[1] - pair[0] > 1.0,
            "{what}: two tokens {:.3}s apart (a renewal was not shared): {times:?}",
            pair[1] - pair[0]
        );
    }
}

#[cfg(unix)]
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn machine_sign_in_renews_once_per_expiry_and_never_logs_tokens() {
    let server = OAuthServer::start();
    let setup = Setup::new(json!({"secure": {
        "url": format!("{}/mcp", server.base),
        "oauth": {"client_id": "machine", "client_secret": MACHINE_SECRET, "grant": "client_credentials"}
    }}));
    let mut client = serve(&setup);
    let elapsed = two_hundred_calls(&mut client);
    let stats = server.stats();
    let (times, tokens) = issued(&stats, "client_credentials");
    assert_one_renewal_per_expiry(&times, elapsed, "client credentials");
    assert_eq!(stats["calls"], 200, "{stats}");
    // Renewed before expiry: no request ever carried an aged token.
    assert_eq!(stats["stale_token_requests"], 0, "{stats}");
    client.finish();

    let dir = setup.path("config").join("oauth");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    #[cfg(unix)]
    {
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&file), 0o600);
    }
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.contains(tokens.last().unwrap()),
        "the newest token is stored"
    );
    let log = setup.log_text();
    assert!(!log.is_empty());
    for secret in tokens.iter().map(String::as_str).chain([MACHINE_SECRET]) {
        assert!(!log.contains(secret), "a secret reached the log:\n{log}");
    }
}

#[test]
fn browser_sign_in_is_asked_for_then_login_stores_tokens_that_refresh() {
    let server = OAuthServer::start();
    let setup = Setup::new(json!({"secure": {"url": format!("{}/mcp", server.base)}}));
    let status = |setup: &Setup| {
        let output = setup
            .command(&["status", "--json"])
            .env("ZEN_CONFIG_DIR", setup.path("config"))
            .output()
            .unwrap();
        let status: Value = serde_json::from_slice(&output.stdout).unwrap();
        status["servers"][0].clone()
    };

    // Not signed in: the server's state says so, and a call names the command.
    let mut client = serve(&setup);
    assert!(
        wait_until(Duration::from_secs(20), || status(&setup)["state"]
            == "needs sign-in"),
        "{}",
        status(&setup)
    );
    let row = status(&setup);
    assert!(
        row["last_error"]
            .as_str()
            .unwrap()
            .contains("zenmode upstream login secure"),
        "{row}"
    );
    let reply = execute(&mut client, "secure__echo", json!({"text": "hi"}));
    assert!(
        common::text_of(&reply).contains("zenmode upstream login secure"),
        "{reply}"
    );
    client.finish();

    // `upstream login --no-browser`: the test is the browser.
    login(&setup, "secure");
    let runtime = common::http::runtime();

    // Serving again: calls succeed across several expiries, by refresh.
    let mut client = serve(&setup);
    let elapsed = two_hundred_calls(&mut client);
    let stats = server.stats();
    let (times, _) = issued(&stats, "refresh_token");
    assert_one_renewal_per_expiry(&times, elapsed, "refresh");
    assert_eq!(stats["stale_token_requests"], 0, "{stats}");

    // A token the server stops accepting early: one refresh, and the call
    // still succeeds. Revoked while the token is young, so that the call
    // meets the 401 and not a renewal that was due anyway.
    let young = wait_until(Duration::from_secs(5), || {
        execute(&mut client, "secure__echo", json!({"text": "warm"}));
        let (times, _) = issued(&server.stats(), "refresh_token");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        times.last().is_some_and(|last| now - last < 0.8)
    });
    assert!(young, "no fresh token within 5 s");
    let times = issued(&server.stats(), "refresh_token").0;
    runtime.block_on(async {
        common::http::client()
            .post(format!("{}/revoke-all", server.base))
            .send()
            .await
            .unwrap()
    });
    let reply = execute(&mut client, "secure__echo", json!({"text": "after revoke"}));
    assert!(
        common::text_of(&reply).contains("echo: after revoke"),
        "{reply}"
    );
    let after = server.stats();
    assert_eq!(after["stale_token_requests"], 1, "{after}");
    assert_eq!(
        issued(&after, "refresh_token").0.len(),
        times.len() + 1,
        "{after}"
    );
    let stats = after;
    client.finish();
    let log = setup.log_text();
    for token in stats["issued"].as_array().unwrap() {
        let token = token["token"].as_str().unwrap();
        assert!(!log.contains(token), "a token reached the log");
    }
}

/// A bearer-token API as many are: every request without a token gets 401
/// with a bare `Bearer` challenge, no metadata anywhere (404 under
/// `/.well-known`). Records each request line; stops when dropped.
struct BearerOnlyServer {
    base: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl BearerOnlyServer {
    fn start() -> Self {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (seen, stopping) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                // The head, then the body its content-length announces.
                let mut data = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => data.extend_from_slice(&chunk[..n]),
                    }
                    if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(at + 4);
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&data[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while data.len() < head_end + length {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => data.extend_from_slice(&chunk[..n]),
                    }
                }
                let line = head.lines().next().unwrap_or_default().to_owned();
                let path = line.split_whitespace().nth(1).unwrap_or_default();
                let answer = if path.starts_with("/.well-known/") {
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                } else {
                    "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"api\"\r\ncontent-type: application/json\r\ncontent-length: 24\r\nconnection: close\r\n\r\n{\"error\":\"unauthorized\"}"
                };
                seen.lock().unwrap().push(line);
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        BearerOnlyServer {
            base,
            requests,
            stop,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for BearerOnlyServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Issue 44 item 3: a server that answers 401 but names no authorization
/// server is not sent to OAuth. Status, the call's error, doctor, `upstream
/// add` and `upstream login` all give the header form with a `${VAR}`;
/// login registers nothing. (A server with metadata still gets the sign-in
/// advice: `browser_sign_in_is_asked_for_then_login_stores_tokens_that_refresh`.)
#[test]
fn a_bearer_token_server_without_oauth_metadata_is_told_to_take_a_header() {
    let server = BearerOnlyServer::start();
    let url = format!("{}/mcp", server.base);
    let setup = Setup::new(json!({"api": {"url": url}}));
    let run = |args: &[&str]| {
        let output = setup
            .command(args)
            .env("ZEN_CONFIG_DIR", setup.path("config"))
            .env("HOME", setup.path("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let header = "--header 'Authorization: Bearer ${API_TOKEN}'";

    // login fails at once with the advice, before any registration.
    let (code, stdout, stderr) = run(&["upstream", "login", "api", "--no-browser"]);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("wants a credential"), "{stderr}");
    assert!(stderr.contains(header), "{stderr}");
    assert!(!stderr.contains("Registration"), "{stderr}");
    assert!(
        !server.requests().iter().any(|r| r.contains("/register")),
        "{:?}",
        server.requests()
    );

    // Serving: the recorded state and the call's error say the same.
    let mut client = serve(&setup);
    let status = || {
        let (_, stdout, _) = run(&["status", "--json"]);
        let status: Value = serde_json::from_str(&stdout).unwrap();
        status["servers"][0].clone()
    };
    assert!(
        wait_until(Duration::from_secs(20), || status()["state"]
            == "needs credential"),
        "{}",
        status()
    );
    let row = status();
    let error = row["last_error"].as_str().unwrap();
    assert!(error.contains(header), "{row}");
    assert!(!error.contains("needs sign-in"), "{row}");
    let (_, plain, _) = run(&["status"]);
    assert!(
        plain.contains("needs credential") && plain.contains(header),
        "{plain}"
    );
    assert!(!plain.contains("upstream login api"), "{plain}");
    let reply = execute(&mut client, "api__echo", json!({"text": "hi"}));
    let text = common::text_of(&reply);
    assert!(text.contains(header), "{reply}");
    assert!(!text.contains("sign-in (OAuth)"), "{reply}");
    client.finish();

    // doctor and `upstream add` name the header form too.
    let (code, report, _) = run(&["doctor", "--upstream-wait-secs", "10"]);
    assert_ne!(code, 0, "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("api") && l.contains(header)),
        "{report}"
    );
    let (code, stdout, stderr) = run(&["upstream", "add", "api2", "--url", &url]);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--header 'Authorization: Bearer ${API2_TOKEN}'"),
        "{stderr}"
    );
    assert!(!stderr.contains("upstream login api2"), "{stderr}");
}

/// `zenmode upstream login NAME --no-browser`, the test being the browser.
fn login(setup: &Setup, name: &str) {
    let mut login = setup
        .command(&["upstream", "login", name, "--no-browser"])
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (found, url) = std::sync::mpsc::channel();
    let stderr = BufReader::new(login.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if line.trim_start().starts_with("http://") {
                let _ = found.send(line.trim().to_owned());
            }
        }
    });
    let url = url
        .recv_timeout(Duration::from_secs(30))
        .expect("login printed the authorization URL");
    let runtime = common::http::runtime();
    let page = runtime.block_on(async {
        // Following the redirect lands on zenmode's loopback callback.
        common::http::client()
            .get(&url)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    assert!(page.contains("signed in"), "{page}");
    let status_code = login.wait().unwrap();
    assert!(status_code.success());
}

/// Every secret the server issued (tokens, refresh tokens) and the machine
/// client's secret.
fn issued_secrets(server: &OAuthServer) -> Vec<String> {
    let stats = server.stats();
    let mut secrets = vec![MACHINE_SECRET.to_owned()];
    for issued in stats["issued"].as_array().unwrap() {
        for field in ["token", "refresh"] {
            if let Some(secret) = issued[field].as_str() {
                secrets.push(secret.to_owned());
            }
        }
    }
    secrets
}

/// Issue 45 item 1: an HTTP upstream that quotes the request's
/// `Authorization` header (or lists what it issued) hands no token,
/// refresh token or client secret to the client: not in a tool's text, its
/// structured content (values or names), a JSON-RPC error, a resource read
/// or a prompt; not even another server's.
#[test]
fn item1_tokens_an_upstream_quotes_back_never_reach_the_client() {
    let server = OAuthServer::start();
    let setup = Setup::new(json!({
        "secure": {"url": format!("{}/mcp", server.base)},
        "machine": {
            "url": format!("{}/mcp", server.base),
            "oauth": {"client_id": "machine", "client_secret": MACHINE_SECRET, "grant": "client_credentials"}
        }
    }));
    login(&setup, "secure");
    let mut client = serve(&setup);
    let mut relayed = Vec::new();
    for server_name in ["secure", "machine"] {
        let whoami = execute(&mut client, &format!("{server_name}__whoami"), json!({}));
        assert!(
            common::text_of(&whoami).contains("you sent Bearer [redacted]"),
            "the header was quoted, its token hidden: {whoami}"
        );
        relayed.push(whoami);
        let leak = execute(&mut client, &format!("{server_name}__leak"), json!({}));
        assert!(
            common::text_of(&leak).contains("bad request: Bearer [redacted]"),
            "{leak}"
        );
        relayed.push(leak);
        relayed.push(execute(
            &mut client,
            &format!("{server_name}__leak_all"),
            json!({}),
        ));
    }
    let mut uris = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let params = match &cursor {
            Value::Null => json!({}),
            cursor => json!({"cursor": cursor}),
        };
        let page = client.call("resources/list", params);
        for resource in page["resources"].as_array().unwrap() {
            uris.push(resource["uri"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(uris.len(), 2, "{uris:?}");
    for uri in uris {
        let read = client.call("resources/read", json!({"uri": uri}));
        assert!(
            read.to_string().contains("read with Bearer [redacted]"),
            "{read}"
        );
        relayed.push(read);
    }
    let prompts = client.call("prompts/list", json!({}));
    for prompt in prompts["prompts"].as_array().unwrap() {
        let got = client.call("prompts/get", json!({"name": prompt["name"]}));
        assert!(
            got.to_string().contains("prompt for Bearer [redacted]"),
            "{got}"
        );
        relayed.push(got);
    }
    client.finish();
    // Tool definitions too (the cached catalog is what the model sees).
    let mut cached = String::new();
    for entry in std::fs::read_dir(setup.path("cache").join("upstreams")).unwrap() {
        cached.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
    }
    assert!(cached.contains("Listed for Bearer [redacted]"), "{cached}");
    relayed.push(Value::String(cached));
    let secrets = issued_secrets(&server);
    assert!(secrets.len() > 3, "tokens were issued: {secrets:?}");
    for reply in &relayed {
        let text = reply.to_string();
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "a secret reached the client: {text}"
            );
        }
    }
}

/// A `zenmode serve` of `setup` whose stderr goes to `log`.
fn serve_logging_to(setup: &Setup, log: &str) -> Client {
    let mut command = setup.command(&["serve"]);
    command
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .env("RUST_LOG", "debug")
        .stderr(std::fs::File::create(setup.path(log)).unwrap());
    let mut client = Client::spawn_keeping_stderr(command);
    client.initialize();
    client
}

/// Issue 45 item 5: two `zenmode serve` processes (two client sessions)
/// share one token file. The authorization server rotates refresh tokens,
/// takes 0.5 s to answer a refresh, and signs the whole family out when a
/// refresh token is used twice (as Auth0 and Okta do). Both processes call
/// across several expiries; only one renews each time, the other takes
/// its token from the file, and no call fails.
#[test]
fn item5_two_serve_processes_on_one_token_file_renew_one_at_a_time() {
    let server = OAuthServer::start_with(&["--reuse-detection", "--refresh-delay", "1.5"]);
    let setup = Setup::new(json!({"secure": {"url": format!("{}/mcp", server.base)}}));
    login(&setup, "secure");
    let clients = [
        serve_logging_to(&setup, "first.log"),
        serve_logging_to(&setup, "second.log"),
    ];
    let failures: Vec<String> = std::thread::scope(|scope| {
        let running: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(which, mut client)| {
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    let started = Instant::now();
                    let mut n = 0;
                    // Tokens live 2 s: about five expiries.
                    while started.elapsed() < Duration::from_secs(9) {
                        n += 1;
                        let text = format!("process {which} call {n}");
                        let reply = execute(&mut client, "secure__echo", json!({"text": text}));
                        if !common::text_of(&reply).contains(&format!("echo: {text}")) {
                            failures.push(format!("{:?}: {reply}", started.elapsed()));
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    client.finish();
                    failures
                })
            })
            .collect();
        running
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let stats = server.stats();
    assert!(failures.is_empty(), "calls failed: {failures:#?}\n{stats}");
    assert_eq!(stats["reuse_detected"], 0, "{stats}");
    assert_eq!(stats["refused_refresh"], 0, "{stats}");
    let (times, _) = issued(&stats, "refresh_token");
    assert!(times.len() >= 3, "renewed across expiries: {stats}");
}

/// Issue 45 item 6: a slow refresh endpoint that fails. Six calls that
/// find the token expired wait for one refresh and fail with it, within
/// their timeout; they do not each try again in turn.
#[test]
fn item6_a_failed_refresh_fails_the_calls_waiting_for_it_within_their_timeout() {
    let server = OAuthServer::start_with(&["--refresh-delay", "2"]);
    let setup =
        Setup::new(json!({"secure": {"url": format!("{}/mcp", server.base), "timeout": 5}}));
    login(&setup, "secure");
    let mut client = serve(&setup);
    let reply = execute(&mut client, "secure__echo", json!({"text": "warm"}));
    assert!(common::text_of(&reply).contains("echo: warm"), "{reply}");
    server.post("/fail-refresh");
    let before = server.stats()["refresh_requests"].as_u64().unwrap();
    // The access token (2 s) has aged out.
    std::thread::sleep(Duration::from_millis(2500));
    let sent = Instant::now();
    let ids: Vec<Value> = (0..6u64).map(|i| json!(9000 + i)).collect();
    for id in &ids {
        client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "zen_execute", "arguments": {"mode": "secure__echo",
            "request": {"text": "in the storm"}}}}));
    }
    let replies: Vec<(Duration, Value)> = ids
        .iter()
        .map(|id| {
            let reply = client.wait_for(|m| &m["id"] == id && m.get("method").is_none());
            (sent.elapsed(), reply)
        })
        .collect();
    let refreshes = server.stats()["refresh_requests"].as_u64().unwrap() - before;
    let waits: Vec<Duration> = replies.iter().map(|(waited, _)| *waited).collect();
    assert!(
        refreshes <= 2,
        "{refreshes} refresh requests for one expiry; the calls ended after {waits:?}"
    );
    for (waited, reply) in &replies {
        // The timeout (5 s) bounds the whole call; 2 s more for a loaded machine.
        assert!(
            *waited < Duration::from_secs(7),
            "a call ended after {waited:?}: {reply}"
        );
        let text = common::text_of(&reply["result"]);
        assert!(reply["result"]["isError"] == true, "{reply}");
        assert!(text.contains("renewing its access token failed"), "{reply}");
    }
    client.finish();
}

/// Issue 45 item 7: zenmode's own discovery fallback (a server whose
/// metadata names an issuer under a path of its origin) reads at most
/// 1 MiB of metadata, as rmcp does; a 2 MiB document is refused.
#[test]
fn item7_the_discovery_fallback_refuses_metadata_over_one_mebibyte() {
    let server = OAuthServer::start_with(&["--tenant-issuer"]);
    let setup = Setup::new(json!({"secure": {"url": format!("{}/mcp", server.base)}}));
    let mut login = setup
        .command(&["upstream", "login", "secure", "--no-browser"])
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    let stderr = BufReader::new(login.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut said = String::new();
    while let Ok(line) = received.recv_timeout(Duration::from_secs(60)) {
        if line.trim_start().starts_with("http://") {
            let _ = login.kill();
            let _ = login.wait();
            panic!("the 2 MiB metadata was taken and sign-in began:\n{said}{line}");
        }
        said.push_str(&line);
        said.push('\n');
    }
    let status = login.wait().unwrap();
    assert!(!status.success(), "{said}");
    assert!(said.contains("over its limit of 1048576 bytes"), "{said}");
    assert!(
        server.stats()["issued"].as_array().unwrap().is_empty(),
        "nothing was issued"
    );
}

/// Issue 45 item 13: a token directory that is a symbolic link (to a
/// shared directory with the sticky bit, say) is not zenmode's: saving
/// tokens leaves its mode alone, says why, and the token file is still
/// owner-only.
#[cfg(unix)]
#[test]
fn item13_a_linked_token_directory_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let server = OAuthServer::start();
    let setup = Setup::new(json!({"machine": {
        "url": format!("{}/mcp", server.base),
        "oauth": {"client_id": "machine", "client_secret": MACHINE_SECRET, "grant": "client_credentials"}
    }}));
    let shared = setup.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::create_dir_all(setup.path("config")).unwrap();
    std::os::unix::fs::symlink(&shared, setup.path("config").join("oauth")).unwrap();
    let output = setup
        .command(&["upstream", "login", "machine"])
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "the linked directory's mode changed");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    let file = std::fs::read_dir(&shared)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "json"))
        .expect("the token file is in the linked directory");
    assert_eq!(mode_of(&file), 0o600);
}

/// Issue 45 item 15: OAuth refusals on a running server say what happened
/// and do not count as crashes: a scope the step-ups did not get is
/// `insufficient_scope` (and the next call runs at once, no crash
/// backoff); a refresh token the server no longer takes is `needs_sign_in`,
/// which `zenmode status` shows too.
#[test]
fn item15_oauth_refusals_are_named_and_are_not_crashes() {
    let server = OAuthServer::start();
    let setup = Setup::new(json!({
        "secure": {"url": format!("{}/mcp", server.base)},
        "machine": {
            "url": format!("{}/mcp", server.base),
            "oauth": {"client_id": "machine", "client_secret": MACHINE_SECRET, "grant": "client_credentials"}
        }
    }));
    login(&setup, "secure");
    let mut client = serve(&setup);
    for _ in 0..3 {
        let reply = execute(&mut client, "machine__admin", json!({}));
        let text = common::text_of(&reply);
        assert!(reply["isError"] == true, "{reply}");
        assert!(text.contains("insufficient scope"), "{reply}");
        assert!(text.contains(r#"wants \"admin\""#), "{reply}");
        assert!(!text.contains("stopped during the call"), "{reply}");
    }
    let reply = execute(&mut client, "machine__echo", json!({"text": "still here"}));
    assert!(
        common::text_of(&reply).contains("echo: still here"),
        "no crash backoff: {reply}"
    );

    let reply = execute(&mut client, "secure__echo", json!({"text": "signed in"}));
    assert!(
        common::text_of(&reply).contains("echo: signed in"),
        "{reply}"
    );
    server.post("/revoke-refresh");
    // The access token (2 s) has aged out; its refresh is refused.
    std::thread::sleep(Duration::from_millis(2500));
    for _ in 0..2 {
        let reply = execute(&mut client, "secure__echo", json!({"text": "lost"}));
        let text = common::text_of(&reply);
        assert!(text.contains("needs sign-in"), "{reply}");
        assert!(text.contains("zenmode upstream login secure"), "{reply}");
        assert!(!text.contains("stopped during the call"), "{reply}");
        assert!(!text.contains("retries it in"), "{reply}");
    }
    let output = setup
        .command(&["status", "--json"])
        .env("ZEN_CONFIG_DIR", setup.path("config"))
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["server"] == "secure")
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["state"], "needs sign-in", "{status}");

    // Signing in again while it runs: the next call works, no restart.
    login(&setup, "secure");
    let reply = execute(&mut client, "secure__echo", json!({"text": "back"}));
    assert!(common::text_of(&reply).contains("echo: back"), "{reply}");
    client.finish();
}
