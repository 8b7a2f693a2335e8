//! The built binary over TCP: independent concurrent sessions and the remote guard.

mod common;

use std::{
    io::{BufRead, BufReader},
    process::Stdio,
    thread,
    time::Duration,
};

use common::{Client, TcpServer, structured, zenmode};
use serde_json::{Value, json};

#[test]
fn concurrent_connections_are_independent_sessions() {
    let server = TcpServer::start(&[]);
    let mut first = Client::connect(&server.address);
    let mut second = Client::connect(&server.address);

    // Interleave: the second session initializes while the first is mid-conversation.
    first.initialize();
    second.initialize();
    assert_eq!(first.tool_names(), ["zen_select_mode", "zen_execute"]);

    // Bad input on one connection does not disturb the other.
    first.send_raw("{{{");
    let parse_error = first.wait_for(|m| m["error"]["code"] == -32700);
    assert_eq!(parse_error["id"], Value::Null);
    let reply = structured(
        &second.tool(
            "zen_execute",
            json!({"mode": "challenge", "request": {"prompt": "a"}}),
        ),
        false,
    );
    assert_eq!(reply["original_statement"], "a");

    // Many parallel clients, each with its own handshake.
    let address = server.address.clone();
    let workers: Vec<_> = (0..8)
        .map(|n| {
            let address = address.clone();
            thread::spawn(move || {
                let mut client = Client::connect(&address);
                client.initialize();
                let reply = structured(
                    &client.tool(
                        "zen_execute",
                        json!({"mode": "challenge", "request": {"prompt": format!("claim {n}")}}),
                    ),
                    false,
                );
                assert_eq!(reply["original_statement"], format!("claim {n}"));
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker succeeded");
    }
    assert_eq!(first.tool_names(), ["zen_select_mode", "zen_execute"]);
}

#[test]
fn a_closed_connection_leaves_the_server_running() {
    let server = TcpServer::start(&[]);
    {
        let mut gone = Client::connect(&server.address);
        gone.initialize();
    }
    let mut client = Client::connect(&server.address);
    client.initialize();
    assert_eq!(client.tool_names().len(), 2);
}

#[cfg(unix)]
#[test]
fn sigterm_shuts_the_listener_down_cleanly() {
    let mut server = TcpServer::start(&[]);
    let mut client = Client::connect(&server.address);
    client.initialize();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..100 {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status:?}");
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    panic!("server did not exit after SIGTERM");
}

#[test]
fn non_loopback_needs_allow_remote() {
    let output = zenmode(&["serve", "--transport", "tcp", "--listen", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
}

/// With stderr closed after start-up, bad input and SIGTERM still behave:
/// logging can neither crash the server nor keep it from stopping.
#[cfg(unix)]
#[test]
fn a_closed_stderr_neither_crashes_nor_keeps_a_tcp_server_alive() {
    let mut child = zenmode(&["serve", "--transport", "tcp", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "zenmode=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let address = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no address line");
        if let Some(address) = line.strip_prefix("zenmode: listening on ") {
            break address.trim().to_owned();
        }
    };
    drop(stderr);
    let mut client = Client::connect(&address);
    for _ in 0..50 {
        client.send_raw("not json");
        assert_eq!(client.next_message()["error"]["code"], -32700);
    }
    client.initialize();
    assert_eq!(client.tool_names().len(), 2);
    // SAFETY: kill(2) on our own child's pid with a standard signal.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still running after SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}
