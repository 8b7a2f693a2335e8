//! Where the gateway's files live and how they are written: the cache and
//! state directories ([`GatewayDirs`]), a file name for each server (any
//! character may be in its name), and the writes themselves.
//!
//! Files are written to a temporary name and renamed, so a reader never sees
//! half a file, and two processes writing at once leave one whole version.
//! Kept apart from the files that use it (`catalog_cache.rs`, `pins.rs`,
//! `status_file.rs`, the cached capabilities and the OAuth token files).

use std::{
    io,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use super::config::hex;

/// Where the gateway's files live.
#[derive(Debug, Clone)]
pub struct GatewayDirs {
    pub cache: PathBuf,
    pub state: PathBuf,
}

impl GatewayDirs {
    /// `ZEN_CACHE_DIR` / `ZEN_STATE_DIR`, else the platform's cache and state
    /// directories (`~/.cache/zenmode`, `~/.local/state/zenmode` on Linux).
    pub fn from_env() -> Self {
        let pick = |var: &str, platform: Option<PathBuf>, fallback: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| platform.map(|dir| dir.join("zenmode")))
                .unwrap_or_else(|| std::env::temp_dir().join(fallback))
        };
        GatewayDirs {
            cache: pick("ZEN_CACHE_DIR", dirs::cache_dir(), "zenmode-cache"),
            state: pick(
                "ZEN_STATE_DIR",
                dirs::state_dir().or_else(dirs::data_local_dir),
                "zenmode-state",
            ),
        }
    }

    pub fn under(root: &Path) -> Self {
        GatewayDirs {
            cache: root.join("cache"),
            state: root.join("state"),
        }
    }

    pub(super) fn catalog_path(&self, server: &str) -> PathBuf {
        self.cache
            .join("upstreams")
            .join(format!("{}.json", file_stem(server)))
    }

    pub(super) fn approved_path(&self, server: &str) -> PathBuf {
        self.state
            .join("upstreams")
            .join(format!("{}.approved.json", file_stem(server)))
    }

    pub(super) fn pins_path(&self, server: &str) -> PathBuf {
        self.state
            .join("upstreams")
            .join(format!("{}.pins.json", file_stem(server)))
    }
}

/// A file name for a server name that may hold any character.
pub(super) fn file_stem(server: &str) -> String {
    let safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let digest = Sha256::digest(server.as_bytes());
    format!("{safe}-{}", &hex(&digest)[..8])
}

/// Creates `dir` (and its parents) readable by the user alone.
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Like [`write_atomically`], for a file only the user may read (0600 in
/// a 0700 directory): state and logs can quote what a server printed.
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    io::Write::write_all(&mut options.open(&temporary)?, bytes)?;
    std::fs::rename(&temporary, path)
}

pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}
