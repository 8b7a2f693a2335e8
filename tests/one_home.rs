//! Each fact has one home: a rule written in two places drifts (the client
//! tables, the directories and the "did you mean" rule once disagreed).
//! These checks read the source and fail when a fact that lives in
//! `src/platform/` is spelled out anywhere else.

use std::{
    fs,
    path::{Path, PathBuf},
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each source file (relative to `src/`) with its code: comments and test
/// modules left out (tests may spell things out to check them).
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(root().join("src"))
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs::read_to_string(&path).unwrap();
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap()
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            (relative, code)
        })
        .collect()
}

/// Files other than `home` whose code matches `found`.
fn elsewhere(home: &[&str], found: impl Fn(&str) -> bool) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(file, code)| !home.contains(&file.as_str()) && found(code))
        .map(|(file, _)| file)
        .collect()
}

/// A `"ZEN_..."` string literal: a variable named outside its home.
fn names_a_zen_variable(code: &str) -> bool {
    code.match_indices("\"ZEN_").any(|(at, _)| {
        let rest = &code[at + 1..];
        let end = rest.find('"').unwrap_or(rest.len());
        rest[..end]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

#[test]
fn every_zen_variable_is_named_in_settings_only() {
    let found = elsewhere(&["platform/settings.rs"], names_a_zen_variable);
    assert!(
        found.is_empty(),
        "name ZEN_ variables through platform::settings: {found:?}"
    );
}

#[test]
fn zenmode_directories_are_resolved_in_dirs_only() {
    let found = elsewhere(&["platform/dirs.rs", "platform/client_files.rs"], |code| {
        [
            "dirs::config_dir()",
            "dirs::state_dir()",
            "dirs::cache_dir()",
            "dirs::data_local_dir",
            "dirs::home_dir",
        ]
        .iter()
        .any(|call| {
            code.match_indices(call)
                .any(|(at, _)| !code[..at].ends_with("platform::"))
        })
    });
    assert!(
        found.is_empty(),
        "resolve directories through platform::dirs: {found:?}"
    );
}

#[test]
fn owner_only_modes_are_written_in_private_file_only() {
    let found = elsewhere(&["platform/private_file.rs"], |code| {
        code.contains("0o600") || code.contains("0o700")
    });
    assert!(
        found.is_empty(),
        "write owner-only files through platform::private_file: {found:?}"
    );
}

#[test]
fn whether_a_process_runs_is_asked_in_process_only() {
    let found = elsewhere(&["platform/process.rs"], |code| {
        code.contains("libc::kill(")
    });
    assert!(
        found.is_empty(),
        "use platform::process::is_alive: {found:?}"
    );
}

#[test]
fn client_files_are_listed_in_client_files_only() {
    let found = elsewhere(&["platform/client_files.rs"], |code| {
        [
            "claude_desktop_config.json",
            "\".claude.json\"",
            ".cursor/mcp.json",
            "Code/User/mcp.json",
            "mcp_config.json",
        ]
        .iter()
        .any(|file| code.contains(file))
    });
    assert!(
        found.is_empty(),
        "list client files in platform::client_files: {found:?}"
    );
}

/// The checks themselves: each would see what it looks for.
#[test]
fn the_checks_find_what_they_look_for() {
    assert!(names_a_zen_variable("let x = env(\"ZEN_STORE\");"));
    assert!(!names_a_zen_variable("bail!(\"ZEN_STORE must be set\")"));
    assert!(!names_a_zen_variable("settings::STORE"));
    let found = elsewhere(&[], |code| code.contains("0o600"));
    assert_eq!(
        found,
        ["platform/private_file.rs"],
        "the home itself is seen"
    );
}
