//! Issue 9, precommit's git: confined to the allowed roots, and unable to
//! run programs the repository configures.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use common::{Client, fake_provider::BackgroundFake, structured, zenmode};
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository at `dir` with `files` committed.
fn repository(dir: &Path, files: &[(&str, &str)]) {
    fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    for (name, content) in files {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "first"]);
}

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    (tmp, base)
}

/// Runs a two-step precommit over `path` with `root` as the server's only
/// allowed root, and returns the first step's `changes` and all the text
/// the expert model was sent.
fn precommit(root: &Path, path: &Path) -> (Value, String) {
    let fake = BackgroundFake::start(Vec::new());
    let mut command = zenmode(&["serve"]);
    command
        .current_dir(root)
        .env("OPENAI_API_KEY", "sk-hardening-secret")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
    let mut client = Client::spawn_command(command);
    client.initialize();
    let step = |number: u64, more: bool| {
        json!({"mode": "precommit", "request": {
            "step": "review the pending changes", "step_number": number, "total_steps": 2,
            "next_step_required": more, "findings": "checked",
            "path": path.display().to_string()}})
    };
    let first = structured(&client.tool("zen_execute", step(1, true)), false);
    let mut last = step(2, false);
    last["request"]["continuation_id"] = first["continuation_id"].clone();
    let done = structured(&client.tool("zen_execute", last), false);
    assert_eq!(done["expert_analysis"]["status"], "complete", "{done}");
    let sent = fake
        .fake
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect::<String>();
    assert!(client.finish().success());
    (first["changes"].clone(), sent)
}

#[test]
fn a_root_inside_a_larger_repository_shows_nothing_outside_it() {
    let (_tmp, base) = canonical_tempdir();
    let outer = base.join("outer");
    repository(
        &outer,
        &[("secret.txt", "old secret\n"), ("root/a.txt", "old a\n")],
    );
    fs::write(outer.join("secret.txt"), "OUTSIDE-MARKER\n").unwrap();
    fs::write(outer.join("root/a.txt"), "INSIDE-MARKER\n").unwrap();
    let root = outer.join("root");

    let (changes, sent) = precommit(&root, &root);
    assert!(!changes.to_string().contains("secret.txt"), "{changes}");
    assert!(
        changes["error"]
            .as_str()
            .unwrap()
            .contains("not a git repository"),
        "{changes}"
    );
    assert!(!sent.contains("OUTSIDE-MARKER"), "outside change was sent");
    assert!(!sent.contains("secret.txt"), "outside path was sent");
}

#[test]
fn a_path_inside_the_repository_limits_the_changes_to_it() {
    let (_tmp, base) = canonical_tempdir();
    let repo = base.join("repo");
    repository(&repo, &[("other.txt", "old\n"), ("sub/a.txt", "old a\n")]);
    fs::write(repo.join("other.txt"), "OTHER-MARKER\n").unwrap();
    fs::write(repo.join("sub/a.txt"), "SUB-MARKER\n").unwrap();

    let (changes, sent) = precommit(&repo, &repo.join("sub"));
    assert_eq!(changes["unstaged"], json!(["M\tsub/a.txt"]), "{changes}");
    assert!(sent.contains("SUB-MARKER"), "the requested change was sent");
    assert!(!sent.contains("OTHER-MARKER"), "only the requested path");
}

#[test]
fn a_directory_outside_any_repository_is_not_a_git_repository() {
    let (_tmp, base) = canonical_tempdir();
    let plain = base.join("plain");
    fs::create_dir_all(&plain).unwrap();
    fs::write(plain.join("a.txt"), "text\n").unwrap();
    let (changes, _) = precommit(&plain, &plain);
    let error = changes["error"].as_str().unwrap_or_default();
    assert!(error.contains("not a git repository"), "{changes}");
    assert!(!error.contains("usage"), "{changes}");
}

#[test]
fn a_dot_git_file_pointing_outside_the_roots_is_refused() {
    let (_tmp, base) = canonical_tempdir();
    let elsewhere = base.join("elsewhere");
    repository(&elsewhere, &[("a.txt", "OUTSIDE-BLOB\n")]);
    let root = base.join("root");
    fs::create_dir_all(&root).unwrap();
    fs::write(
        root.join(".git"),
        format!("gitdir: {}\n", elsewhere.join(".git").display()),
    )
    .unwrap();
    fs::write(root.join("a.txt"), "inside edit\n").unwrap();

    let (changes, sent) = precommit(&root, &root);
    let error = changes["error"].as_str().unwrap_or_default();
    assert!(error.contains("outside the allowed roots"), "{changes}");
    assert!(!changes.to_string().contains("a.txt"), "{changes}");
    assert!(!sent.contains("OUTSIDE-BLOB"), "outside objects were read");
}

#[test]
fn repository_config_cannot_run_programs() {
    let (_tmp, base) = canonical_tempdir();
    let repo = base.join("repo");
    repository(&repo, &[("a.txt", "old\n")]);
    let marker = |name: &str| base.join(format!("{name}-ran"));
    let script = |name: &str| {
        let path = base.join(format!("{name}.sh"));
        fs::write(
            &path,
            format!("#!/bin/sh\ntouch '{}'\ncat\n", marker(name).display()),
        )
        .unwrap();
        let mut permissions = fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        fs::set_permissions(&path, permissions).unwrap();
        path.display().to_string()
    };
    git(&repo, &["config", "core.fsmonitor", &script("fsmonitor")]);
    git(&repo, &["config", "filter.evil.clean", &script("filter")]);
    git(&repo, &["config", "diff.external", &script("external")]);
    git(
        &repo,
        &["config", "diff.evil.textconv", &script("textconv")],
    );
    git(&repo, &["config", "core.pager", &script("pager")]);
    fs::write(repo.join(".gitattributes"), "*.txt filter=evil diff=evil\n").unwrap();
    fs::write(repo.join("a.txt"), "EDIT-MARKER\n").unwrap();

    let (changes, sent) = precommit(&repo, &repo);
    assert!(changes.to_string().contains("a.txt"), "{changes}");
    assert!(sent.contains("EDIT-MARKER"), "the diff itself was sent");
    for name in ["fsmonitor", "filter", "external", "textconv", "pager"] {
        assert!(!marker(name).exists(), "the repository ran its {name}");
    }
}
