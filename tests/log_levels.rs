//! Normal operation logs nothing at WARN or ERROR: those levels are kept for
//! what needs a person's attention. A real filesystem server asks for the
//! client's roots as it starts, whether or not a client that offers roots is
//! attached; that is routine. Needs `tests/upstreams/install.sh` (skips with
//! a note otherwise, fails under `ZEN_REQUIRE_UPSTREAMS=1`).

mod common;

use std::path::{Path, PathBuf};

use common::{
    Client,
    gateway::{Setup, execute},
};
use serde_json::json;

fn filesystem_server() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/node_modules/.bin/mcp-server-filesystem");
    if path.exists() {
        return Some(path);
    }
    assert_ne!(
        std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref(),
        Ok("1"),
        "{} is missing: run tests/upstreams/install.sh",
        path.display()
    );
    eprintln!("skipping: {} is not installed", path.display());
    None
}

/// The lines of `log` at WARN or ERROR.
fn alarming(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
        .collect()
}

#[test]
fn a_healthy_filesystem_server_start_logs_no_warning() {
    let Some(server) = filesystem_server() else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("notes.txt"), "hello").unwrap();
    let setup = Setup::new(json!({}));

    // `upstream add` starts the server with no client attached at all.
    let mut add = setup.command(&[
        "upstream",
        "add",
        "fs",
        "--",
        server.to_str().unwrap(),
        folder.path().to_str().unwrap(),
    ]);
    add.env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null());
    let output = add.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(alarming(&stderr), Vec::<&str>::new(), "{stderr}");

    // `serve` with a client that offers no roots, at the default log level.
    let mut command = setup.command(&["serve", "--upstream-wait-secs", "60"]);
    command
        .env_remove("RUST_LOG")
        .stderr(std::fs::File::create(setup.log()).unwrap());
    let mut client = Client::spawn_keeping_stderr(command);
    client.initialize();
    let result = execute(
        &mut client,
        "fs__list_directory",
        json!({"path": folder.path()}),
    );
    assert!(result.to_string().contains("notes.txt"), "{result}");
    drop(client);
    let log = setup.log_text();
    assert_eq!(alarming(&log), Vec::<&str>::new(), "{log}");
}
