//! The test command (`.ci/run`) runs every process under a HOME of its own
//! (scripts/test_home.sh), so it passes on a machine where zenmode is set
//! up and in use, and leaves that setup as it was.

mod common;

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A user's HOME with zenmode set up: an upstreams file whose server makes
/// `modes check` fail (its tools carry no examples), in the default place
/// and in the one `ZEN_CONFIG_DIR` names, and Claude Code's file.
fn set_up_home(home: &Path) -> Vec<std::path::PathBuf> {
    let server = repo().join("tests/upstreams/fault_server.py");
    let upstreams = serde_json::json!({"mcpServers": {"fault": {
        "command": "python3", "args": [server]
    }}})
    .to_string();
    let mut planted = Vec::new();
    for relative in [
        ".config/zenmode/upstreams.json",
        "zen-config/upstreams.json",
        ".claude.json",
    ] {
        let file = home.join(relative);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &upstreams).unwrap();
        planted.push(file);
    }
    planted
}

fn run(command: &mut Command) -> (bool, String) {
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn the_test_command_ignores_a_set_up_zenmode_in_home() {
    let user = tempfile::tempdir().unwrap();
    set_up_home(user.path());
    let binary = std::fs::canonicalize(common::binary()).unwrap();
    let with_users_home = |command: &mut Command| {
        command
            .env("HOME", user.path())
            .env("ZEN_CONFIG_DIR", user.path().join("zen-config"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("RUSTUP_HOME")
            .env_remove("CARGO_HOME")
            .env("RUST_LOG", "error")
            .current_dir(repo())
            .stdin(std::process::Stdio::null());
    };

    // The plant is real: without the switch, the user's setup breaks the check.
    let mut plain = Command::new(&binary);
    plain.args(["modes", "check"]);
    with_users_home(&mut plain);
    let (ok, text) = run(&mut plain);
    assert!(!ok && text.contains("failed"), "{text}");

    // As the test command runs it.
    let isolated = user.path().join("isolated");
    let before = tree(user.path(), &isolated);
    let mut switched = Command::new("bash");
    switched
        .arg("-c")
        .arg(
            r#". scripts/install_cache.sh && . scripts/test_home.sh && test_home_enter "$1" \
               && "$2" modes check && env"#,
        )
        .arg("_")
        .arg(&isolated)
        .arg(&binary);
    with_users_home(&mut switched);
    let (ok, text) = run(&mut switched);
    assert!(ok, "{text}");
    assert!(text.contains(", 0 failed"), "{text}");
    let env: Vec<&str> = text.lines().collect();
    assert!(
        env.contains(&format!("HOME={}", isolated.display()).as_str()),
        "{text}"
    );
    assert!(
        !env.iter().any(|l| l.starts_with("ZEN_CONFIG_DIR=")),
        "{text}"
    );
    // The tools keep their real homes (derived from the user's HOME).
    assert!(
        env.contains(&format!("RUSTUP_HOME={}/.rustup", user.path().display()).as_str()),
        "{text}"
    );

    // Nothing of the user's setup changed, and nothing was added beside it.
    assert_eq!(tree(user.path(), &isolated), before);
}

/// Every file under `root` but `skip`, with its bytes.
fn tree(root: &Path, skip: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path == skip {
                continue;
            }
            if path.is_dir() {
                folders.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

/// Under `.ci/run` (which sets ZEN_REQUIRE_TEST_HOME), this very suite runs
/// with the HOME test_home_enter made, not the user's.
#[test]
fn the_suite_runs_under_the_test_home() {
    if std::env::var("ZEN_REQUIRE_TEST_HOME").as_deref() != Ok("1") {
        eprintln!("skipping: not run by .ci/run");
        return;
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let marked = std::env::var("ZEN_TEST_HOME").unwrap_or_default();
    assert!(!marked.is_empty(), "the suite runs without test_home_enter");
    assert_eq!(home, marked);
    for name in [
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
    ] {
        let dir = std::env::var(name).unwrap_or_default();
        assert!(dir.starts_with(&home), "{name}={dir} is outside {home}");
    }
}
