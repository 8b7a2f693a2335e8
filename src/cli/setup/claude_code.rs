//! Claude Code changes through its own `claude mcp` command, never by
//! writing `~/.claude.json`: Claude Code rewrites that file while it runs,
//! and its command knows each scope's place (a local or project scope is
//! the folder the command runs in).

use std::{path::Path, process::Command};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{
    client_file::NAME,
    plan::{Move, Scope},
};

/// Adds zenmode's entry in the user scope (every folder).
pub fn add_zenmode(entry: &Value) -> anyhow::Result<()> {
    let mut args = vec![
        "mcp".to_owned(),
        "add".to_owned(),
        "--scope".to_owned(),
        "user".to_owned(),
        NAME.to_owned(),
        "--".to_owned(),
        entry["command"].as_str().unwrap_or_default().to_owned(),
    ];
    args.extend(
        entry["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned),
    );
    claude(&args, None)
}

/// Removes server `name` from `scope` (of `folder`, for local and project).
pub fn remove(name: &str, scope: Scope, folder: Option<&Path>) -> anyhow::Result<()> {
    claude(
        &[
            "mcp".to_owned(),
            "remove".to_owned(),
            "--scope".to_owned(),
            scope.name().to_owned(),
            name.to_owned(),
        ],
        folder,
    )
}

/// Puts a moved server back in the scope it came from, as it was.
pub fn put_back(moved: &Move) -> anyhow::Result<()> {
    claude(
        &[
            "mcp".to_owned(),
            "add-json".to_owned(),
            "--scope".to_owned(),
            moved.scope.name().to_owned(),
            moved.name.clone(),
            moved.entry.to_string(),
        ],
        moved.folder.as_deref(),
    )
}

/// Runs `claude ARGS` (in `folder`, when given); its failure is an error
/// with its output.
fn claude(args: &[String], folder: Option<&Path>) -> anyhow::Result<()> {
    let mut command = Command::new("claude");
    command.args(args).stdin(std::process::Stdio::null());
    if let Some(folder) = folder {
        if !folder.is_dir() {
            bail!(
                "cannot run `claude {}` in {}: the folder is gone",
                args.join(" "),
                folder.display()
            );
        }
        command.current_dir(folder);
    }
    let output = command.output().context("cannot run `claude`")?;
    if !output.status.success() {
        bail!(
            "`claude {}` failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim(),
            String::from_utf8_lossy(&output.stdout).trim()
        );
    }
    Ok(())
}
