//! Where the gateway's files live: the cache and state directories
//! ([`GatewayDirs`]) and a file name for each server (any character may be
//! in its name). The writes themselves go through
//! `platform::private_file`, whole or not at all.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::config::hex;

/// Where the gateway's files live.
#[derive(Debug, Clone)]
pub struct GatewayDirs {
    pub cache: PathBuf,
    pub state: PathBuf,
}

impl GatewayDirs {
    /// zenmode's cache and state directories (`platform::dirs`).
    pub fn from_env() -> Self {
        GatewayDirs {
            cache: crate::platform::dirs::cache_dir(),
            state: crate::platform::dirs::state_dir(),
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
