//! Writing files that may hold secrets (the upstreams file, OAuth tokens,
//! pins, status, the setup's copies of client files): owner-only, whole or
//! not at all. Every such write in zenmode goes through here, so the rule
//! is kept in one place.
//!
//! A file is written to a temporary name beside it and renamed over it: a
//! reader never sees half a file, and two writers leave one whole version.
//! The temporary name is unique per process and per write, so writers never
//! trip over each other's temporary files.

use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// The mode of a file only its owner may read and write.
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of a directory only its owner may enter.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Creates `dir` and its missing parents, each created one owner-only.
/// A directory that exists keeps its mode: it may be the user's own
/// (`~`, `~/.cursor`), which zenmode has no business changing.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, PRIVATE_DIR_MODE);
    builder.create(dir)
}

/// Makes an existing directory owner-only (the OAuth token directory, which
/// holds nothing but secrets).
pub fn restrict_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Whether a write waits for the disk before the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// What a person wrote or would have to redo (the upstreams file, OAuth
    /// tokens, setup's copies): on disk before it replaces the old file.
    ToDisk,
    /// A record rewritten on every call (status, pins, caches): a crash may
    /// lose the last version but never leaves half of one, and no call
    /// waits for the disk.
    Later,
}

/// Replaces `path` with `bytes`, owner-only (0600), creating its directory
/// owner-only when missing.
pub fn write_private(path: &Path, bytes: &[u8], flush: Flush) -> io::Result<()> {
    write_replacing(path, bytes, Some(PRIVATE_FILE_MODE), flush)
}

/// Replaces `path` with `bytes` whole. With `mode`, the file gets exactly
/// that mode (also when one was left from before) and a missing directory
/// is created owner-only; without, the file and directory get the
/// defaults (the catalog cache: nothing secret in it).
pub fn write_replacing(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    flush: Flush,
) -> io::Result<()> {
    // A symbolic link (a dotfiles repository linked into `~`) stays one:
    // the file it points to is the one replaced, atomically where it lives.
    let resolved = through_links(path)?;
    let path = resolved.as_path();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match mode {
        Some(_) => create_private_dir(dir)?,
        None => fs::create_dir_all(dir)?,
    }
    let temporary = temporary_beside(path);
    let written = write_new(&temporary, bytes, mode, flush);
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
        return written;
    }
    fs::rename(&temporary, path).inspect_err(|_| {
        let _ = fs::remove_file(&temporary);
    })
}

/// The most links followed before giving up, as the kernel does (ELOOP).
const MAX_LINKS: usize = 40;

/// The file `path` names once every symbolic link on it is followed: the
/// path itself when it is not a link (or does not exist), else the link's
/// target, which need not exist yet. A relative target is taken from the
/// link's directory.
pub fn through_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let target = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LINKS} symbolic links in a row",
        path.display()
    )))
}

/// How long [`lock_beside`] waits for another process to let go: holders
/// keep the lock only from their read to their write, never while a server
/// starts, so a wait this long means a stuck process.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Takes the exclusive lock of `path`: a lock file `.NAME.lock` beside the
/// file (beside the target, for a symbolic link, so every way to the file
/// shares one lock), created owner-only and never removed, since removing
/// a lock file lets two processes hold two different ones. Held until the
/// returned file is dropped, also when the process dies. Waits at most
/// [`LOCK_WAIT`] for another holder, then fails.
pub fn lock_beside(path: &Path) -> io::Result<fs::File> {
    let target = through_links(path)?;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    let lock = options.open(dir.join(format!(".{name}.lock")))?;
    let started = Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "another process has held the lock of {} for {}s",
                        path.display(),
                        LOCK_WAIT.as_secs()
                    ),
                ));
            }
            Err(fs::TryLockError::Error(error)) => return Err(error),
        }
    }
}

/// Opens `path` for appending, creating it owner-only (and its directory):
/// a log that may quote what a server printed.
pub fn open_private_append(path: &Path) -> io::Result<fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let mut options = fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    options.open(path)
}

/// Opens (creating it owner-only, with its directory) the lock file at
/// `path`, for an advisory lock (`File::lock`) that processes share. Its
/// content is nothing; only the lock matters.
pub fn open_lock_file(path: &Path) -> io::Result<fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    let mut options = fs::OpenOptions::new();
    options.create(true).read(true).write(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
    options.open(path)
}

fn write_new(temporary: &Path, bytes: &[u8], mode: Option<u32>, flush: Flush) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    if let Some(mode) = mode {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    }
    let mut out = options.open(temporary)?;
    // The umask may have taken bits away from a mode wider than 0600.
    #[cfg(unix)]
    if let Some(mode) = mode {
        out.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    out.write_all(bytes)?;
    match flush {
        Flush::ToDisk => out.sync_all(),
        Flush::Later => Ok(()),
    }
}

/// `.NAME.PID.N.tmp` beside `path`: unique for this process and write.
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_write_is_owner_only_in_an_owner_only_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let path = root.join("a/b/secret.json");
        write_private(&path, b"{}", Flush::ToDisk).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"{}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&root.join("a/b")), 0o700);
            assert_eq!(mode(&root.join("a")), 0o700);
        }
    }

    #[test]
    fn a_replaced_file_takes_the_new_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let path = root.join("file");
        fs::write(&path, b"old").unwrap();
        write_replacing(&path, b"new", Some(0o640), Flush::Later).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o640
            );
        }
        let left: Vec<_> = fs::read_dir(root).unwrap().collect();
        assert_eq!(left.len(), 1, "only the file itself: {left:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_file_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join("dotfiles")).unwrap();
        fs::write(root.join("dotfiles/real.json"), b"old").unwrap();
        // A relative link to a relative link.
        std::os::unix::fs::symlink("dotfiles/real.json", root.join("middle")).unwrap();
        std::os::unix::fs::symlink("middle", root.join("config.json")).unwrap();
        let link = root.join("config.json");
        write_private(&link, b"new", Flush::ToDisk).unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            fs::symlink_metadata(root.join("middle"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(root.join("dotfiles/real.json")).unwrap(), b"new");
        let left: Vec<_> = fs::read_dir(root.join("dotfiles")).unwrap().collect();
        assert_eq!(left.len(), 1, "the temporary went: {left:?}");
        // A dangling link gets its target created.
        std::os::unix::fs::symlink("dotfiles/later.json", root.join("later")).unwrap();
        write_private(&root.join("later"), b"x", Flush::Later).unwrap();
        assert_eq!(fs::read(root.join("dotfiles/later.json")).unwrap(), b"x");
        // A loop is an error, and nothing is written.
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(write_private(&root.join("loop"), b"x", Flush::Later).is_err());
    }

    #[test]
    fn a_lock_is_held_until_dropped_and_shared_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let path = root.join("upstreams.json");
        let other = || fs::File::open(root.join(".upstreams.json.lock")).unwrap();
        let held = lock_beside(&path).unwrap();
        assert!(matches!(
            other().try_lock(),
            Err(fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other().try_lock().expect("free once dropped");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&path, root.join("link.json")).unwrap();
            let _held = lock_beside(&root.join("link.json")).unwrap();
            assert!(
                matches!(other().try_lock(), Err(fs::TryLockError::WouldBlock)),
                "the link's lock is the file's"
            );
        }
        assert!(!path.exists(), "locking creates only the lock file");
    }

    #[test]
    fn writers_at_once_each_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let path = root.join("shared.json");
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let text = format!("{i}").repeat(10_000);
                    write_private(&path, text.as_bytes(), Flush::Later)
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap().expect("no writer fails");
        }
        let text = fs::read_to_string(&path).unwrap();
        let first = text.chars().next().unwrap();
        assert!(text.len() == 10_000 && text.chars().all(|c| c == first));
    }
}
