//! The checks against SIGBUS: SQLite maps the wal-index (`-shm`), and a
//! write to that mapping once the file cannot be written ends the whole
//! process instead of failing. So every batch first checks that the files
//! can be written ([`unwritable`]), and that they are still the ones the
//! connection opened (device and inode, [`file_ids`]).

use std::path::{Path, PathBuf};

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct FileId {
    device: u64,
    inode: u64,
}

/// The database at `path`, its WAL and its wal-index.
pub(super) fn store_files(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    [path.to_owned(), with("-wal"), with("-shm")]
}

/// The device and inode of each of the store's files, `None` where a file
/// is missing (or cannot be looked at).
pub(super) fn file_ids(path: &Path) -> [Option<FileId>; 3] {
    store_files(path).map(|file| {
        let metadata = std::fs::metadata(file).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileId {
                device: metadata.dev(),
                inode: metadata.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Some(FileId::default())
        }
    })
}

/// Why the store's files cannot be written, if one of them cannot (made
/// immutable, read-only, on a file system remounted read-only). SQLite
/// writes the wal-index (`-shm`) through a shared memory mapping, for
/// reads as well as writes; once the file cannot be written, the next
/// write to a page of that mapping ends the whole process with SIGBUS
/// instead of returning an error. So every batch checks first. (A file
/// made unwritable in the instant between the check and the write can
/// still fault; nothing short of giving up sharing the file between
/// processes avoids the mapping: SQLite keeps the wal-index in the heap
/// only with an exclusive lock.) Missing files are fine: SQLite creates
/// them.
pub(super) fn unwritable(path: &Path) -> Option<String> {
    #[cfg(unix)]
    for file in store_files(path) {
        use std::os::unix::ffi::OsStrExt;
        let Ok(name) = std::ffi::CString::new(file.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        if unsafe { libc::access(name.as_ptr(), libc::W_OK) } == 0 {
            continue;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::NotFound {
            return Some(format!("{} cannot be written: {error}", file.display()));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    None
}
