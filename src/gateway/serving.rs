//! Which version of the upstreams file each running `zenmode serve` has
//! loaded, so `zenmode upstream add|remove` can say whether running servers
//! picked a change up.
//!
//! Each serving process keeps one small file, `<state>/serving/<pid>.json`,
//! holding its pid, the upstreams file's path and the SHA-256 of the
//! content it last loaded; it is removed at shutdown, and a record whose
//! process is gone is ignored (and removed) by the next reader.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime},
};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::disk::GatewayDirs;

/// A version of the upstreams file: cheap to compare by size and time,
/// exact by content.
#[derive(Debug, Clone, PartialEq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    pub hash: String,
}

impl Stamp {
    /// The file's stamp now, or `None` when it cannot be read.
    pub fn of(file: &Path) -> Option<Self> {
        let meta = std::fs::metadata(file).ok()?;
        let bytes = std::fs::read(file).ok()?;
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            hash: hex::encode(Sha256::digest(&bytes)),
        })
    }

    /// Whether `other` is the same version of the file.
    pub fn same_file(&self, other: &Stamp) -> bool {
        self.hash == other.hash
    }

    /// Whether size and modification time alone show no change, so the
    /// watch need not read the file.
    pub fn unchanged_on_disk(&self, file: &Path) -> bool {
        std::fs::metadata(file)
            .is_ok_and(|meta| meta.len() == self.len && meta.modified().ok() == self.modified)
    }
}

fn records(dirs: &GatewayDirs) -> PathBuf {
    dirs.state.join("serving")
}

fn record_path(dirs: &GatewayDirs, pid: u32) -> PathBuf {
    records(dirs).join(format!("{pid}.json"))
}

/// Notes that this process has loaded `stamp` of `file`.
pub fn record(dirs: &GatewayDirs, file: &Path, stamp: &Stamp) {
    let dir = records(dirs);
    let body = json!({
        "pid": std::process::id(),
        "file": absolute(file),
        "hash": stamp.hash,
    });
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        let path = record_path(dirs, std::process::id());
        let temporary = path.with_extension("tmp");
        std::fs::write(&temporary, body.to_string())?;
        std::fs::rename(&temporary, &path)
    });
    if let Err(error) = written {
        tracing::debug!(%error, "cannot record the loaded upstreams file");
    }
}

/// Removes this process's record (at shutdown).
pub fn forget(dirs: &GatewayDirs) {
    let _ = std::fs::remove_file(record_path(dirs, std::process::id()));
}

fn absolute(file: &Path) -> String {
    std::path::absolute(file)
        .unwrap_or_else(|_| file.to_path_buf())
        .display()
        .to_string()
}

/// Whether a process with this pid runs (a zombie counts as gone).
/// Running servers using `file`: how many, and how many have loaded its
/// current content.
fn count(dirs: &GatewayDirs, file: &Path) -> (usize, usize) {
    let wanted = absolute(file);
    let hash = Stamp::of(file).map(|stamp| stamp.hash);
    let Ok(entries) = std::fs::read_dir(records(dirs)) else {
        return (0, 0);
    };
    let (mut running, mut current) = (0, 0);
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(record) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        else {
            continue;
        };
        let pid = record["pid"].as_u64().and_then(|p| u32::try_from(p).ok());
        if !pid.is_some_and(crate::platform::process::is_alive) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if record["file"].as_str() != Some(wanted.as_str()) {
            continue;
        }
        running += 1;
        if hash.is_some() && record["hash"].as_str() == hash.as_deref() {
            current += 1;
        }
    }
    (running, current)
}

/// Waits up to `wait` for the running servers using `file` to load its
/// current content, and says how that went, in a line for the user.
pub fn pickup_report(dirs: &GatewayDirs, file: &Path, wait: Duration) -> String {
    let start = Instant::now();
    let (mut running, mut current) = count(dirs, file);
    while running > current && start.elapsed() < wait {
        std::thread::sleep(Duration::from_millis(100));
        (running, current) = count(dirs, file);
    }
    let servers = |n: usize| {
        if n == 1 { "server" } else { "servers" }
    };
    match (running, current) {
        (0, _) => "no zenmode server is running; the next start uses it".to_owned(),
        (running, current) if running == current => {
            format!(
                "{running} running zenmode {} picked this up",
                servers(running)
            )
        }
        (running, current) => format!(
            "{current} of {running} running zenmode {} picked this up; the others read the file again within a few seconds, or at once on SIGHUP",
            servers(running)
        ),
    }
}
