//! Hardening, second round, at the gateway: upstreams that flood stderr,
//! write bytes that are not UTF-8, send replies over the limit, fail with
//! huge messages or echo their own credentials. Each test is named after
//! the defect it guards against (the hardening issue's item numbers).

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    thread,
    time::{Duration, Instant},
};

use common::{
    gateway::{Setup, execute, fault_server},
    text_of,
};
use serde_json::{Value, json};

fn faulty(env: Value, extra: &[&str]) -> Value {
    let mut args = vec![json!(fault_server()), json!("--hostile")];
    args.extend(extra.iter().map(|a| json!(a)));
    json!({"command": "python3", "args": args, "env": env, "timeout": 60})
}

/// A field of `/proc/PID/status`, in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn item4_an_endless_stderr_line_keeps_zenmode_memory_bounded() {
    let setup = Setup::new(json!({"noisy": faulty(json!({}), &[])}));
    let mut client = setup.serve(&[]);
    let pid = client.pid().unwrap();
    // 150 MB of stderr without a newline, then the reply.
    let result = execute(
        &mut client,
        "noisy__stderr",
        json!({"hex": "61", "repeat": 150_000_000, "newline": true}),
    );
    assert_ne!(result["isError"], true, "{result}");
    assert!(
        text_of(&result).contains("wrote 150000000 bytes"),
        "{result}"
    );
    let peak_mb = status_kb(pid, "VmHWM:") / 1024;
    eprintln!("zenmode's peak resident set after 150 MB of stderr: {peak_mb} MB");
    assert!(peak_mb < 100, "peak {peak_mb} MB");
    client.finish();
    let log = setup.log_text();
    assert!(log.contains("bytes cut]"), "the cut is counted: {log}");
}

#[test]
fn item5_invalid_utf8_on_stderr_never_stops_zenmode_draining_it() {
    let setup = Setup::new(json!({"noisy": faulty(json!({}), &[])}));
    let mut client = setup.serve(&[]);
    let bad = execute(
        &mut client,
        "noisy__stderr",
        json!({"hex": "ff fe 62 61 64".replace(' ', ""), "repeat": 1}),
    );
    assert_ne!(bad["isError"], true, "{bad}");
    // More than a pipe holds: with stderr unread or closed this call would
    // hang or kill the server.
    for _ in 0..3 {
        let more = execute(
            &mut client,
            "noisy__stderr",
            json!({"hex": "6f6b0a", "repeat": 100_000}),
        );
        assert_ne!(more["isError"], true, "{more}");
        assert!(text_of(&more).contains("wrote 300000 bytes"), "{more}");
    }
    client.finish();
    assert!(
        setup.log_text().contains("\u{fffd}\u{fffd}bad"),
        "replaced, not dropped"
    );
}

#[test]
fn item6_a_reply_over_the_limit_fails_its_call_at_once_with_both_sizes() {
    let mut entry = faulty(json!({}), &[]);
    entry["max_reply_bytes"] = json!(1_000_000);
    let setup = Setup::new(json!({"big": entry}));
    // The 900 KB reply must come back whole, not as a result handle.
    let mut client = setup.serve(&["--result-handles", "off"]);
    let fits = execute(&mut client, "big__big", json!({"bytes": 900_000}));
    assert_eq!(text_of(&fits).len(), 900_000);
    let started = Instant::now();
    let too_big = execute(&mut client, "big__big", json!({"bytes": 1_200_000}));
    let waited = started.elapsed();
    assert_eq!(too_big["isError"], true);
    let error = &too_big["structuredContent"];
    assert_eq!(error["error"], "upstream_reply_too_large", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("1000000") && message.contains("max_reply_bytes"),
        "{message}"
    );
    assert!(
        waited < Duration::from_secs(20),
        "answered after {waited:?}"
    );
    // The connection is still good.
    let after = execute(&mut client, "big__echo", json!({"text": "still here"}));
    assert_eq!(text_of(&after), "still here");
    client.finish();
}

#[test]
fn item6_a_tools_list_over_the_default_16_mib_is_refused_at_once() {
    let setup = Setup::new(json!({"huge": faulty(json!({}), &["--big-tools", "17000000"])}));
    let started = Instant::now();
    let (code, out, err) = setup.run(&["upstream", "refresh", "huge"]);
    let waited = started.elapsed();
    assert_ne!(code, 0);
    assert!(
        out.contains("sent a reply of 17") && out.contains("over its limit of 16777216 bytes"),
        "{out}{err}"
    );
    assert!(
        waited < Duration::from_secs(30),
        "answered after {waited:?}"
    );
}

/// An HTTP "MCP server" that answers every request 401 and echoes the
/// request's headers in the body, as some servers do.
fn echoing_401_server() -> (String, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let handle = thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = std::io::Read::read_exact(&mut reader, &mut body);
            let text = format!("unauthorized; you sent:\n{head}");
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (format!("http://{address}"), handle)
}

#[test]
fn item1_and_7_secrets_echoed_by_an_http_upstream_and_url_credentials_never_reach_the_log() {
    let (base, _server) = echoing_401_server();
    let url = base.replace("http://", "http://alice:pw-secret-99@") + "/mcp?api_key=qk-secret-77";
    let setup = Setup::new(json!({"remote": {
        "type": "http", "url": url, "timeout": 10,
        "headers": {"Authorization": "Bearer hdr-secret-55", "X-Api-Key": "k9"}}}));
    let mut command = setup.command(&["upstream", "list"]);
    // The default filter, as a user has it.
    command.env_remove("RUST_LOG");
    let output = command.stdin(std::process::Stdio::null()).output().unwrap();
    let listed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    let mut command = setup.command(&["upstream", "refresh", "remote"]);
    command.env_remove("RUST_LOG");
    let output = command.stdin(std::process::Stdio::null()).output().unwrap();
    let refreshed = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        refreshed.contains("401"),
        "the failure is reported: {refreshed}"
    );
    for text in [&listed, &refreshed] {
        for secret in [
            "pw-secret-99",
            "qk-secret-77",
            "hdr-secret-55",
            "alice",
            " k9",
        ] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
    assert!(listed.contains("[redacted]@127.0.0.1"), "{listed}");
}

#[test]
fn item11_and_12_an_upstream_echoing_its_env_secret_in_an_error_result_is_redacted() {
    let setup = Setup::new(json!({"leaky": faulty(
        json!({"SERVICE_API_KEY": "zk-live-secret-4242", "PIN_TOKEN": "ab12", "DEBUG": "1"}),
        &["--log-env", "PIN_TOKEN"])}));
    let mut client = setup.serve(&[]);
    let long = execute(
        &mut client,
        "leaky__env_error",
        json!({"name": "SERVICE_API_KEY"}),
    );
    assert_eq!(long["isError"], true);
    let text = long.to_string();
    assert!(!text.contains("zk-live-secret-4242"), "{text}");
    assert!(text.contains("the key [redacted] was refused"), "{text}");
    let short = execute(
        &mut client,
        "leaky__env_error",
        json!({"name": "PIN_TOKEN"}),
    );
    let text = short.to_string();
    assert!(!text.contains("ab12"), "a short credential leaked: {text}");
    // A short value under a name that is not a credential stays: hiding
    // every "1" would mangle messages.
    let plain = execute(&mut client, "leaky__env_error", json!({"name": "DEBUG"}));
    assert!(text_of(&plain).contains("the key 1 was refused"), "{plain}");
    client.finish();
    let log = setup.log_text();
    assert!(log.contains("PIN_TOKEN=[redacted]"), "{log}");
    assert!(!log.contains("ab12"), "{log}");
}

#[test]
fn item13_a_huge_upstream_error_message_is_capped_once() {
    let setup = Setup::new(json!({"loud": faulty(json!({}), &[])}));
    let mut client = setup.serve(&[]);
    let result = execute(&mut client, "loud__fail", json!({"bytes": 2_000_000}));
    assert_eq!(result["isError"], true);
    let size = result.to_string().len();
    assert!(size < 10_000, "{size} bytes relayed");
    assert!(text_of(&result).contains("more characters cut"), "{result}");
    client.finish();
}

#[test]
fn a_flood_of_short_stderr_lines_is_paced_not_logged_line_by_line() {
    let setup = Setup::new(json!({"noisy": faulty(json!({}), &[])}));
    let mut client = setup.serve(&[]);
    // A million lines: each would cost a log event.
    let started = Instant::now();
    let result = execute(
        &mut client,
        "noisy__stderr",
        json!({"hex": "610a", "repeat": 1_000_000, "newline": false}),
    );
    assert_ne!(result["isError"], true, "{result}");
    let ping = client.request("ping", Value::Null);
    assert!(ping.get("result").is_some(), "{ping}");
    eprintln!("a million stderr lines answered in {:?}", started.elapsed());
    client.finish();
    let log = setup.log_text();
    assert!(
        log.contains("stderr lines left out"),
        "the flood is counted"
    );
    let logged = log
        .lines()
        .filter(|l| l.ends_with("[noisy] a server=\"noisy\""))
        .count();
    assert!(
        logged < 1_000,
        "{logged} lines of the flood were logged one by one"
    );
}
