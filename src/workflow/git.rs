//! Pending changes of a git repository, for precommit.
//!
//! Runs the real `git` in the repository that holds the request's `path`
//! (confined to the allowed roots like any other path): staged and unstaged
//! changes by default, or the working tree against `compare_to`.
//!
//! The repository is untrusted input, and git reads a lot from it, so:
//! - the repository must lie wholly inside the allowed roots: git never
//!   searches above the root holding `path` (`GIT_CEILING_DIRECTORIES`), a
//!   `.git` file whose `gitdir:` points outside the roots is refused before
//!   git runs, and the git directory, common directory and top level git
//!   reports are checked again;
//! - every command is limited to `path` (a literal pathspec), and every path
//!   git reports is checked against the roots before it is shown;
//! - git runs with settings that keep the repository from running programs:
//!   no fsmonitor, hooks, pager, external diff, textconv, clean/smudge
//!   filters (each configured filter is overridden by name) or network
//!   (no lazy fetches), without the system config and without inherited
//!   `GIT_*` variables;
//! - output is capped, and each command has a timeout.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{io::AsyncReadExt, process::Command};

use crate::{
    executor::ExecContext,
    files::{FileAccess, FileError, estimate_tokens},
};

const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Most bytes read from one git command's output; a larger diff is left out.
const MAX_GIT_OUTPUT: usize = 32 * 1024 * 1024;

/// Most bytes read from a `.git` file (it holds one `gitdir:` line).
const MAX_DOT_GIT_FILE: usize = 4096;

/// Settings given to every git command, ahead of anything in the
/// repository's own config. Empty values switch a program off.
const SAFE_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.quotepath=off",
    "core.untrackedCache=false",
    "credential.helper=",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "color.ui=never",
    "protocol.allow=never",
];

/// Which changes the request asks for.
struct Selection {
    /// The canonical requested path (a directory or a file).
    target: PathBuf,
    compare_to: Option<String>,
    staged: bool,
    unstaged: bool,
}

/// A repository that passed every check.
struct Repository {
    /// The canonical top level of the work tree (inside the roots).
    toplevel: PathBuf,
    /// `target` relative to `toplevel`, as a literal pathspec.
    pathspec: String,
    /// Where git may not search above (the parent of the root).
    ceiling: Option<PathBuf>,
    /// `-c filter.NAME.*=` for each configured filter driver.
    filter_overrides: Vec<String>,
}

fn selection(context: &ExecContext<'_>, request: &Value) -> Result<Selection, String> {
    let files = &context.engine.services().files;
    let target = match request.get("path").and_then(Value::as_str) {
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
        target,
        compare_to,
        staged: flag("include_staged"),
        unstaged: flag("include_unstaged"),
    })
}

/// The outermost allowed root holding `path` (`path` is canonical and was
/// checked, so there is one).
fn root_of<'a>(files: &'a FileAccess, path: &Path) -> Option<&'a Path> {
    files
        .roots()
        .iter()
        .filter(|root| path.starts_with(root))
        .min_by_key(|root| root.components().count())
        .map(PathBuf::as_path)
}

/// Whether `path` is inside the roots; a missing path counts by where it
/// would be (a deleted file is still reported by git).
fn inside(files: &FileAccess, path: &Path) -> bool {
    match path.to_str() {
        Some(text) => matches!(files.resolve(text), Ok(_) | Err(FileError::Missing { .. })),
        None => false,
    }
}

/// Finds the `.git` that git would use for `dir`, looking no higher than
/// `root`, and refuses one that leads outside the roots.
fn check_dot_git(files: &FileAccess, dir: &Path, root: &Path) -> Result<(), String> {
    for ancestor in dir.ancestors().take_while(|a| a.starts_with(root)) {
        let dot_git = ancestor.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return Ok(());
        }
        let refused = |target: &str| {
            format!(
                "{} points git to {target}, outside the allowed roots; zenmode does not follow it",
                dot_git.display()
            )
        };
        if meta.file_type().is_symlink() {
            return match std::fs::canonicalize(&dot_git) {
                Ok(target) if inside(files, &target) => Ok(()),
                Ok(target) => Err(refused(&target.display().to_string())),
                Err(error) => Err(format!("{} cannot be used: {error}", dot_git.display())),
            };
        }
        // A `.git` file: `gitdir: <path>`, relative to its directory.
        let bytes = files
            .read_regular_capped(&dot_git, MAX_DOT_GIT_FILE)
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&bytes);
        let gitdir = text
            .lines()
            .find_map(|line| line.strip_prefix("gitdir:"))
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .ok_or_else(|| format!("{} is not a valid .git file", dot_git.display()))?;
        let target = ancestor.join(gitdir);
        return match std::fs::canonicalize(&target) {
            Ok(target) if inside(files, &target) => Ok(()),
            _ => Err(refused(gitdir)),
        };
    }
    Err(format!(
        "{} is not a git repository, and neither is any directory above it up to the allowed root {}; precommit needs one",
        dir.display(),
        root.display()
    ))
}

/// A git command with the safe settings, in `dir`.
fn command(dir: &Path, ceiling: Option<&Path>, filter_overrides: &[String]) -> Command {
    let mut command = Command::new("git");
    // Nothing inherited may redirect git (GIT_DIR, GIT_CONFIG_PARAMETERS,
    // GIT_EXTERNAL_DIFF, ...).
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_PROTOCOL_FROM_USER", "0")
        .env("LC_ALL", "C");
    if let Some(ceiling) = ceiling {
        command.env("GIT_CEILING_DIRECTORIES", ceiling);
    }
    command.arg("--no-pager");
    for setting in SAFE_CONFIG {
        command.args(["-c", setting]);
    }
    for setting in filter_overrides {
        command.args(["-c", setting]);
    }
    command
        .arg("-C")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// What a git command printed, or why it failed. `Ok(None)` means the
/// output was over [`MAX_GIT_OUTPUT`].
async fn run(mut command: Command, what: &str) -> Result<Option<String>, String> {
    let work = async {
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let mut stdout = child.stdout.take().ok_or("git has no stdout")?;
        let mut stderr = child.stderr.take().ok_or("git has no stderr")?;
        // stderr is read beside stdout, kept up to 64 KiB and then drained,
        // so git never blocks on it.
        let errors = tokio::spawn(async move {
            let mut kept = Vec::new();
            let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut kept).await;
            let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
            kept
        });
        let mut out = Vec::new();
        (&mut stdout)
            .take(MAX_GIT_OUTPUT as u64 + 1)
            .read_to_end(&mut out)
            .await
            .map_err(|e| format!("cannot read git's output: {e}"))?;
        if out.len() > MAX_GIT_OUTPUT {
            let _ = child.kill().await;
            errors.abort();
            return Ok(None);
        }
        let status = child
            .wait()
            .await
            .map_err(|e| format!("git did not finish: {e}"))?;
        let err = errors.await.unwrap_or_default();
        if !status.success() {
            let stderr = String::from_utf8_lossy(&err);
            let stderr = stderr.trim();
            if stderr.contains("not a git repository") {
                return Err("not a git repository (within the allowed roots)".to_owned());
            }
            return Err(format!("git {what} failed: {stderr}"));
        }
        Ok(Some(String::from_utf8_lossy(&out).into_owned()))
    };
    tokio::time::timeout(GIT_TIMEOUT, work)
        .await
        .map_err(|_| format!("git {what} timed out"))?
}

/// Checks the repository holding `selection.target` and prepares the
/// commands on it.
async fn open(files: &FileAccess, selection: &Selection) -> Result<Repository, String> {
    let dir = if selection.target.is_dir() {
        selection.target.clone()
    } else {
        selection
            .target
            .parent()
            .map(Path::to_path_buf)
            .ok_or("the path has no parent directory")?
    };
    let root = root_of(files, &dir).ok_or("the path is outside the allowed roots")?;
    check_dot_git(files, &dir, root)?;
    let ceiling = root.parent().map(Path::to_path_buf);

    // Filter drivers run programs on diffed files; each configured one is
    // switched off by name. Reading config runs nothing.
    let mut listing = command(&dir, ceiling.as_deref(), &[]);
    listing.args(["config", "--get-regexp", r"^filter\."]);
    let names: HashSet<String> = match run(listing, "config").await {
        Ok(Some(text)) => text
            .lines()
            .filter_map(|line| line.split_whitespace().next())
            .filter_map(|key| key.strip_prefix("filter."))
            .filter_map(|rest| rest.rsplit_once('.').map(|(name, _)| name.to_owned()))
            .collect(),
        // `git config --get-regexp` fails when nothing matches.
        _ => HashSet::new(),
    };
    let mut filter_overrides = Vec::new();
    for name in names {
        for key in ["clean", "smudge", "process"] {
            filter_overrides.push(format!("filter.{name}.{key}="));
        }
        filter_overrides.push(format!("filter.{name}.required=false"));
    }

    let mut probe = command(&dir, ceiling.as_deref(), &filter_overrides);
    probe.args([
        "rev-parse",
        "--absolute-git-dir",
        "--git-common-dir",
        "--show-toplevel",
    ]);
    let text = run(probe, "rev-parse")
        .await?
        .ok_or("git rev-parse printed too much")?;
    let lines: Vec<&str> = text.lines().collect();
    let [git_dir, common_dir, toplevel] = lines[..] else {
        return Err(format!(
            "{} is not in a git work tree (a bare repository?)",
            dir.display()
        ));
    };
    for (label, reported) in [
        ("git directory", git_dir),
        ("common git directory", common_dir),
        ("work tree", toplevel),
    ] {
        let path = dir.join(reported);
        let canonical = std::fs::canonicalize(&path).unwrap_or(path);
        if !inside(files, &canonical) {
            return Err(format!(
                "the repository's {label} {} lies outside the allowed roots; allow the whole repository with --allow-root",
                canonical.display()
            ));
        }
    }
    let toplevel = std::fs::canonicalize(toplevel).map_err(|e| e.to_string())?;
    let relative = selection
        .target
        .strip_prefix(&toplevel)
        .map_err(|_| "the path is not inside the repository's work tree".to_owned())?;
    let relative = relative
        .to_str()
        .ok_or("the path is not valid UTF-8")?
        .to_owned();
    Ok(Repository {
        toplevel,
        pathspec: if relative.is_empty() {
            ":(top,literal)".to_owned()
        } else {
            format!(":(top,literal){relative}")
        },
        ceiling,
        filter_overrides,
    })
}

impl Repository {
    /// `git diff` with the safe options, the selection's extra arguments,
    /// and the pathspec.
    fn diff(&self, options: &[&str], extra: &[String]) -> Command {
        let mut command = command(
            &self.toplevel,
            self.ceiling.as_deref(),
            &self.filter_overrides,
        );
        command.args([
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--no-renames",
            "--ignore-submodules=all",
        ]);
        command.args(options);
        if !extra.is_empty() {
            command.arg("--end-of-options");
            command.args(extra);
        }
        command.arg("--").arg(&self.pathspec);
        command
    }

    /// Whether a path git reports (relative to the top level) is inside
    /// the roots.
    fn allowed(&self, files: &FileAccess, reported: &str) -> bool {
        inside(files, &self.toplevel.join(reported))
    }
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

/// Splits `--cached` (an option) from a reference (after
/// `--end-of-options`).
fn split_args(args: &[String]) -> (Vec<&str>, Vec<String>) {
    let mut options = Vec::new();
    let mut extra = Vec::new();
    for arg in args {
        if arg == "--cached" {
            options.push("--cached");
        } else {
            extra.push(arg.clone());
        }
    }
    (options, extra)
}

/// `(status, path)` pairs from `git diff --name-status -z --no-renames`.
fn parse_name_status(listing: &str) -> Vec<(&str, &str)> {
    let fields: Vec<&str> = listing.split('\0').filter(|f| !f.is_empty()).collect();
    fields
        .chunks_exact(2)
        .map(|pair| (pair[0], pair[1]))
        .collect()
}

/// Changed file names per kind, for the agent's first step.
pub async fn summary(context: &ExecContext<'_>, request: &Value) -> Value {
    let files = &context.engine.services().files;
    let selection = match selection(context, request) {
        Ok(selection) => selection,
        Err(problem) => return json!({"error": problem}),
    };
    let repository = match open(files, &selection).await {
        Ok(repository) => repository,
        Err(problem) => return json!({"error": problem}),
    };
    let mut out = serde_json::Map::new();
    out.insert(
        "repository".into(),
        json!(repository.toplevel.display().to_string()),
    );
    let mut left_out = 0usize;
    for (label, args) in diff_commands(&selection) {
        let (mut options, extra) = split_args(&args);
        options.extend(["--name-status", "-z"]);
        match run(repository.diff(&options, &extra), "diff").await {
            Ok(Some(listing)) => {
                let mut shown = Vec::new();
                for (status, path) in parse_name_status(&listing) {
                    if repository.allowed(files, path) {
                        shown.push(format!("{status}\t{path}"));
                    } else {
                        left_out += 1;
                    }
                }
                out.insert(label.into(), json!(shown));
            }
            Ok(None) => {
                out.insert(label.into(), json!("(too many changes to list)"));
            }
            Err(problem) => return json!({"error": problem}),
        }
    }
    if left_out > 0 {
        out.insert(
            "left_out".into(),
            json!(format!(
                "{left_out} changed paths outside the allowed roots are not shown"
            )),
        );
    }
    Value::Object(out)
}

/// Keeps the per-file blocks of a unified diff whose path is inside the
/// roots. A block whose header cannot be read exactly is dropped.
fn filter_diff(text: &str, keep: impl Fn(&str) -> bool) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut dropped = 0;
    let mut keeping = false;
    for line in text.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            let header = header.trim_end_matches('\n');
            // `--no-renames`: both sides name the same path.
            keeping = header
                .strip_prefix("a/")
                .and_then(|rest| {
                    let half = rest.len().checked_sub(2)? / 2;
                    let (old, new) = (rest.get(..half)?, rest.get(half..)?);
                    let new = new.strip_prefix(" b/")?;
                    (old == new).then_some(old)
                })
                .is_some_and(&keep);
            if !keeping {
                dropped += 1;
            }
        }
        if keeping {
            out.push_str(line);
        }
    }
    (out, dropped)
}

/// The diffs themselves, cut to `budget_tokens`, for the expert.
pub async fn diff(
    context: &ExecContext<'_>,
    request: &Value,
    budget_tokens: usize,
) -> Result<String, String> {
    let files = &context.engine.services().files;
    let selection = selection(context, request)?;
    let repository = open(files, &selection).await?;
    let mut out = String::new();
    for (label, args) in diff_commands(&selection) {
        let (options, extra) = split_args(&args);
        let Some(text) = run(repository.diff(&options, &extra), "diff").await? else {
            out.push_str(&format!(
                "### {label} changes\n(left out: over the token budget)\n"
            ));
            continue;
        };
        let (text, dropped) = filter_diff(&text, |path| repository.allowed(files, path));
        let mut block = if text.trim().is_empty() {
            format!("### {label} changes\n(none)\n")
        } else {
            format!("### {label} changes\n```diff\n{text}```\n")
        };
        if dropped > 0 {
            block.push_str(&format!(
                "({dropped} changed files outside the allowed roots or with unusual names are not shown)\n"
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_blocks_outside_are_dropped() {
        let text = "diff --git a/in.txt b/in.txt\n+kept\ndiff --git a/out.txt b/out.txt\n+gone\ndiff --git \"a/q\\tx\" \"b/q\\tx\"\n+odd\n";
        let (kept, dropped) = filter_diff(text, |path| path == "in.txt");
        assert_eq!(kept, "diff --git a/in.txt b/in.txt\n+kept\n");
        assert_eq!(dropped, 2);
        // A path containing " b/" is still split in the middle.
        let (kept, _) = filter_diff("diff --git a/x b/y b/x b/y\n+z\n", |p| p == "x b/y");
        assert_eq!(kept, "diff --git a/x b/y b/x b/y\n+z\n");
    }

    #[test]
    fn name_status_pairs() {
        assert_eq!(
            parse_name_status("M\0a.rs\0A\0dir/b c.rs\0"),
            [("M", "a.rs"), ("A", "dir/b c.rs")]
        );
    }
}
