//! An entry that would run zenmode itself: a gateway fronting itself spawns
//! itself without end, so such an entry is skipped with a warning (see
//! [`runs_zenmode`] for the rule).

use std::path::{Path, PathBuf};

use super::entry::{Transport, UpstreamConfig};

/// The line that says an entry was left out because it runs zenmode.
/// The name zenmode gives itself in the MCP handshake (`serverInfo.name`):
/// a server that answers with it is zenmode, whatever its entry looks like
/// (an HTTP URL, a copy of the binary under another name).
pub const SERVER_NAME: &str = "zenmode";

/// Why a server that completed the handshake is zenmode, if it is.
pub fn answers_as_zenmode(server_info_name: &str) -> Option<String> {
    (server_info_name == SERVER_NAME).then(|| format!("its serverInfo name is {SERVER_NAME:?}"))
}

pub fn self_skip_message(name: &str, why: &str) -> String {
    format!("server {name:?} skipped: it runs zenmode itself ({why}); zenmode never fronts itself")
}

/// Why an entry runs zenmode itself, if it does. The rule, in order:
///
/// 1. its `command` is zenmode: a file named `zenmode` (or `zenmode.exe`)
///    anywhere, or the very binary running now (same canonical path, found
///    on `PATH` when the command has no directory);
/// 2. it reaches zenmode through a wrapper (`npx`, `sh -c`, `env`,
///    `cargo run`, ...): one word of its arguments (arguments are split at
///    white space, so a `sh -c` script counts) names zenmode as in 1, or is
///    an npm package spec `zenmode` / `zenmode@VERSION`, and a later word
///    is `serve` or `connect` (the bridge to the shared instance).
///
/// Anything else (a server whose *name* mentions zenmode, a script that
/// calls `zenmode upstream list`) is not zenmode serving.
pub fn runs_zenmode(config: &UpstreamConfig) -> Option<String> {
    let Transport::Stdio { command, args, .. } = &config.transport else {
        return None;
    };
    if names_zenmode(command, true) {
        return Some(format!("its command is {command:?}"));
    }
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let at = words
        .iter()
        .position(|word| names_zenmode(word, false) || is_zenmode_package(word))?;
    let serving = words[at + 1..]
        .iter()
        .find(|word| matches!(**word, "serve" | "connect"))?;
    Some(format!("{command:?} runs {:?} {serving}", words[at]))
}

/// `word` is a path or program name that is zenmode; a bare name is looked
/// up on `PATH` only when `search_path` (for the command, not every word).
fn names_zenmode(word: &str, search_path: bool) -> bool {
    let word = word.trim_matches(|c| c == '"' || c == '\'' || c == ';');
    let file = Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if file == "zenmode" || file.eq_ignore_ascii_case("zenmode.exe") {
        return true;
    }
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return false;
    };
    let found = if word.contains(std::path::MAIN_SEPARATOR) || word.contains('/') {
        Some(PathBuf::from(word))
    } else if !search_path {
        None
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(word))
                .find(|candidate| candidate.is_file())
        })
    };
    found
        .and_then(|path| std::fs::canonicalize(path).ok())
        .is_some_and(|path| path == me)
}

/// An npm package spec for zenmode (`npx zenmode serve`).
fn is_zenmode_package(word: &str) -> bool {
    word == "zenmode" || word.starts_with("zenmode@")
}
