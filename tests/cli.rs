//! The command line: select and exec run what the tools run; modes subcommands.

mod common;

use std::process::{Output, Stdio};

use common::zenmode;
use serde_json::{Value, json};

fn run(args: &[&str]) -> Output {
    zenmode(args).stdin(Stdio::null()).output().unwrap()
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {output:?}"))
}

#[test]
fn select_json_is_the_tool_reply() {
    let task = "write unit tests for the date parser";
    let output = run(&["select", task, "--json", "--top", "2"]);
    assert!(output.status.success());
    let printed = stdout_json(&output);

    let mut client = common::Client::spawn(&["serve"]);
    client.initialize();
    let tool = client.tool(
        "zen_select_mode",
        json!({"task_description": task, "top_k": 2}),
    );
    assert_eq!(printed, tool["structuredContent"]);
    assert!(printed["alternatives"].as_array().unwrap().len() <= 1);
}

#[test]
fn select_prints_a_readable_summary() {
    let output = run(&["select", "plan the database migration step by step"]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("confidence"), "{text}");
    assert!(text.contains("next: "), "{text}");
}

#[test]
fn exec_runs_a_mode_and_reports_errors_by_exit_code() {
    let ok = run(&[
        "exec",
        "challenge",
        "--request",
        r#"{"prompt":"caches are free"}"#,
    ]);
    assert!(ok.status.success());
    assert_eq!(stdout_json(&ok)["status"], "challenge_accepted");

    let invalid = run(&["exec", "challenge", "--request", "{}"]);
    assert_eq!(invalid.status.code(), Some(1));
    assert_eq!(stdout_json(&invalid)["error"], "invalid_request");

    let unknown = run(&["exec", "chalenge"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(stdout_json(&unknown)["closest"][0], "challenge");

    let not_json = run(&["exec", "challenge", "--request", "{oops"]);
    assert_eq!(not_json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_json.stderr).contains("--request"));
}

#[test]
fn modes_subcommands() {
    let list = run(&["modes", "list"]);
    assert!(list.status.success());
    let text = String::from_utf8(list.stdout).unwrap();
    assert_eq!(text.lines().count(), 19);
    assert!(
        text.lines()
            .any(|l| l.starts_with("planner") && l.contains("ready"))
    );

    let show = run(&["modes", "show", "tracer"]);
    let text = String::from_utf8(show.stdout).unwrap();
    assert!(
        text.contains("trace_mode") && text.contains("example request"),
        "{text}"
    );

    let missing = run(&["modes", "show", "tracr"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("tracer"));

    let check = run(&["modes", "check"]);
    assert!(check.status.success());
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("19 modes checked, 19 passed, 0 failed")
    );
}

#[test]
fn modes_check_fails_on_a_broken_example() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = json!({
        "name": "bad_example", "title": "Bad", "summary": "Example does not validate",
        "description": "Used by tests.", "category": "utility", "executor": "version",
        "examples": ["anything"], "example_request": {"unexpected": 1},
        "schema": {"type": "object", "properties": {}, "additionalProperties": false}
    });
    std::fs::write(dir.path().join("bad_example.json"), manifest.to_string()).unwrap();
    let output = run(&[
        "modes",
        "check",
        "--modes-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("FAIL  bad_example") && text.contains("unexpected"),
        "{text}"
    );
}

#[test]
fn help_and_version() {
    let version = run(&["--version"]);
    let version = String::from_utf8_lossy(&version.stdout);
    // The version, then the commit it was built from: one of this clone's.
    let (name_and_version, commit) = version
        .trim()
        .split_once(" (")
        .unwrap_or_else(|| panic!("no commit in {version}"));
    assert_eq!(
        name_and_version,
        concat!("zenmode ", env!("CARGO_PKG_VERSION"))
    );
    let commit = commit.strip_suffix(')').expect("the commit in parentheses");
    let in_a_clone = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".git")
        .exists();
    if in_a_clone {
        assert!(
            commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{version}"
        );
        let known = std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(known.success(), "{commit} is not a commit of this clone");
    }
    for args in [
        &["--help"][..],
        &["serve", "--help"],
        &["modes", "--help"],
        &["tokens", "--help"],
    ] {
        let help = run(args);
        assert!(help.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&help.stdout).contains("Usage"),
            "{args:?}"
        );
    }
    let serve_help = String::from_utf8(run(&["serve", "--help"]).stdout).unwrap();
    for flag in [
        "--full",
        "--pin",
        "--transport",
        "--listen",
        "--allow-remote",
        "--max-message-bytes",
    ] {
        assert!(serve_help.contains(flag), "serve --help lacks {flag}");
    }
}

#[test]
fn step_numbers_beyond_any_real_task_are_refused() {
    for mode in ["planner", "thinkdeep"] {
        let mut request = json!({"step": "s", "step_number": u64::MAX, "total_steps": 3,
                                 "next_step_required": true});
        if mode == "thinkdeep" {
            request["findings"] = json!("f");
        }
        let output = run(&["exec", mode, "--request", &request.to_string()]);
        assert_eq!(output.status.code(), Some(1), "{mode}: {output:?}");
        let printed = stdout_json(&output);
        assert_eq!(printed["error"], "too_many_steps", "{mode}: {printed}");
    }
}

/// What `zenmode tokens --count-stdin` prints for `text`.
#[cfg(feature = "tokens")]
fn count_stdin(text: &str) -> Value {
    use std::io::Write;
    let mut child = zenmode(&["tokens", "--count-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    stdout_json(&output)
}

#[cfg(feature = "tokens")]
#[test]
fn tokens_count_stdin_counts_real_tokens() {
    let counts = count_stdin("hello world, hello tokens");
    assert_eq!(counts["bytes"], 25);
    let o200k = counts["o200k"].as_u64().unwrap();
    assert!((4..=8).contains(&o200k), "{counts}");
}

/// `--count-lines` counts each line's text as `--count-stdin` counts the
/// same text alone, answers a line before the next arrives, and stops
/// with a clear error at a line that is not a JSON string.
#[cfg(feature = "tokens")]
#[test]
fn tokens_count_lines_counts_each_text_alone() {
    use std::io::{BufRead, BufReader, Write};
    let texts = [
        "hello world, hello tokens",
        "{\"tools\": [\"a\", \"b\"]}\nsecond line",
    ];
    let alone: Vec<Value> = texts.iter().map(|text| count_stdin(text)).collect();
    let mut child = zenmode(&["tokens", "--count-lines"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for (text, expected) in texts.iter().zip(&alone) {
        writeln!(stdin, "{}", serde_json::to_string(text).unwrap()).unwrap();
        stdin.flush().unwrap();
        // Read before writing the next line: each answer comes at once.
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let counted: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(&counted, expected, "{text}");
    }
    writeln!(stdin, "not json").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing is printed for the bad line");
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 3 of standard input is not a JSON string"),
        "{stderr}"
    );
}

/// A reader that stops early (`| head`) ends a one-shot command quietly:
/// no panic message, no error, whatever the command was printing.
#[cfg(unix)]
#[test]
fn a_closed_stdout_pipe_ends_one_shot_commands_quietly() {
    let binary = env!("CARGO_BIN_EXE_zenmode");
    // The union catalog lists 1,155 tools: far more than a pipe buffers,
    // so the writer is still writing when `head` goes away.
    let union = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/catalogs/union_all.json"
    );
    let script = format!(
        "'{binary}' --catalog '{union}' modes list | head -c 10 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\""
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("ZEN_STORE", "memory:")
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 141 = killed by SIGPIPE, the Unix convention for `| head`.
    assert!(stdout.contains("status=141"), "{stdout} {stderr}");
}

/// `--embedding-model` never falls back silently: a build without the
/// `transformer` feature says so, and a directory without the model is
/// named in the error.
#[test]
fn an_embedding_model_that_cannot_run_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&[
        "select",
        "--embedding-model",
        dir.path().to_str().unwrap(),
        "review my code",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--embedding-model"), "{stderr}");
    if cfg!(feature = "transformer") {
        assert!(stderr.contains("config.json"), "{stderr}");
    } else {
        assert!(
            stderr.contains("without the `transformer` feature"),
            "{stderr}"
        );
    }
    assert!(output.stdout.is_empty());
}

/// `zenmode select` over a catalog without example phrasings (so the
/// meaning signal runs), with `data` as XDG_DATA_HOME and no model named.
fn select_with_data_home(data: &std::path::Path) -> Output {
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/foreign/metatool/catalog.json"
    );
    zenmode(&[
        "select",
        "--no-builtin-modes",
        "--catalog",
        catalog,
        "find me a recipe for dinner tonight",
    ])
    .env_remove("ZEN_EMBEDDING_MODEL")
    .env("XDG_DATA_HOME", data)
    .env("ZEN_CACHE_DIR", data.join("cache"))
    .env("RUST_LOG", "zenmode=info")
    .output()
    .unwrap()
}

#[test]
fn without_an_installed_model_the_table_answers_quietly() {
    let data = tempfile::tempdir().unwrap();
    let output = select_with_data_home(data.path());
    assert!(output.status.success(), "{output:?}");
    assert!(!output.stdout.is_empty());
    // No warning or error for a default install without the weights.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );
}

#[test]
fn a_damaged_installed_model_falls_back_to_the_table_with_a_warning() {
    let data = tempfile::tempdir().unwrap();
    let model = data.path().join("zenmode/model/all-MiniLM-L6-v2");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("config.json"), "not json").unwrap();
    std::fs::write(model.join("model.safetensors"), "not weights").unwrap();
    let output = select_with_data_home(data.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    if cfg!(feature = "transformer") {
        assert!(
            output.status.success(),
            "a broken default model must not fail select: {stderr}"
        );
        assert!(stderr.contains("cannot be used"), "{stderr}");
    } else {
        // Without the model's code the directory is never looked at.
        assert!(output.status.success(), "{stderr}");
    }
    assert!(!output.stdout.is_empty());
}

#[test]
fn a_named_model_directory_must_load_unless_it_is_none() {
    let data = tempfile::tempdir().unwrap();
    let missing = data.path().join("no-model-here");
    let output = zenmode(&["select", "list files", "--embedding-model"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot load the embedding model"),
        "{stderr}"
    );
    let output = zenmode(&["select", "--embedding-model", "none", "list files"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
}

/// A flag on the command line beats its environment variable, before the
/// subcommand as after it: with `ZEN_EMBEDDING_MODEL` naming a directory
/// without the model, `--embedding-model none` still runs without one, and
/// `--upstreams` before `upstream list` reads that file, not `ZEN_UPSTREAMS`.
#[test]
fn a_flag_beats_its_environment_variable_wherever_it_is_written() {
    let data = tempfile::tempdir().unwrap();
    let missing = data.path().join("no-model-here");
    for args in [
        &["--embedding-model", "none", "select", "list files"][..],
        &["select", "--embedding-model", "none", "list files"][..],
    ] {
        let output = zenmode(args)
            .env("ZEN_EMBEDDING_MODEL", &missing)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    let output = zenmode(&["select", "list files"])
        .env("ZEN_EMBEDDING_MODEL", &missing)
        .output()
        .unwrap();
    assert!(!output.status.success(), "the variable alone is used");

    let named = data.path().join("named.json");
    std::fs::write(
        &named,
        r#"{"mcpServers": {"from-flag": {"command": "true"}}}"#,
    )
    .unwrap();
    let other = data.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"mcpServers": {"from-env": {"command": "true"}}}"#,
    )
    .unwrap();
    for args in [
        vec!["--upstreams", named.to_str().unwrap(), "upstream", "list"],
        vec!["upstream", "list", "--upstreams", named.to_str().unwrap()],
    ] {
        let output = zenmode(&args)
            .env("ZEN_UPSTREAMS", &other)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert!(stdout.contains("from-flag"), "{args:?}: {stdout}");
        assert!(!stdout.contains("from-env"), "{args:?}: {stdout}");
    }
}

/// Each subcommand's help lists the flags it uses: the catalog and store
/// flags are not in `upstream add --help`, and `serve --help` names the
/// three transports it serves.
#[test]
fn help_shows_only_the_flags_a_command_uses() {
    let help = |args: &[&str]| String::from_utf8(run(args).stdout).unwrap();
    let add = help(&["upstream", "add", "--help"]);
    assert!(add.contains("--upstreams"), "{add}");
    for flag in [
        "--store",
        "--embedding-model",
        "--catalog",
        "--modes-dir",
        "--allow-root",
    ] {
        assert!(
            !add.contains(flag),
            "upstream add --help lists {flag}:\n{add}"
        );
    }
    let status = help(&["status", "--help"]);
    assert!(
        !status.contains("--upstream-wait-secs") && !status.contains("--store"),
        "{status}"
    );
    let eval = help(&["eval", "--help"]);
    assert!(
        eval.contains("--catalog") && !eval.contains("--upstreams"),
        "{eval}"
    );
    let serve = help(&["serve", "--help"]);
    for word in ["stdio", "tcp", "http", "--store", "--catalog"] {
        assert!(serve.contains(word), "serve --help lacks {word}");
    }
    let top = help(&["--help"]);
    assert!(!top.contains("--store") && top.contains("setup"), "{top}");
}

/// The flags older command lines give before the subcommand still work,
/// and one given after it wins.
#[test]
fn catalog_flags_before_the_subcommand_still_work() {
    let union = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/catalogs/union_all.json"
    );
    let count = |args: &[&str]| {
        let output = run(args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).lines().count()
    };
    let builtin = count(&["modes", "list"]);
    let before = count(&["--catalog", union, "--no-builtin-modes", "modes", "list"]);
    let after = count(&["modes", "list", "--catalog", union, "--no-builtin-modes"]);
    assert_eq!(before, after);
    assert!(before > builtin, "{before} vs {builtin}");
    // 0 is refused: the value after the subcommand is the one checked.
    let bad = run(&[
        "--upstream-wait-secs",
        "5",
        "select",
        "--upstream-wait-secs",
        "0",
        "x",
    ]);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--upstream-wait-secs must be"), "{stderr}");
    let good = run(&[
        "--upstream-wait-secs",
        "0",
        "select",
        "--upstream-wait-secs",
        "5",
        "x",
    ]);
    assert!(good.status.success(), "{good:?}");
}

/// `serve` on a terminal says in one stderr line that it waits for a
/// client; on a pipe (as every client starts it) it says nothing of it.
#[cfg(unix)]
#[test]
fn serve_on_a_terminal_says_what_it_waits_for() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut leader, mut follower) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the given ints.
    let opened = unsafe {
        libc::openpty(
            &mut leader,
            &mut follower,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty failed");
    // SAFETY: both descriptors are open and owned by nothing else.
    let (leader, follower) =
        unsafe { (OwnedFd::from_raw_fd(leader), OwnedFd::from_raw_fd(follower)) };
    let mut child = zenmode(&["serve"])
        .stdin(Stdio::from(follower))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while stderr.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        String::from_utf8_lossy(&line).into_owned()
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !reader.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(leader);
    let line = reader.join().unwrap();
    assert!(line.contains("waiting for an MCP client"), "{line:?}");
    assert!(
        line.contains("zenmode select") && line.contains("zenmode setup"),
        "{line:?}"
    );

    let piped = zenmode(&["serve"]).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!stderr.contains("waiting for an MCP client"), "{stderr}");
}
