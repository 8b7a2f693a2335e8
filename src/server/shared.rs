//! The shared instance's files: one `zenmode serve --shared` per user, which
//! every `zenmode connect` bridges its client to.
//!
//! In [`crate::platform::dirs::shared_instance_dir`]:
//!
//! - `instance.json`: the running instance's pid, port and upstreams file,
//!   written once it listens, removed when it stops;
//! - `token`: the bearer token clients present, made once, owner-only;
//! - `instance.lock`: held by the running instance for its whole life, so a
//!   second one refuses to start (the lock ends with the process, even a
//!   killed one);
//! - `start.lock`: held by the `connect` that is starting the instance, so
//!   a second `connect` waits for that start instead of making another;
//! - `instance.log`: the instance's stderr.

use std::{
    fs,
    io::{self, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{Deserialize, Serialize};

use crate::platform::{
    private_file::{self, Flush},
    process,
};

/// What a running shared instance records about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceRecord {
    pub pid: u32,
    pub port: u16,
    /// The upstreams file it serves.
    pub upstreams: PathBuf,
    /// `zenmode --version` of the instance.
    pub version: String,
    /// When it started listening, in milliseconds since the epoch.
    pub started_ms: u64,
}

impl InstanceRecord {
    /// The loopback address it listens on.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The URL of the MCP endpoint, for a profile or for all servers.
    pub fn mcp_url(&self, profile: Option<&str>) -> String {
        match profile {
            Some(profile) => format!("http://127.0.0.1:{}/p/{profile}/mcp", self.port),
            None => format!("http://127.0.0.1:{}/mcp", self.port),
        }
    }
}

/// The shared instance's folder and the files in it.
#[derive(Debug, Clone)]
pub struct SharedDir(pub PathBuf);

impl SharedDir {
    /// The user's shared-instance folder.
    pub fn of_user() -> Self {
        SharedDir(crate::platform::dirs::shared_instance_dir())
    }

    pub fn record_file(&self) -> PathBuf {
        self.0.join("instance.json")
    }

    pub fn token_file(&self) -> PathBuf {
        self.0.join("token")
    }

    pub fn instance_lock(&self) -> PathBuf {
        self.0.join("instance.lock")
    }

    pub fn start_lock(&self) -> PathBuf {
        self.0.join("start.lock")
    }

    pub fn log_file(&self) -> PathBuf {
        self.0.join("instance.log")
    }

    /// The record of the instance, if one is written and its process lives.
    pub fn live_record(&self) -> Option<InstanceRecord> {
        let text = fs::read_to_string(self.record_file()).ok()?;
        let record: InstanceRecord = serde_json::from_str(&text).ok()?;
        process::is_alive(record.pid).then_some(record)
    }

    /// The record of an instance that lives and answers its health check.
    pub fn running(&self) -> Option<InstanceRecord> {
        self.live_record()
            .filter(|record| answers_health(record.address(), Duration::from_secs(2)))
    }

    pub fn write_record(&self, record: &InstanceRecord) -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        text.push(b'\n');
        private_file::write_private(&self.record_file(), &text, Flush::Later)
    }

    /// Removes the record if it is still `pid`'s (a newer instance may have
    /// written its own since).
    pub fn remove_record_of(&self, pid: u32) {
        let file = self.record_file();
        let mine = fs::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str::<InstanceRecord>(&text).ok())
            .is_some_and(|record| record.pid == pid);
        if mine {
            let _ = fs::remove_file(file);
        }
    }

    /// The clients' token: read, or made (32 random bytes, hex) and written
    /// owner-only when there is none.
    pub fn token(&self) -> io::Result<String> {
        let file = self.token_file();
        if let Ok(text) = fs::read_to_string(&file) {
            let token = text.trim();
            if !token.is_empty() {
                return Ok(token.to_owned());
            }
        }
        let _lock = private_file::lock_beside(&file)?;
        if let Ok(text) = fs::read_to_string(&file)
            && !text.trim().is_empty()
        {
            return Ok(text.trim().to_owned());
        }
        let token = random_hex(32)?;
        private_file::write_private(&file, format!("{token}\n").as_bytes(), Flush::ToDisk)?;
        Ok(token)
    }

    /// Takes the instance lock without waiting; `None` when another
    /// instance holds it. Held until the file is dropped.
    pub fn take_instance_lock(&self) -> io::Result<Option<fs::File>> {
        let lock = private_file::open_lock_file(&self.instance_lock())?;
        match lock.try_lock() {
            Ok(()) => Ok(Some(lock)),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(error)) => Err(error),
        }
    }

    /// The last `lines` lines of the instance's log.
    pub fn log_tail(&self, lines: usize) -> Vec<String> {
        let text = fs::read_to_string(self.log_file()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..]
            .iter()
            .map(|line| (*line).to_owned())
            .collect()
    }
}

/// `bytes` random bytes from the system's generator, as lowercase hex.
pub fn random_hex(bytes: usize) -> io::Result<String> {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut buffer = vec![0u8; bytes];
    SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| io::Error::other("the system's random generator failed"))?;
    Ok(hex::encode(buffer))
}

/// Whether a zenmode answers `GET /healthz` at `address` within `wait`.
/// A plain request on a socket: it must not go through a proxy, and it is
/// the one request made before anything else is set up.
pub fn answers_health(address: SocketAddr, wait: Duration) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, wait) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(wait));
    let _ = stream.set_write_timeout(Some(wait));
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
        address.port()
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.take(4096).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer.starts_with("HTTP/1.1 200") && answer.contains("\"ok\"")
}

/// Whether `path` names the same file as `other` (both resolved).
pub fn same_file(path: &Path, other: &Path) -> bool {
    let resolve = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    resolve(path) == resolve(other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let shared = SharedDir(dir.path().join("shared"));
        let first = shared.token().unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(shared.token().unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(shared.token_file())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_record_is_live_only_while_its_process_is() {
        let dir = tempfile::tempdir().unwrap();
        let shared = SharedDir(dir.path().to_path_buf());
        let mut record = InstanceRecord {
            pid: std::process::id(),
            port: 1,
            upstreams: PathBuf::from("/nowhere"),
            version: "test".into(),
            started_ms: 0,
        };
        shared.write_record(&record).unwrap();
        assert_eq!(shared.live_record(), Some(record.clone()));
        assert!(shared.running().is_none(), "nothing answers on port 1");
        shared.remove_record_of(record.pid + 1);
        assert!(
            shared.live_record().is_some(),
            "another pid's removal leaves it"
        );
        shared.remove_record_of(record.pid);
        assert!(shared.live_record().is_none());
        record.pid = u32::MAX - 1;
        shared.write_record(&record).unwrap();
        assert!(
            shared.live_record().is_none(),
            "a dead pid's record is not live"
        );
    }

    #[test]
    fn only_one_holder_of_the_instance_lock() {
        let dir = tempfile::tempdir().unwrap();
        let shared = SharedDir(dir.path().to_path_buf());
        let held = shared.take_instance_lock().unwrap();
        assert!(held.is_some());
        assert!(shared.take_instance_lock().unwrap().is_none());
        drop(held);
        assert!(shared.take_instance_lock().unwrap().is_some());
    }
}
