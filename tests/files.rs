//! Path confinement and file embedding (`zenmode::files`).

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;
use zenmode::files::{FileAccess, FileError, SkipReason, estimate_tokens};

/// A root directory and a sibling directory outside it.
struct Fixture {
    _tmp: TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Canonical, so expectations compare with what `resolve` returns
        // (the temp dir itself may sit behind a symlink).
        let base = fs::canonicalize(tmp.path()).expect("canonical tempdir");
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir_all(&root).expect("root");
        fs::create_dir_all(&outside).expect("outside");
        fs::write(outside.join("secret.txt"), "top secret\n").expect("secret");
        Self {
            _tmp: tmp,
            root,
            outside,
        }
    }

    fn access(&self) -> FileAccess {
        FileAccess::new(&self.root, &[]).expect("access")
    }

    fn write(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("parent");
        }
        fs::write(&path, content).expect("write");
        path
    }
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

fn embedded_paths(embedded: &zenmode::files::Embedded) -> Vec<PathBuf> {
    embedded.files.iter().map(|f| f.path.clone()).collect()
}

#[test]
fn roots_are_canonical_and_missing_roots_are_named() {
    let fx = Fixture::new();
    let dotted = fx.root.join("..").join("outside");
    let access = FileAccess::new(&fx.root, &[dotted, fx.root.clone()]).expect("access");
    assert_eq!(access.roots(), [fx.root.clone(), fx.outside.clone()]);

    let missing = fx.root.join("nope");
    let error = FileAccess::new(&fx.root, std::slice::from_ref(&missing)).unwrap_err();
    assert!(matches!(error, FileError::Root { .. }));
    assert!(error.to_string().contains(&s(&missing)), "{error}");

    let file = fx.write("plain.txt", "x");
    let error = FileAccess::new(&fx.root, &[file]).unwrap_err();
    assert!(error.to_string().contains("not a directory"), "{error}");
}

#[test]
fn relative_extra_roots_are_taken_from_cwd() {
    let fx = Fixture::new();
    let access = FileAccess::new(&fx.root, &[PathBuf::from("../outside")]).expect("access");
    assert!(access.roots().contains(&fx.outside));
}

#[test]
fn resolves_files_inside_the_root() {
    let fx = Fixture::new();
    let file = fx.write("src/main.rs", "fn main() {}\n");
    let access = fx.access();
    assert_eq!(access.resolve(&s(&file)).expect("inside"), file);
    // `..` that stays inside is fine.
    let dotted = fx.root.join("src/../src/main.rs");
    assert_eq!(access.resolve(&s(&dotted)).expect("inside"), file);
}

#[test]
fn dotdot_traversal_is_refused() {
    let fx = Fixture::new();
    let access = fx.access();
    let escape = format!("{}/../outside/secret.txt", s(&fx.root));
    let error = access.resolve(&escape).unwrap_err();
    assert!(matches!(error, FileError::OutsideRoots { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&escape), "{message}");
    assert!(message.contains("--allow-root"), "{message}");

    // Through a missing directory, too: still outside, not "missing".
    let through_missing = format!("{}/nope/../../outside/secret.txt", s(&fx.root));
    assert!(matches!(
        access.resolve(&through_missing),
        Err(FileError::OutsideRoots { .. })
    ));
}

#[test]
fn absolute_paths_outside_are_refused_even_when_missing() {
    let fx = Fixture::new();
    let access = fx.access();
    let outside = fx.outside.join("secret.txt");
    assert!(matches!(
        access.resolve(&s(&outside)),
        Err(FileError::OutsideRoots { .. })
    ));
    // A missing file outside does not reveal that it is missing.
    let ghost = fx.outside.join("ghost.txt");
    assert!(matches!(
        access.resolve(&s(&ghost)),
        Err(FileError::OutsideRoots { .. })
    ));
}

#[test]
fn relative_paths_are_refused() {
    let fx = Fixture::new();
    fx.write("a.txt", "a");
    let access = fx.access();
    for path in ["a.txt", "./a.txt", "", "../outside/secret.txt"] {
        let error = access.resolve(path).unwrap_err();
        assert!(
            matches!(error, FileError::Relative { .. }),
            "{path}: {error:?}"
        );
        assert!(error.to_string().contains("absolute"), "{error}");
    }
}

#[test]
fn missing_files_inside_are_named() {
    let fx = Fixture::new();
    let access = fx.access();
    let missing = fx.root.join("src/nothing.rs");
    let error = access.resolve(&s(&missing)).unwrap_err();
    assert_eq!(error, FileError::Missing { path: s(&missing) });
    assert_eq!(error.to_string(), format!("{} does not exist", s(&missing)));

    let embedded = access.embed(&[s(&missing)], 1_000);
    assert!(embedded.files.is_empty());
    assert_eq!(embedded.skipped.len(), 1);
    assert_eq!(embedded.skipped[0].reason, SkipReason::Missing);
    assert!(embedded.skipped[0].to_string().contains(&s(&missing)));
}

#[cfg(unix)]
#[test]
fn symlink_escapes_are_refused() {
    use std::os::unix::fs::symlink;

    let fx = Fixture::new();
    let access = fx.access();
    let file_link = fx.root.join("link.txt");
    symlink(fx.outside.join("secret.txt"), &file_link).expect("file symlink");
    let dir_link = fx.root.join("linkdir");
    symlink(&fx.outside, &dir_link).expect("dir symlink");

    assert!(matches!(
        access.resolve(&s(&file_link)),
        Err(FileError::OutsideRoots { .. })
    ));
    assert!(matches!(
        access.resolve(&s(&dir_link)),
        Err(FileError::OutsideRoots { .. })
    ));
    assert!(matches!(
        access.resolve(&s(&dir_link.join("secret.txt"))),
        Err(FileError::OutsideRoots { .. })
    ));

    // Directly and through directory expansion, nothing outside is read.
    let embedded = access.embed(
        &[s(&file_link), s(&dir_link.join("secret.txt")), s(&fx.root)],
        10_000,
    );
    assert!(embedded.files.is_empty(), "{:?}", embedded.files);
    assert!(!embedded.text.contains("top secret"));
    assert!(
        embedded
            .skipped
            .iter()
            .all(|skip| skip.reason == SkipReason::OutsideRoots),
        "{:?}",
        embedded.skipped
    );
    // The two given paths, then both links found by expanding the root.
    assert_eq!(embedded.skipped.len(), 4, "{:?}", embedded.skipped);
}

#[cfg(unix)]
#[test]
fn symlinks_inside_the_root_are_followed_for_files_only() {
    use std::os::unix::fs::symlink;

    let fx = Fixture::new();
    let real = fx.write("real/a.txt", "alpha\n");
    symlink(&real, fx.root.join("alias.txt")).expect("file symlink");
    symlink(fx.root.join("real"), fx.root.join("loop")).expect("dir symlink");
    let access = fx.access();

    let embedded = access.embed(&[s(&fx.root)], 10_000);
    // alias.txt resolves to real/a.txt; the file is embedded once.
    assert_eq!(embedded_paths(&embedded), std::slice::from_ref(&real));
    assert_eq!(embedded.skipped.len(), 1, "{:?}", embedded.skipped);
    assert_eq!(embedded.skipped[0].reason, SkipReason::SymlinkedDirectory);

    // Given explicitly, a symlinked directory inside the root is expanded.
    let embedded = access.embed(&[s(&fx.root.join("loop"))], 10_000);
    assert_eq!(embedded_paths(&embedded), [real]);
}

#[test]
fn binary_files_are_skipped_and_reported() {
    let fx = Fixture::new();
    let nul = fx.root.join("image.bin");
    fs::write(&nul, b"PNG\0\x01\x02 data").expect("binary");
    let latin1 = fx.root.join("latin1.txt");
    fs::write(&latin1, b"caf\xe9\n").expect("latin1");
    let text = fx.write("text.txt", "hello\n");
    let access = fx.access();

    let embedded = access.embed(&[s(&nul), s(&latin1), s(&text)], 10_000);
    assert_eq!(embedded_paths(&embedded), [text]);
    let reasons: Vec<_> = embedded
        .skipped
        .iter()
        .map(|k| (&k.path, &k.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            (&s(&nul), &SkipReason::Binary),
            (&s(&latin1), &SkipReason::Binary)
        ]
    );
    assert!(embedded.skipped[0].to_string().contains("binary"));
}

#[test]
fn directories_expand_sorted_and_respect_ignore_files() {
    let fx = Fixture::new();
    fx.write(".gitignore", "target/\n*.log\n!keep.log\n");
    fx.write("sub/.ignore", "local.txt\n");
    let b = fx.write("b.rs", "b\n");
    let a = fx.write("a.rs", "a\n");
    let keep = fx.write("keep.log", "kept\n");
    fx.write("debug.log", "noise\n");
    fx.write("target/out.rs", "built\n");
    fx.write(".hidden/x.rs", "hidden\n");
    fx.write(".env", "SECRET=1\n");
    fx.write("sub/local.txt", "ignored\n");
    let sub = fx.write("sub/mod.rs", "mod\n");
    let sub_log = fx.root.join("sub/deep.log");
    fs::write(&sub_log, "ignored by the parent's .gitignore\n").expect("log");
    let access = fx.access();

    let embedded = access.embed(&[s(&fx.root)], 10_000);
    assert_eq!(embedded_paths(&embedded), [a, b, keep, sub.clone()]);
    assert!(embedded.skipped.is_empty(), "{:?}", embedded.skipped);

    // A subdirectory still honours the root's .gitignore (`*.log`).
    let embedded = access.embed(&[s(&fx.root.join("sub"))], 10_000);
    assert_eq!(embedded_paths(&embedded), [sub]);

    // An ignored file given explicitly is still embedded: it was asked for.
    let embedded = access.embed(&[s(&sub_log)], 10_000);
    assert_eq!(embedded_paths(&embedded), [sub_log]);
}

#[test]
fn files_are_line_numbered() {
    let fx = Fixture::new();
    let file = fx.write("main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let embedded = fx.access().embed(&[s(&file)], 10_000);
    let expected = format!(
        "--- BEGIN FILE: {p} ---\n   1│ fn main() {{\n   2│     println!(\"hi\");\n   3│ }}\n--- END FILE: {p} ---\n\n",
        p = s(&file)
    );
    assert_eq!(embedded.text, expected);
    assert_eq!(embedded.files[0].lines, 3);
    assert_eq!(embedded.files[0].tokens, estimate_tokens(&expected));
    assert_eq!(embedded.tokens, embedded.files[0].tokens);
}

#[test]
fn budget_cuts_off_in_priority_order() {
    let fx = Fixture::new();
    let first = fx.write("first.txt", &"first line\n".repeat(10));
    let big = fx.write("big.txt", &"a much longer line of text\n".repeat(200));
    let small = fx.write("small.txt", "tiny\n");
    let access = fx.access();

    let one = access.embed(&[s(&first)], 10_000).tokens;
    let embedded = access.embed(&[s(&first), s(&big), s(&small)], one + 100);
    assert_eq!(embedded_paths(&embedded), std::slice::from_ref(&first));
    // Once a file does not fit, later files are not added, even small ones.
    let skipped: Vec<_> = embedded
        .skipped
        .iter()
        .map(|k| (&k.path, &k.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            (&s(&big), &SkipReason::OverBudget),
            (&s(&small), &SkipReason::OverBudget)
        ]
    );
    assert!(embedded.tokens <= one + 100);
    assert!(estimate_tokens(&embedded.text) <= embedded.tokens);

    // The caller's order is the priority.
    let embedded = access.embed(&[s(&small), s(&first)], one + 100);
    assert_eq!(embedded_paths(&embedded), [small, first]);

    // A zero budget embeds nothing.
    let embedded = access.embed(&[s(&big)], 0);
    assert!(embedded.files.is_empty());
    assert_eq!(embedded.skipped[0].reason, SkipReason::OverBudget);
}

#[test]
fn duplicates_are_embedded_once() {
    let fx = Fixture::new();
    let a = fx.write("a.txt", "a\n");
    let access = fx.access();
    let dotted = format!("{}/./a.txt", s(&fx.root));
    let embedded = access.embed(&[s(&a), dotted, s(&fx.root)], 10_000);
    assert_eq!(embedded_paths(&embedded), [a]);
    assert!(embedded.skipped.is_empty());
}

#[test]
fn extra_roots_widen_access() {
    let fx = Fixture::new();
    let access = FileAccess::new(&fx.root, std::slice::from_ref(&fx.outside)).expect("access");
    let secret = fx.outside.join("secret.txt");
    let embedded = access.embed(&[s(&secret)], 10_000);
    assert_eq!(embedded_paths(&embedded), [secret]);
    assert!(embedded.text.contains("   1│ top secret\n"));
}

/// Runs `work` on a thread and fails the test if it has not finished in
/// five seconds: a read that blocks must show up as a failure, not a hang.
fn within_five_seconds<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("the read blocked")
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let fixture = Fixture::new();
    let fifo = fixture.root.join("screen.png");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let access = fixture.access();
    let canonical = access.resolve(fifo.to_str().unwrap()).unwrap();
    let reader = access.clone();
    let refused = within_five_seconds(move || reader.read_file(&canonical, 1024));
    let error = refused.unwrap_err().to_string();
    assert!(error.contains("not a regular file"), "{error}");

    // Embedding skips it the same way.
    let listed = fifo.to_str().unwrap().to_owned();
    let embedded = within_five_seconds(move || access.embed(&[listed], 10_000));
    assert!(embedded.files.is_empty(), "{embedded:?}");
    assert_eq!(embedded.skipped.len(), 1, "{embedded:?}");
}

#[test]
fn read_file_holds_its_cap_while_reading() {
    let fixture = Fixture::new();
    let path = fixture.write("big.png", &"x".repeat(2_000));
    let access = fixture.access();
    assert_eq!(access.read_file(&path, 2_000).unwrap().len(), 2_000);
    let error = access.read_file(&path, 1_999).unwrap_err().to_string();
    assert!(error.contains("larger than 1999 bytes"), "{error}");
}

/// A symlink swapped in for a checked file, again and again while reads
/// run: no read may ever return the outside file's content.
#[cfg(target_os = "linux")]
#[test]
fn a_symlink_swapped_in_after_the_check_never_leaks() {
    let fixture = Fixture::new();
    let inside = fixture.write("data.txt", "inside\n");
    let access = fixture.access();
    let canonical = access.resolve(inside.to_str().unwrap()).unwrap();
    let secret = fixture.outside.join("secret.txt");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (path, secret) = (canonical.clone(), secret.clone());
        std::thread::spawn(move || {
            let swap = path.with_extension("swap");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = fs::remove_file(&swap);
                let _ = std::os::unix::fs::symlink(&secret, &swap);
                let _ = fs::rename(&swap, &path);
                let _ = fs::write(&swap, "inside\n");
                let _ = fs::rename(&swap, &path);
            }
        })
    };
    let mut leaked = 0;
    for _ in 0..2_000 {
        if let Ok(bytes) = access.read_file(&canonical, 1024)
            && bytes.starts_with(b"top secret")
        {
            leaked += 1;
        }
        let listed = canonical.to_str().unwrap().to_owned();
        let embedded = access.embed(&[listed], 10_000);
        if embedded.text.contains("top secret") {
            leaked += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(leaked, 0, "outside content came through {leaked} times");
}

/// A directory of many files that cannot be embedded is summarised: counts
/// by reason and a short sample, not one line per file.
#[test]
fn many_left_out_files_are_summarised() {
    let fixture = Fixture::new();
    for index in 0..300 {
        fs::write(
            fixture.root.join(format!("blob{index:03}.bin")),
            b"\0binary",
        )
        .unwrap();
    }
    fixture.write("small.txt", "fits\n");
    let embedded = fixture
        .access()
        .embed(&[fixture.root.display().to_string()], 10_000);
    assert_eq!(embedded.skipped.len(), 300);
    let summary = embedded.left_out_summary().unwrap();
    assert_eq!(summary.count, 300);
    assert_eq!(summary.sample.len(), zenmode::files::LEFT_OUT_SAMPLE);
    assert_eq!(summary.by_reason, [("binary file".to_owned(), 300)]);
    let text = summary.to_markdown();
    assert!(
        text.contains("300 files in all (300 binary file)"),
        "{text}"
    );
    assert!(text.lines().count() <= zenmode::files::LEFT_OUT_SAMPLE + 1);
    let nothing_left_out = fixture.access().embed(
        &[fixture.root.join("small.txt").display().to_string()],
        10_000,
    );
    assert!(nothing_left_out.left_out_summary().is_none());
}
