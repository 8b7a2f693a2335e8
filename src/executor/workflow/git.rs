//! Pending changes of a git repository, for precommit.
//!
//! Runs the real `git` in the repository named by the request's `path`
//! (confined to the allowed roots like any other path): staged and unstaged
//! changes by default, or the working tree against `compare_to`.
//!
//! Git is run so that neither the repository nor its location can widen
//! what is read or make us run a program: every diff is limited to the
//! requested directory (a root inside a larger repository shows nothing
//! outside it), a `.git` file pointing outside the roots is refused, and the
//! command line overrides the settings that name programs (fsmonitor, pager,
//! external diff, hooks, filter drivers) with no system or global config.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::process::Command;

use crate::{
    executor::{ExecContext, ExecError},
    files::estimate_tokens,
};

const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Which changes the request asks for.
struct Selection {
    repository: PathBuf,
    compare_to: Option<String>,
    staged: bool,
    unstaged: bool,
}

fn selection(context: &ExecContext<'_>, request: &Value) -> Result<Selection, String> {
    let files = &context.services.files;
    let repository = match request.get("path").and_then(Value::as_str) {
        Some(path) => files.resolve(path).map_err(|e| e.to_string())?,
        None => files
            .roots()
            .first()
            .cloned()
            .ok_or("no allowed root to look for a repository in")?,
    };
    let compare_to = request
        .get("compare_to")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    if let Some(reference) = &compare_to
        && (reference.starts_with('-') || reference.contains(char::is_whitespace))
    {
        return Err(format!("compare_to {reference:?} is not a git reference"));
    }
    let flag = |name: &str| request.get(name).and_then(Value::as_bool).unwrap_or(true);
    Ok(Selection {
        repository,
        compare_to,
        staged: flag("include_staged"),
        unstaged: flag("include_unstaged"),
    })
}

/// Settings given on every git command line: they override the
/// repository's own configuration, so a repository cannot make us run a
/// program it names (fsmonitor, pager, external diff, hooks, askpass) or
/// reach the network.
const SAFE_CONFIG: &[&str] = &[
    "core.quotepath=off",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.untrackedCache=false",
    "diff.external=",
    "protocol.allow=never",
];

/// Runs git in `repository` with [`SAFE_CONFIG`], no system or global
/// configuration, no pager and no prompt; `extra_config` adds more `-c`
/// settings (the repository's filter drivers, switched off).
async fn git_with(
    repository: &Path,
    extra_config: &[String],
    args: &[&str],
) -> Result<String, String> {
    let mut command = Command::new("git");
    command.arg("--no-pager").arg("-C").arg(repository);
    for setting in SAFE_CONFIG
        .iter()
        .copied()
        .chain(extra_config.iter().map(String::as_str))
    {
        command.args(["-c", setting]);
    }
    let run = command
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(GIT_TIMEOUT, run)
        .await
        .map_err(|_| format!("git {} timed out", args.join(" ")))?
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            repository.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A repository checked for confinement, with the settings that switch off
/// its filter drivers.
struct Repository {
    path: PathBuf,
    config: Vec<String>,
}

/// Checks that `path` is in a git repository whose git directory is not
/// reached through a `.git` file pointing outside the roots, and lists the
/// repository's filter drivers so they can be switched off (a clean filter
/// is a program `git diff` would run).
async fn open_repository(context: &ExecContext<'_>, path: &Path) -> Result<Repository, String> {
    let files = &context.services.files;
    let inside = git_with(path, &[], &["rev-parse", "--is-inside-work-tree"]).await;
    if inside.as_deref().map(str::trim) != Ok("true") {
        return Err(format!("{} is not inside a git repository", path.display()));
    }
    let toplevel = git_with(path, &[], &["rev-parse", "--show-toplevel"]).await?;
    let git_dir = git_with(path, &[], &["rev-parse", "--absolute-git-dir"]).await?;
    let (toplevel, git_dir) = (
        PathBuf::from(toplevel.trim()),
        PathBuf::from(git_dir.trim()),
    );
    // A `.git` file (a linked worktree or a submodule) names its git
    // directory; inside the roots, it must not lead out of them.
    let in_roots = |p: &Path| files.resolve(&p.display().to_string()).is_ok();
    if in_roots(&toplevel) && toplevel.join(".git").is_file() && !in_roots(&git_dir) {
        return Err(format!(
            "the repository at {} keeps its git directory outside the allowed roots ({}); refusing to follow it",
            toplevel.display(),
            git_dir.display()
        ));
    }
    let drivers = git_with(
        path,
        &[],
        &[
            "config",
            "--name-only",
            "--get-regexp",
            r"^filter\..*\.(clean|smudge|process)$",
        ],
    )
    .await
    .unwrap_or_default();
    let config = drivers
        .lines()
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .map(|key| format!("{key}="))
        .collect();
    Ok(Repository {
        path: path.to_owned(),
        config,
    })
}

/// `git diff` limited to the requested directory (paths relative to it), so
/// a root inside a larger repository never shows what lies outside it.
async fn diff_in(repository: &Repository, args: &[String]) -> Result<String, String> {
    let mut all: Vec<&str> = vec![
        "diff",
        "--relative",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
    ];
    all.extend(args.iter().map(String::as_str));
    all.extend(["--", "."]);
    git_with(&repository.path, &repository.config, &all).await
}

/// Refuses, as the step's error, a `path` outside the roots or missing.
pub fn check_path(context: &ExecContext<'_>, request: &Value) -> Result<(), ExecError> {
    selection(context, request)
        .map(drop)
        .map_err(|problem| ExecError::new("file_access", problem))
}

/// The `git diff` argument lists for a selection, each with its label.
fn diff_commands(selection: &Selection) -> Vec<(&'static str, Vec<String>)> {
    match &selection.compare_to {
        Some(reference) => vec![("compared", vec![reference.clone()])],
        None => {
            let mut commands = Vec::new();
            if selection.staged {
                commands.push(("staged", vec!["--cached".to_owned()]));
            }
            if selection.unstaged {
                commands.push(("unstaged", Vec::new()));
            }
            commands
        }
    }
}

/// Changed file names per kind, for the agent's first step.
pub async fn summary(context: &ExecContext<'_>, request: &Value) -> Value {
    let selection = match selection(context, request) {
        Ok(selection) => selection,
        Err(problem) => return json!({"error": problem}),
    };
    let repository = match open_repository(context, &selection.repository).await {
        Ok(repository) => repository,
        Err(problem) => return json!({"error": problem}),
    };
    let mut out = serde_json::Map::new();
    out.insert(
        "repository".into(),
        json!(selection.repository.display().to_string()),
    );
    for (label, mut args) in diff_commands(&selection) {
        args.insert(0, "--name-status".to_owned());
        match diff_in(&repository, &args).await {
            Ok(listing) => {
                let files: Vec<&str> = listing.lines().filter(|l| !l.is_empty()).collect();
                out.insert(label.into(), json!(files));
            }
            Err(problem) => return json!({"error": problem}),
        }
    }
    Value::Object(out)
}

/// The diffs themselves, cut to `budget_tokens`, for the expert.
pub async fn diff(
    context: &ExecContext<'_>,
    request: &Value,
    budget_tokens: usize,
) -> Result<String, String> {
    let selection = selection(context, request)?;
    let repository = open_repository(context, &selection.repository).await?;
    let mut out = String::new();
    for (label, args) in diff_commands(&selection) {
        let text = diff_in(&repository, &args).await?;
        let block = if text.trim().is_empty() {
            format!("### {label} changes\n(none)\n")
        } else {
            format!("### {label} changes\n```diff\n{text}```\n")
        };
        if estimate_tokens(&out) + estimate_tokens(&block) > budget_tokens {
            out.push_str(&format!(
                "### {label} changes\n(left out: over the token budget)\n"
            ));
            continue;
        }
        out.push_str(&block);
    }
    Ok(out)
}
