//! Pending changes of a git repository, for precommit.
//!
//! Runs the real `git` in the repository named by the request's `path`
//! (confined to the allowed roots like any other path): staged and unstaged
//! changes by default, or the working tree against `compare_to`.

use std::{path::PathBuf, time::Duration};

use serde_json::{Value, json};
use tokio::process::Command;

use crate::{executor::ExecContext, files::estimate_tokens};

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

async fn git(repository: &PathBuf, args: &[&str]) -> Result<String, String> {
    let run = Command::new("git")
        .arg("-C")
        .arg(repository)
        .args(["-c", "core.quotepath=off"])
        .args(args)
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
    let mut out = serde_json::Map::new();
    out.insert(
        "repository".into(),
        json!(selection.repository.display().to_string()),
    );
    for (label, mut args) in diff_commands(&selection) {
        args.insert(0, "--name-status".to_owned());
        args.insert(0, "diff".to_owned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match git(&selection.repository, &args).await {
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
    let mut out = String::new();
    for (label, mut args) in diff_commands(&selection) {
        args.insert(0, "diff".to_owned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = git(&selection.repository, &args).await?;
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
