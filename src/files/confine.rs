//! File access confined to the allowed roots ([`FileAccess`]): the roots
//! themselves (canonical, each checked), a path canonicalized and checked
//! against them before anything is opened (a missing path outside them
//! reported as outside), and a file opened only if it is still a regular
//! file inside them ([`open_confined`]), whatever changed since the check.

use std::{
    ffi::OsStr,
    fs,
    io::{self, Read},
    path::{Component, Path, PathBuf},
};

use super::error::FileError;

/// Splits a path list such as `ZEN_ALLOWED_ROOTS` (separated by `:` on unix,
/// `;` on Windows) into roots, dropping empty entries.
pub fn parse_root_list(value: &OsStr) -> Vec<PathBuf> {
    std::env::split_paths(value)
        .filter(|path| !path.as_os_str().is_empty())
        .collect()
}

/// File access confined to a set of allowed roots.
#[derive(Debug, Clone)]
pub struct FileAccess {
    /// Canonical, deduplicated; the working directory first.
    pub(super) roots: Vec<PathBuf>,
}

impl FileAccess {
    /// Allows `cwd` plus `extra_roots` (from `--allow-root DIR` and
    /// `ZEN_ALLOWED_ROOTS`, see [`parse_root_list`]). Relative extra roots
    /// are taken relative to `cwd`. Each root is canonicalized; a root that
    /// is missing or not a directory is an error naming it, so a typo does
    /// not silently shrink what the agent may read.
    pub fn new(cwd: &Path, extra_roots: &[PathBuf]) -> Result<Self, FileError> {
        let mut roots: Vec<PathBuf> = Vec::with_capacity(1 + extra_roots.len());
        for root in
            std::iter::once(cwd.to_path_buf()).chain(extra_roots.iter().map(|r| cwd.join(r)))
        {
            let canonical = canonical_root(&root)?;
            if !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        Ok(Self { roots })
    }

    /// The canonical allowed roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Canonicalizes `path` (resolving symlinks and `..`) and checks that it
    /// lies under a root. Relative paths are refused: tools send absolute
    /// paths.
    ///
    /// A missing path outside the roots is reported as outside, not as
    /// missing, so errors do not reveal what exists outside the roots.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, FileError> {
        let raw = Path::new(path);
        if path.is_empty() || !raw.is_absolute() {
            return Err(FileError::Relative {
                path: path.to_owned(),
            });
        }
        self.check(raw, path)
    }

    /// The check behind [`resolve`](Self::resolve), for an absolute path;
    /// `shown` names it in errors.
    pub(super) fn check(&self, raw: &Path, shown: &str) -> Result<PathBuf, FileError> {
        match fs::canonicalize(raw) {
            Ok(canonical) if self.is_inside(&canonical) => Ok(canonical),
            Ok(_) => Err(self.outside(shown)),
            Err(error) => {
                if !self.would_be_inside(raw) {
                    Err(self.outside(shown))
                } else if is_not_found(&error) {
                    Err(FileError::Missing {
                        path: shown.to_owned(),
                    })
                } else {
                    Err(FileError::Io {
                        path: shown.to_owned(),
                        message: error.to_string(),
                    })
                }
            }
        }
    }

    fn outside(&self, shown: &str) -> FileError {
        FileError::OutsideRoots {
            path: shown.to_owned(),
            roots: self.roots.clone(),
        }
    }

    pub(super) fn is_inside(&self, canonical: &Path) -> bool {
        self.roots.iter().any(|root| canonical.starts_with(root))
    }

    /// For a path that cannot be canonicalized: would it lie under a root?
    /// Canonicalizes its deepest existing ancestor and applies the rest
    /// lexically (a missing directory cannot be a symlink).
    fn would_be_inside(&self, raw: &Path) -> bool {
        for ancestor in raw.ancestors().skip(1) {
            let Ok(mut resolved) = fs::canonicalize(ancestor) else {
                continue;
            };
            let Ok(rest) = raw.strip_prefix(ancestor) else {
                return false;
            };
            for component in rest.components() {
                match component {
                    Component::Normal(name) => resolved.push(name),
                    Component::ParentDir => {
                        resolved.pop();
                    }
                    Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                }
            }
            return self.is_inside(&resolved);
        }
        false
    }
}

fn canonical_root(root: &Path) -> Result<PathBuf, FileError> {
    let shown = root.display().to_string();
    let canonical = fs::canonicalize(root).map_err(|error| FileError::Root {
        path: shown.clone(),
        message: if is_not_found(&error) {
            "it does not exist".to_owned()
        } else {
            error.to_string()
        },
    })?;
    if !canonical.is_dir() {
        return Err(FileError::Root {
            path: shown,
            message: "it is not a directory".to_owned(),
        });
    }
    Ok(canonical)
}

fn is_not_found(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Opens a checked path for reading, only if it is still a regular file
/// inside the roots.
///
/// The path was canonicalized and checked before, but the file system can
/// change in between. So the open does not block (a FIFO would otherwise
/// hang it), does not follow a symlink swapped in at the last component,
/// and the file actually opened must be a regular file whose real path (as
/// the kernel reports it for the open descriptor) lies inside a root: a
/// directory swapped for a symlink after the check is caught here.
pub(super) fn open_confined(path: &Path, roots: &[PathBuf]) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let opened = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        if !roots.iter().any(|root| opened.starts_with(root)) {
            return Err(io::Error::other(
                "the file changed into one outside the allowed roots",
            ));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = roots;
    Ok(file)
}

impl FileAccess {
    /// Reads a checked (canonical) path whole, refusing anything that is not
    /// a regular file inside the roots or that is larger than `cap` bytes;
    /// the cap holds while reading, whatever the file claims its size is.
    pub fn read_file(&self, canonical: &Path, cap: usize) -> io::Result<Vec<u8>> {
        let file = open_confined(canonical, &self.roots)?;
        let mut bytes = Vec::new();
        file.take(cap as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() > cap {
            return Err(io::Error::other(format!("larger than {cap} bytes")));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_list_splits_and_drops_empty_entries() {
        let roots = parse_root_list(OsStr::new("/a::/b/c:"));
        assert_eq!(roots, vec![PathBuf::from("/a"), PathBuf::from("/b/c")]);
    }
}
