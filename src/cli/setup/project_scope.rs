//! Which of a folder's `.mcp.json` servers (Claude Code's project scope)
//! `--move-servers` may take.
//!
//! The file comes with the repository, so its servers are the repository
//! author's choice, not the user's: Claude Code starts none of them until
//! the user approved it. zenmode must not start one first, which moving it
//! would (each moved server is started and its tools approved). Nor is a
//! file git tracks rewritten: a teammate who pulls the change would lose
//! the server. Both stay in Claude Code, each with a line saying why and
//! what to do instead.
//!
//! Whether Claude Code approved a server is asked of Claude Code itself
//! (`claude mcp get NAME` in the folder, its `Status:` line): where it
//! keeps approvals (trust of the folder, settings files, per-session
//! choices) is its own business and has changed between versions. A
//! server it does not report as approved counts as not approved.

use std::path::Path;

use super::plan::{Scope, Source};

/// Takes out of `sources`' project scope the servers setup must leave in
/// Claude Code, and returns each with the reason.
pub fn hold_back(sources: &mut [Source]) -> Vec<(String, String)> {
    hold_back_with(sources, claude_status)
}

/// [`hold_back`] with `status(name, folder)` giving Claude Code's status
/// line for a project server (`None`: it could not tell).
fn hold_back_with(
    sources: &mut [Source],
    status: impl Fn(&str, &Path) -> Option<String>,
) -> Vec<(String, String)> {
    let mut held = Vec::new();
    for source in sources.iter_mut().filter(|s| s.scope == Scope::Project) {
        let Some(folder) = source.folder.clone() else {
            continue;
        };
        if source.servers.is_empty() {
            continue;
        }
        let project_file = folder.join(".mcp.json");
        let tracked = tracked_by_git(&project_file);
        let names: Vec<String> = source.servers.keys().cloned().collect();
        for name in names {
            let label = format!("{name} ({})", source.describe());
            let why = if !status(&name, &folder).is_some_and(|line| approved(&line)) {
                format!("{NOT_APPROVED}, then run setup again")
            } else if tracked {
                format!(
                    "{} is tracked by git and setup does not rewrite it (teammates would lose the server); to use it through zenmode only for you, run `zenmode upstream import {}`, then disable it in Claude Code (`/mcp`)",
                    project_file.display(),
                    project_file.display()
                )
            } else {
                continue;
            };
            source.servers.shift_remove(&name);
            held.push((label, why));
        }
    }
    held
}

/// Why an unapproved project server is left alone (what to do follows).
pub const NOT_APPROVED: &str = "Claude Code has not approved this project server, so zenmode does not start it either; approve it in Claude Code (`/mcp`)";

/// Whether Claude Code reports the project server `name` of `folder` as
/// approved (false when it cannot tell, Claude Code missing included).
pub fn approved_by_claude_code(name: &str, folder: &Path) -> bool {
    claude_status(name, folder).is_some_and(|line| approved(&line))
}

/// Whether Claude Code's status line says the server may run: not pending
/// approval, rejected or disabled for the folder.
fn approved(status: &str) -> bool {
    let status = status.to_ascii_lowercase();
    !["pending", "rejected", "disabled"]
        .iter()
        .any(|word| status.contains(word))
}

/// The `Status:` line of `claude mcp get NAME`, run in `folder`.
fn claude_status(name: &str, folder: &Path) -> Option<String> {
    let output = std::process::Command::new("claude")
        .args(["mcp", "get", name])
        .current_dir(folder)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.trim().strip_prefix("Status:").map(str::to_owned))
}

/// Whether git tracks `file` (false without git, or outside a repository).
pub fn tracked_by_git(file: &Path) -> bool {
    let (Some(folder), Some(name)) = (file.parent(), file.file_name()) else {
        return false;
    };
    std::process::Command::new("git")
        .arg("ls-files")
        .arg("--error-unmatch")
        .arg("--")
        .arg(name)
        .current_dir(folder)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_servers_claude_code_reports_approved_may_move() {
        let dir = tempfile::tempdir().unwrap();
        let mut sources = [Source {
            scope: Scope::Project,
            folder: Some(dir.path().to_owned()),
            servers: json!({"ok": {"command": "a"}, "pending": {"command": "b"},
                            "refused": {"command": "c"}, "unknown": {"command": "d"}})
            .as_object()
            .unwrap()
            .clone(),
        }];
        let held = hold_back_with(&mut sources, |name, _| match name {
            "ok" => Some("✔ Connected".into()),
            "pending" => Some("⏸ Pending approval (run `claude` to approve)".into()),
            "refused" => Some("Rejected (see disabledMcpjsonServers in settings)".into()),
            _ => None,
        });
        let names: Vec<&String> = sources[0].servers.keys().collect();
        assert_eq!(names, ["ok"]);
        assert_eq!(held.len(), 3);
        assert!(held.iter().all(|(_, why)| why.contains("not approved")));
    }
}
