//! precommit's git commands stay inside the allowed roots and run nothing
//! the repository names, driven through `zenmode exec`.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use common::zenmode;
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?} in {}", dir.display());
}

/// A committed repository at `dir` whose `files` are then modified.
fn repository(dir: &Path, files: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    for file in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "first\n").unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one"]);
    for file in files {
        std::fs::write(dir.join(file), "second\n").unwrap();
    }
}

/// Step 1 of precommit on `path`, with the allowed root `root` as the working directory.
fn precommit(root: &Path, path: &Path) -> (Output, Value) {
    let request = json!({"step": "Review the changes", "step_number": 1, "total_steps": 2,
                         "next_step_required": true, "findings": "starting", "path": path});
    let output = zenmode(&["exec", "precommit", "--request", &request.to_string()])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let reply = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {output:?}"));
    (output, reply)
}

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    (dir, base)
}

#[test]
fn a_root_inside_a_larger_repository_sees_only_its_own_changes() {
    let (_dir, base) = canonical_tempdir();
    let outer = base.join("outer");
    repository(&outer, &["secret.txt", "inner/mine.txt"]);
    let root = outer.join("inner");
    let (output, reply) = precommit(&root, &root);
    assert!(output.status.success(), "{reply}");
    let unstaged = reply["changes"]["unstaged"].as_array().unwrap();
    assert_eq!(unstaged.len(), 1, "{reply}");
    let line = unstaged[0].as_str().unwrap();
    assert!(
        line.contains("mine.txt") && !line.contains("secret"),
        "{line}"
    );
}

#[test]
fn a_git_file_pointing_outside_the_roots_is_refused() {
    let (_dir, base) = canonical_tempdir();
    let outer = base.join("outer");
    repository(&outer, &["a.txt"]);
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join(".git"),
        format!("gitdir: {}\n", outer.join(".git").display()),
    )
    .unwrap();
    let (_, reply) = precommit(&root, &root);
    let changes = &reply["changes"];
    assert!(
        changes["error"]
            .as_str()
            .unwrap_or_default()
            .contains("outside the allowed roots"),
        "{reply}"
    );
    assert!(changes.get("unstaged").is_none(), "{reply}");
}

#[test]
fn repository_config_cannot_run_a_program() {
    let (_dir, base) = canonical_tempdir();
    let root = base.join("repo");
    repository(&root, &["a.txt"]);
    let marker = base.join("ran");
    let script = base.join("hook.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch {}\nexit 0\n", marker.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let script = script.display().to_string();
    git(&root, &["config", "core.fsmonitor", &script]);
    git(&root, &["config", "diff.external", &script]);
    git(&root, &["config", "core.pager", &script]);
    git(&root, &["config", "filter.evil.clean", &script]);
    std::fs::write(root.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
    let (output, reply) = precommit(&root, &root);
    assert!(output.status.success(), "{reply}");
    assert!(reply["changes"]["unstaged"].is_array(), "{reply}");
    assert!(!marker.exists(), "a program named by the repository ran");
}

#[test]
fn not_a_repository_and_outside_paths_are_clear() {
    let (_dir, base) = canonical_tempdir();
    let root = base.join("plain");
    std::fs::create_dir_all(&root).unwrap();
    let (_, reply) = precommit(&root, &root);
    let error = reply["changes"]["error"].as_str().unwrap();
    assert!(error.contains("not inside a git repository"), "{reply}");
    assert!(!error.contains("usage"), "{error}");

    let (output, reply) = precommit(&root, Path::new("/etc"));
    assert_eq!(
        output.status.code(),
        Some(1),
        "an outside path is the step's error: {reply}"
    );
    assert_eq!(reply["error"], "file_access", "{reply}");
}
