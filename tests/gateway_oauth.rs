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
