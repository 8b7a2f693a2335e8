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
