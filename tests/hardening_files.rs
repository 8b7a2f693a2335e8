//! Issue 9, file access: special files, read caps and the check/open race.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    thread,
    time::Duration,
};

use common::{Client, fake_provider::BackgroundFake, structured, zenmode};
use serde_json::json;
use zenmode::files::{FileAccess, FileError};

/// A canonical temporary directory with `root/` (the allowed root) and
/// `outside/secret.txt` beside it.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
        Fixture {
            _tmp: tmp,
            root,
            outside,
        }
    }

    fn access(&self) -> FileAccess {
        FileAccess::new(&self.root, &[]).unwrap()
    }
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `work` on a thread and fails (instead of hanging the test run) if it
/// does not finish in time: a blocking open is what is being tested.
fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("the read returned instead of blocking")
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let fixture = Fixture::new();
    let fifo = fixture.root.join("shot.png");
    mkfifo(&fifo);
    let files = fixture.access();
    let error = finishes(move || files.read_regular_capped(&fifo, 1024)).unwrap_err();
    assert!(matches!(error, FileError::NotRegular { .. }), "{error:?}");
    assert!(error.to_string().contains("not a regular file"), "{error}");

    // A character device (read forever by a plain read) inside an allowed root.
    let files = FileAccess::new(&fixture.root, &[PathBuf::from("/dev")]).unwrap();
    let error = finishes(move || files.read_regular_capped(Path::new("/dev/zero"), 1024));
    assert!(
        matches!(error, Err(FileError::NotRegular { .. })),
        "{error:?}"
    );

    // Embedding skips a FIFO given by name, promptly.
    let files = fixture.access();
    let fifo = fixture.root.join("shot.png").display().to_string();
    let embedded = finishes(move || files.embed(&[fifo], 10_000));
    assert!(embedded.files.is_empty());
    assert!(
        embedded.skipped[0]
            .to_string()
            .contains("not a regular file"),
        "{:?}",
        embedded.skipped
    );
}

#[test]
fn reads_stop_at_the_cap() {
    let fixture = Fixture::new();
    let big = fixture.root.join("big.png");
    fs::write(&big, vec![7u8; 4097]).unwrap();
    let files = fixture.access();
    let error = files.read_regular_capped(&big, 4096).unwrap_err();
    assert_eq!(
        error,
        FileError::TooLarge {
            path: big.display().to_string(),
            max_bytes: 4096
        }
    );
    assert_eq!(files.read_regular_capped(&big, 4097).unwrap().len(), 4097);
    let error = files
        .read_regular_capped(&fixture.outside.join("secret.txt"), 4096)
        .unwrap_err();
    assert!(matches!(error, FileError::OutsideRoots { .. }), "{error:?}");
}

/// A FIFO named like an image used to freeze the whole server: the size
/// check passed (0 bytes) and the read blocked the runtime.
#[test]
fn a_fifo_image_gets_an_error_and_the_server_keeps_serving() {
    let fake = BackgroundFake::start(Vec::new());
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("screen.png");
    mkfifo(&fifo);
    let mut command = zenmode(&["serve"]);
    command
        .current_dir(dir.path())
        .env("OPENAI_API_KEY", "sk-hardening-secret")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
    let mut client = Client::spawn_command(command);
    client.initialize();
    let result = client.tool(
        "zen_execute",
        json!({"mode": "chat", "request": {
            "prompt": "what is on screen?", "model": "gpt-5",
            "images": [fifo.display().to_string()],
            "working_directory_absolute_path": dir.path().display().to_string()}}),
    );
    let refused = structured(&result, true);
    assert_eq!(refused["error"], "image", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{refused}"
    );
    assert_eq!(client.tool_names().len(), 2);
    assert!(fake.fake.requests().is_empty(), "nothing was sent");
    assert!(client.finish().success());
}

/// A directory on the checked path is swapped for a symlink to the outside
/// while files are read through it. Whatever the interleaving, outside
/// content must never come back: the opened file itself is checked.
#[test]
fn swapping_a_directory_for_a_symlink_never_leaks_outside_content() {
    let fixture = Fixture::new();
    let dir = fixture.root.join("d");
    let parked = fixture.root.join("d_real");
    let link = fixture.root.join("d_link");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("secret.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&fixture.outside, &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (dir, parked, link) = (dir.clone(), parked.clone(), link.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // d becomes the symlink, then the real directory again.
                let _ = fs::rename(&dir, &parked);
                let _ = fs::rename(&link, &dir);
                let _ = fs::rename(&dir, &link);
                let _ = fs::rename(&parked, &dir);
            }
        })
    };

    let files = fixture.access();
    let target = dir.join("secret.txt");
    let shown = target.display().to_string();
    let mut inside_reads = 0;
    for _ in 0..20_000 {
        if let Ok(bytes) = files.read_regular_capped(&target, 1024) {
            assert_eq!(bytes, b"inside\n", "outside content was read");
            inside_reads += 1;
        }
        let embedded = files.embed(std::slice::from_ref(&shown), 10_000);
        assert!(
            !embedded.text.contains("top secret"),
            "outside content was embedded"
        );
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    // The race did not simply refuse everything.
    assert!(inside_reads > 0);
}

/// The checked file itself is replaced by a symlink to the outside (an
/// atomic rename) while it is read: the open must not follow it.
#[test]
fn swapping_the_file_for_a_symlink_never_leaks_outside_content() {
    let fixture = Fixture::new();
    let target = fixture.root.join("notes.txt");
    let parked = fixture.root.join("notes.real");
    let link = fixture.root.join("notes.link");
    fs::write(&target, "inside\n").unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (target, parked, link) = (target.clone(), parked.clone(), link.clone());
        let secret = fixture.outside.join("secret.txt");
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink(&secret, &link);
                let _ = fs::hard_link(&target, &parked);
                // notes.txt becomes the symlink, then the file again.
                let _ = fs::rename(&link, &target);
                let _ = fs::rename(&parked, &target);
            }
        })
    };

    let files = fixture.access();
    let shown = target.display().to_string();
    let mut inside_reads = 0;
    for _ in 0..20_000 {
        if let Ok(bytes) = files.read_regular_capped(&target, 1024) {
            assert_eq!(bytes, b"inside\n", "outside content was read");
            inside_reads += 1;
        }
        let embedded = files.embed(std::slice::from_ref(&shown), 10_000);
        assert!(
            !embedded.text.contains("top secret"),
            "outside content was embedded"
        );
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(inside_reads > 0);
}
