//! What a running zenmode tells `zenmode status` about each upstream, and
//! each upstream's stderr log, both in the gateway's state directory under
//! `upstreams/<server>/`:
//!
//! - `state.json`: the server's last transition as one process saw it
//!   (starting, running with its pid and tool count, idle, stopped, failed
//!   with the error and the end of its stderr) and its last call. Several
//!   zenmode processes (one per client) may front the same server: each
//!   writes its whole view to a temporary file and renames it, so the file
//!   always holds the newest writer's view, whole. A write that fails is
//!   logged at DEBUG and never fails anything else.
//! - `stderr.log`: the server's stderr lines, secrets hidden, appended by a
//!   thread of its own (a full queue drops lines rather than wait) and
//!   rotated to `stderr.log.1` past [`MAX_LOG_BYTES`].

use std::{
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        mpsc::{SyncSender, TrySendError, sync_channel},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use super::disk::GatewayDirs;
use crate::platform::private_file::{Flush, open_private_append, write_private};

/// A log file is rotated once it grows past this many bytes.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// Lines waiting for the log writer; more are dropped.
const LOG_QUEUE_LINES: usize = 1024;

/// One server's state as the writing zenmode process sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerState {
    pub server: String,
    /// `starting`, `running`, `idle` (stopped after its idle timeout),
    /// `stopped` (zenmode ended), `failed` or `needs sign-in` (an OAuth
    /// server without usable tokens; `last_error` names the login command).
    pub state: String,
    /// The zenmode process that wrote this.
    pub zenmode_pid: u32,
    /// The server's process (group leader), while running.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Tools the running server lists.
    #[serde(default)]
    pub tools: Option<usize>,
    #[serde(default)]
    pub last_error: Option<String>,
    /// The last lines of its stderr when it failed.
    #[serde(default)]
    pub stderr_tail: Vec<String>,
    #[serde(default)]
    pub last_call: Option<LastCall>,
    /// When this was written, in milliseconds since the epoch.
    pub updated_ms: u64,
    /// The fingerprint of the entry this was about, so `status` can tell
    /// an entry edited since (`None` in files of older versions).
    #[serde(default)]
    pub fingerprint: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LastCall {
    pub tool: String,
    pub at_ms: u64,
    pub duration_ms: u64,
    /// `ok`, `error` (the tool's own error result) or the gateway's error kind.
    pub outcome: String,
}

/// The directory of `server`'s state and log files.
pub fn server_dir(dirs: &GatewayDirs, server: &str) -> PathBuf {
    dirs.files(server).status
}

fn state_path(dirs: &GatewayDirs, server: &str) -> PathBuf {
    server_dir(dirs, server).join("state.json")
}

/// `server`'s stderr log (the older half is the same name with `.1`).
pub fn log_path(dirs: &GatewayDirs, server: &str) -> PathBuf {
    server_dir(dirs, server).join("stderr.log")
}

pub fn load(dirs: &GatewayDirs, server: &str) -> Option<ServerState> {
    let text = std::fs::read_to_string(state_path(dirs, server)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes `fingerprint` into `server`'s state file when the file has none
/// (it was written by an older zenmode), so that a later edit of the entry
/// shows; the rest of the file is kept. Never fails the caller: a serving
/// zenmode that writes at the same time simply wins.
pub fn adopt_fingerprint(dirs: &GatewayDirs, server: &str, fingerprint: &str) {
    let Some(mut state) = load(dirs, server) else {
        return;
    };
    if state.fingerprint.is_some() {
        return;
    }
    state.fingerprint = Some(fingerprint.to_owned());
    let written = serde_json::to_vec_pretty(&state)
        .map_err(std::io::Error::other)
        .and_then(|bytes| write_private(&state_path(dirs, server), &bytes, Flush::Later));
    if let Err(error) = written {
        tracing::debug!(server, %error, "could not note the entry's fingerprint");
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One upstream's view, kept in memory and written on every change.
pub struct StateFile {
    dirs: GatewayDirs,
    state: Mutex<ServerState>,
}

impl StateFile {
    /// The view of `server`, whose entry has `fingerprint`; nothing is
    /// written until the first update.
    pub fn new(dirs: GatewayDirs, server: &str, fingerprint: String) -> Self {
        StateFile {
            dirs,
            state: Mutex::new(ServerState {
                server: server.to_owned(),
                zenmode_pid: std::process::id(),
                fingerprint: Some(fingerprint),
                ..ServerState::default()
            }),
        }
    }

    /// Applies `change` and writes the result; never fails the caller.
    pub fn update(&self, change: impl FnOnce(&mut ServerState)) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        change(&mut state);
        state.updated_ms = now_ms();
        let path = state_path(&self.dirs, &state.server);
        let written = serde_json::to_vec_pretty(&*state)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_private(&path, &bytes, Flush::Later));
        if let Err(error) = written {
            tracing::debug!(server = state.server, %error, "could not write the state file");
        }
    }
}

/// The writer of one server's stderr log.
pub struct StderrLog {
    lines: SyncSender<String>,
}

impl StderrLog {
    /// Starts the writer thread; `None` if no thread can be started.
    pub fn open(dirs: &GatewayDirs, server: &str) -> Option<Self> {
        let path = log_path(dirs, server);
        let (lines, queue) = sync_channel::<String>(LOG_QUEUE_LINES);
        std::thread::Builder::new()
            .name(format!("stderr-log-{server}"))
            .spawn(move || {
                let mut writer = LogWriter::new(path);
                while let Ok(line) = queue.recv() {
                    writer.append(&line);
                }
            })
            .ok()?;
        Some(StderrLog { lines })
    }

    /// Queues a line; drops it when the writer is behind.
    pub fn line(&self, line: &str) {
        match self.lines.try_send(line.to_owned()) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {}
        }
    }
}

/// Appends lines to a file, rotating it to `.1` past [`MAX_LOG_BYTES`].
struct LogWriter {
    path: PathBuf,
    file: Option<std::fs::File>,
    size: u64,
}

impl LogWriter {
    fn new(path: PathBuf) -> Self {
        LogWriter {
            path,
            file: None,
            size: 0,
        }
    }

    fn append(&mut self, line: &str) {
        if self.file.is_none() {
            self.file = open_private_append(&self.path).ok();
            self.size = self
                .file
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .map_or(0, |m| m.len());
        }
        if self.size >= MAX_LOG_BYTES {
            self.file = None;
            let _ = std::fs::rename(&self.path, rotated(&self.path));
            self.file = open_private_append(&self.path).ok();
            self.size = 0;
        }
        if let Some(file) = &mut self.file
            && file.write_all(format!("{line}\n").as_bytes()).is_ok()
        {
            self.size += line.len() as u64 + 1;
        }
    }
}

fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// The last `lines` lines of `server`'s stderr log (older file first).
pub fn tail(dirs: &GatewayDirs, server: &str, lines: usize) -> Vec<String> {
    let path = log_path(dirs, server);
    let mut all: Vec<String> = Vec::new();
    for file in [rotated(&path), path] {
        if let Ok(bytes) = std::fs::read(&file) {
            all.extend(String::from_utf8_lossy(&bytes).lines().map(str::to_owned));
        }
    }
    let skip = all.len().saturating_sub(lines);
    all.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_the_log_rotates_to_one_older_file() {
        let root = tempfile::tempdir().unwrap();
        let dirs = GatewayDirs::under(root.path());
        let file = StateFile::new(dirs.clone(), "a/b", "f1".into());
        file.update(|s| {
            s.state = "running".into();
            s.tools = Some(3);
        });
        let loaded = load(&dirs, "a/b").unwrap();
        assert_eq!(loaded.state, "running");
        assert_eq!(loaded.tools, Some(3));
        assert_eq!(loaded.zenmode_pid, std::process::id());
        assert_eq!(loaded.fingerprint.as_deref(), Some("f1"));

        let path = log_path(&dirs, "a/b");
        let mut writer = LogWriter::new(path.clone());
        let line = "x".repeat(1023);
        for _ in 0..1500 {
            writer.append(&line);
        }
        writer.append("last line");
        let current = std::fs::metadata(&path).unwrap().len();
        let older = std::fs::metadata(rotated(&path)).unwrap().len();
        assert!(current < MAX_LOG_BYTES && older <= MAX_LOG_BYTES + 1024);
        assert_eq!(tail(&dirs, "a/b", 1), ["last line"]);
        assert_eq!(tail(&dirs, "a/b", 5).len(), 5);
    }
}
