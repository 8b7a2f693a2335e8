//! `zenmode upstream import`: the MCP servers other clients already run,
//! read from their own files.
//!
//! Which files: `platform::client_files`, the table `setup` and `doctor`
//! use too. The servers are under `mcpServers`, VS Code's `servers` or
//! `mcp.servers`, and for Claude Code's local scope under
//! `projects.<dir>.mcpServers` for the current directory.
//!
//! Relative files (`.mcp.json`, `.cursor/`, `.vscode/`) are looked up in the
//! current directory; `~` is `HOME`.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::Context;

use crate::platform::client_files::CLIENT_FILES;
use serde_json::{Map, Value};

use super::{
    add::{self, Adding, add_entries},
    file::read_document,
};
use crate::gateway::{
    config::{self},
    disk::GatewayDirs,
    serving,
};

/// One client file that exists, and the servers in it.
pub struct Found {
    /// The client and scope, e.g. "Claude Code (user)".
    pub label: String,
    pub path: PathBuf,
    pub servers: Map<String, Value>,
}

/// The server entries of any client's file, in file order: `mcpServers`,
/// VS Code's `servers` and `mcp.servers`, and Claude Code's local scope for
/// `cwd` (`projects.<cwd>.mcpServers`). `None` when the file has none of them.
pub fn servers_in(document: &Value, cwd: &Path) -> Option<Map<String, Value>> {
    let project = document
        .get("projects")
        .and_then(Value::as_object)
        .and_then(|projects| projects.get(cwd.to_str()?))
        .and_then(|project| project.get("mcpServers"));
    let places = [
        document.get("mcpServers"),
        document.get("servers"),
        document.get("mcp").and_then(|mcp| mcp.get("servers")),
        project,
    ];
    let mut found = None::<Map<String, Value>>;
    for servers in places.into_iter().flatten().filter_map(Value::as_object) {
        let all = found.get_or_insert_with(Map::new);
        for (name, entry) in servers {
            all.entry(name.clone()).or_insert_with(|| entry.clone());
        }
    }
    found
}

/// The usual client files for this OS (the one table of client files),
/// whether or not they exist.
pub fn usual_files(cwd: &Path) -> Vec<(String, PathBuf)> {
    CLIENT_FILES
        .iter()
        .filter_map(|file| Some((file.label(), file.path(cwd)?)))
        .collect()
}

/// The usual files that exist and hold servers; a file that cannot be read
/// or is not JSON is reported in `problems` and skipped.
pub fn discover(cwd: &Path, problems: &mut Vec<String>) -> Vec<Found> {
    let mut found = Vec::new();
    for (label, path) in usual_files(cwd) {
        if !path.is_file() {
            continue;
        }
        let document = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                // A settings.json with comments (which VS Code allows) is
                // not JSON to serde_json: reported and skipped, like any
                // unreadable file.
                serde_json::from_str::<Value>(&text).map_err(|e| format!("not JSON: {e}"))
            });
        match document {
            Ok(document) => {
                if let Some(servers) = servers_in(&document, cwd).filter(|s| !s.is_empty()) {
                    found.push(Found {
                        label,
                        path,
                        servers,
                    });
                }
            }
            Err(problem) => problems.push(format!("{label}: {}: {problem}", path.display())),
        }
    }
    found
}

/// `upstream import`: the servers of a given file, or of every client's
/// usual files (asking first, unless `--yes`).
#[allow(clippy::too_many_arguments)]
pub fn run(
    file: &Path,
    dirs: &GatewayDirs,
    runtime: &tokio::runtime::Runtime,
    wait: Duration,
    source: Option<PathBuf>,
    replace: bool,
    no_fetch: bool,
    keep: bool,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let how = Adding {
        replace,
        fetch: !no_fetch,
        keep,
        wait,
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let found = match source {
        Some(source) => {
            let document = read_document(&source)?;
            let servers = servers_in(&document, &cwd).with_context(|| {
                format!(
                    "{}: has no \"mcpServers\" (or VS Code \"servers\") object",
                    source.display()
                )
            })?;
            vec![Found {
                label: "given file".into(),
                path: source,
                servers,
            }]
        }
        None => {
            let mut problems = Vec::new();
            let mut found = discover(&cwd, &mut problems);
            for problem in problems {
                eprintln!("warning: skipping {problem}");
            }
            hold_back_unapproved(&mut found, &cwd);
            found
        }
    };
    let discovered = !matches!(found.first(), Some(f) if f.label == "given file");
    let entries = choose_imports(file, found, replace)?;
    if entries.is_empty() {
        println!("nothing to import");
        return Ok(ExitCode::SUCCESS);
    }
    if discovered && !yes && !confirmed(entries.len())? {
        return Ok(ExitCode::SUCCESS);
    }
    let before = serving::Stamp::of(file);
    let outcome = runtime.block_on(add_entries(file, dirs, entries, &how))?;
    add::report_pickup(dirs, file, before.as_ref());
    Ok(outcome)
}

/// A folder's `.mcp.json` comes with the repository: its servers are
/// imported (and so started) only once Claude Code approved them, as
/// Claude Code itself would start them. Given by name (`upstream import
/// .mcp.json`), the file is the user's own choice and is read whole.
fn hold_back_unapproved(found: &mut [Found], cwd: &Path) {
    let project_file = cwd.join(".mcp.json");
    for source in found.iter_mut().filter(|f| f.path == project_file) {
        let names: Vec<String> = source.servers.keys().cloned().collect();
        for name in names {
            if !crate::cli::setup::project_scope::approved_by_claude_code(&name, cwd) {
                source.servers.shift_remove(&name);
                println!(
                    "{} ({}): {name}: skipped: {}; or import the file by name: `zenmode upstream import {}`",
                    source.label,
                    source.path.display(),
                    crate::cli::setup::project_scope::NOT_APPROVED,
                    source.path.display()
                );
            }
        }
    }
}

/// Shows, source by source, what importing would do, and returns the
/// entries to import: none that runs zenmode, does not load, or would
/// replace an entry without `replace`; the first of two of a name.
pub fn choose_imports(
    file: &Path,
    found: Vec<Found>,
    replace: bool,
) -> anyhow::Result<Map<String, Value>> {
    let existing = if file.exists() {
        read_document(file)?
            .get("mcpServers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    } else {
        Map::new()
    };
    if found.is_empty() {
        println!("no client configuration with MCP servers found; looked at:");
        let cwd = std::env::current_dir().unwrap_or_default();
        for (label, path) in usual_files(&cwd) {
            println!("  {label}: {}", path.display());
        }
    }
    let mut chosen = Map::new();
    for source in found {
        println!("{} ({}):", source.label, source.path.display());
        for (name, entry) in source.servers {
            let verdict = match config::parse_one(&name, &entry) {
                Err(problem) => format!("skipped: {problem}"),
                Ok(checked) => match config::runs_zenmode(&checked) {
                    Some(why) => config::self_skip_message(&name, &why),
                    None if chosen.get(&name) == Some(&entry) => "the same as above".into(),
                    None if chosen.contains_key(&name) => {
                        "skipped: an entry above has this name; import this file alone with --replace to take this one".into()
                    }
                    None if existing.get(&name) == Some(&entry) => "already in the upstreams file".into(),
                    None if existing.contains_key(&name) && !replace => format!(
                        "skipped: {} has a server of this name; --replace overwrites it",
                        file.display()
                    ),
                    None => {
                        let target = checked.describe();
                        chosen.insert(name.clone(), entry);
                        format!("to import: {target}")
                    }
                },
            };
            println!("  {name}: {verdict}");
        }
    }
    Ok(chosen)
}

/// Asks on a terminal whether to import `count` servers; elsewhere says
/// what to run and answers no (never waits on a stdin that is not a person).
pub fn confirmed(count: usize) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        println!(
            "nothing written; run `zenmode upstream import --yes` to import these {count} servers"
        );
        return Ok(false);
    }
    eprint!("import these {count} servers? [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if !yes {
        println!("nothing written");
    }
    Ok(yes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_client_shape_is_read() {
        let cwd = Path::new("/p");
        let claude_code = json!({"mcpServers": {"a": {}}, "projects": {"/p": {"mcpServers": {"b": {}}}, "/q": {"mcpServers": {"c": {}}}}});
        let names: Vec<String> = servers_in(&claude_code, cwd)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(servers_in(&json!({"servers": {"v": {"type": "stdio"}}}), cwd).is_some());
        assert!(servers_in(&json!({"mcp": {"servers": {"v": {}}}}), cwd).is_some());
        assert!(servers_in(&json!({"other": 1}), cwd).is_none());
    }
}
