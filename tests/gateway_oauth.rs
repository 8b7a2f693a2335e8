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
    let mut login = setup
        .command(&["upstream", "login", "secure", "--no-browser"])
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
