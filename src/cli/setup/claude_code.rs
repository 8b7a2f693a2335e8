//! Claude Code changes through its own `claude mcp` command, never by
//! writing `~/.claude.json`: Claude Code rewrites that file while it runs,
//! and its command knows each scope's place (a local or project scope is
//! the folder the command runs in).

use std::{path::Path, process::Command};

use anyhow::{Context, bail};
use serde_json::Value;

use super::plan::{Move, Scope};

/// Adds server `name` as `entry` (zenmode's, or a moved one put back) in
/// `scope` (of `folder`, for local and project).
pub fn add_json(
    name: &str,
    scope: Scope,
    folder: Option<&Path>,
    entry: &Value,
) -> anyhow::Result<()> {
    claude(
        &[
            "mcp".to_owned(),
            "add-json".to_owned(),
            "--scope".to_owned(),
            scope.name().to_owned(),
            name.to_owned(),
            entry.to_string(),
        ],
        folder,
    )
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
    add_json(
        &moved.name,
        moved.scope,
        moved.folder.as_deref(),
        &moved.entry,
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
