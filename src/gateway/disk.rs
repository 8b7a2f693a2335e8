//! Where the gateway's files live: the cache, state and token directories
//! ([`GatewayDirs`]), and every file zenmode keeps for one server
//! ([`ServerFiles`], the one place they are named; any character may be in
//! a server's name). The writes themselves go through
//! `platform::private_file`, whole or not at all.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where the gateway's files live.
#[derive(Debug, Clone)]
pub struct GatewayDirs {
    pub cache: PathBuf,
    pub state: PathBuf,
    /// OAuth token files (they hold refresh tokens: the configuration
    /// directory, not a cache).
    pub tokens: PathBuf,
}

impl GatewayDirs {
    /// zenmode's cache and state directories (`platform::dirs`).
    pub fn from_env() -> Self {
        GatewayDirs {
            cache: crate::platform::dirs::cache_dir(),
            state: crate::platform::dirs::state_dir(),
            tokens: crate::platform::dirs::config_dir().join("oauth"),
        }
    }

    pub fn under(root: &Path) -> Self {
        GatewayDirs {
            cache: root.join("cache"),
            state: root.join("state"),
            tokens: root.join("oauth"),
        }
    }

    /// Every file zenmode keeps for `server`.
    pub fn files(&self, server: &str) -> ServerFiles {
        let stem = file_stem(server);
        let cached = self.cache.join("upstreams");
        let kept = self.state.join("upstreams");
        ServerFiles {
            catalog: cached.join(format!("{stem}.json")),
            capabilities: cached.join(format!("{stem}.capabilities.json")),
            approvals: kept.join(format!("{stem}.approved.json")),
            pins: kept.join(format!("{stem}.pins.json")),
            status: kept.join(&stem),
            token: self.tokens.join(format!("{stem}.json")),
        }
    }
}

/// Every file zenmode keeps for one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFiles {
    /// Its tool list, as last read (cache).
    pub catalog: PathBuf,
    /// The capabilities it declared (cache).
    pub capabilities: PathBuf,
    /// The tool definitions the user approved.
    pub approvals: PathBuf,
    /// The definitions pinned on first sight.
    pub pins: PathBuf,
    /// A folder: its status (`state.json`) and stderr log (`stderr.log`,
    /// the older half `stderr.log.1`).
    pub status: PathBuf,
    /// Its OAuth tokens (a refresh token among them).
    pub token: PathBuf,
}

impl ServerFiles {
    /// Deletes them all (those that exist): the server is gone.
    pub fn forget(&self) {
        for file in [
            &self.catalog,
            &self.capabilities,
            &self.approvals,
            &self.pins,
            &self.token,
        ] {
            let _ = std::fs::remove_file(file);
        }
        let _ = std::fs::remove_dir_all(&self.status);
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
    format!("{safe}-{}", &hex::encode(digest)[..8])
}
