//! The copies `zenmode setup` takes before it changes a client's file and
//! the gateway's upstreams file, and `--undo`, which puts them back byte
//! for byte. They live in zenmode's state directory (`setup/<client>/`),
//! not beside the client's file, so a client that reads every file in its
//! directory never sees a second configuration.
//!
//! A backup is taken when setup adds zenmode to a client that did not run
//! it yet; a second setup keeps the first backup, so `--undo` always goes
//! back to the configuration before zenmode. Undo first saves the file as it
//! is now (`*-before-undo.json`): what the client wrote since setup (Claude
//! Code keeps its own state in the same file) is not lost.

use std::path::{Path, PathBuf};

use crate::platform::private_file;
use crate::platform::private_file::PRIVATE_FILE_MODE;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

const RECORD: &str = "record.json";
const CLIENT_COPY: &str = "client.json";
const GATEWAY_COPY: &str = "upstreams.json";

/// What a backup holds besides the two copies.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    client_file: PathBuf,
    /// The file's Unix mode, or `None` when it did not exist.
    client_mode: Option<u32>,
    gateway_file: PathBuf,
    gateway_mode: Option<u32>,
    /// Servers moved behind the gateway; without any, undo leaves the
    /// gateway's file alone (another client's setup may have changed it).
    moved: Vec<String>,
}

/// One client's backup directory.
pub struct Backup {
    dir: PathBuf,
}

/// What `--undo` did, for the report.
pub struct Restored {
    pub client_file: PathBuf,
    pub client_existed: bool,
    /// The gateway's file, when it was put back, and whether it existed.
    pub gateway_file: Option<(PathBuf, bool)>,
    /// Where the files as they were just before the undo were saved.
    pub saved: Vec<PathBuf>,
}

impl Backup {
    pub fn new(state_dir: &Path, client: &str) -> Self {
        Self {
            dir: state_dir.join("setup").join(client),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn exists(&self) -> bool {
        self.dir.join(RECORD).is_file()
    }

    /// Copies both files (or notes that one is missing), replacing any
    /// earlier backup of this client.
    pub fn take(&self, client_file: &Path, gateway_file: &Path) -> anyhow::Result<()> {
        private_file::create_private_dir(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let client_mode = copy_if_present(client_file, &self.dir.join(CLIENT_COPY))?;
        let gateway_mode = copy_if_present(gateway_file, &self.dir.join(GATEWAY_COPY))?;
        self.write_record(&Record {
            client_file: client_file.to_owned(),
            client_mode,
            gateway_file: gateway_file.to_owned(),
            gateway_mode,
            moved: Vec::new(),
        })
    }

    /// Notes servers moved behind the gateway, so undo restores its file.
    pub fn note_moved(&self, names: &[String]) -> anyhow::Result<()> {
        let mut record = self.read_record()?;
        for name in names {
            if !record.moved.contains(name) {
                record.moved.push(name.clone());
            }
        }
        self.write_record(&record)
    }

    /// Puts the client's file (and, if servers were moved, the gateway's)
    /// back as they were, then removes the backup.
    pub fn restore(&self) -> anyhow::Result<Restored> {
        let record = self.read_record()?;
        // Both copies are read before anything is written: a damaged backup
        // fails here and changes nothing.
        let client_bytes = read_copy(&self.dir.join(CLIENT_COPY), record.client_mode)?;
        let gateway_bytes = if record.moved.is_empty() {
            None
        } else {
            Some(read_copy(
                &self.dir.join(GATEWAY_COPY),
                record.gateway_mode,
            )?)
        };
        let mut saved = Vec::new();
        put_back(
            &record.client_file,
            client_bytes.as_deref(),
            record.client_mode,
            &self.dir.join("client-before-undo.json"),
            &mut saved,
        )?;
        if let Some(bytes) = &gateway_bytes {
            put_back(
                &record.gateway_file,
                bytes.as_deref(),
                record.gateway_mode,
                &self.dir.join("upstreams-before-undo.json"),
                &mut saved,
            )?;
        }
        for name in [RECORD, CLIENT_COPY, GATEWAY_COPY] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
        Ok(Restored {
            client_file: record.client_file,
            client_existed: record.client_mode.is_some(),
            gateway_file: gateway_bytes
                .map(|_| (record.gateway_file, record.gateway_mode.is_some())),
            saved,
        })
    }

    fn read_record(&self) -> anyhow::Result<Record> {
        let path = self.dir.join(RECORD);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the backup record {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("the backup record {} is damaged", path.display()))
    }

    fn write_record(&self, record: &Record) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(record)? + "\n";
        write_atomic(&self.dir.join(RECORD), text.as_bytes(), PRIVATE_FILE_MODE)
    }
}

/// The copy of a file that existed (`mode` is some), else `None`.
fn read_copy(copy: &Path, mode: Option<u32>) -> anyhow::Result<Option<Vec<u8>>> {
    match mode {
        None => Ok(None),
        Some(_) => std::fs::read(copy)
            .map(Some)
            .with_context(|| format!("the backup copy {} is missing", copy.display())),
    }
}

/// Saves `file` as it is now to `keep`, then writes `bytes` over it (or
/// removes it when it did not exist before setup).
fn put_back(
    file: &Path,
    bytes: Option<&[u8]>,
    mode: Option<u32>,
    keep: &Path,
    saved: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    if file.exists() {
        std::fs::copy(file, keep)
            .with_context(|| format!("cannot save {} to {}", file.display(), keep.display()))?;
        saved.push(keep.to_owned());
    }
    match bytes {
        Some(bytes) => write_atomic(file, bytes, mode.unwrap_or(PRIVATE_FILE_MODE)),
        None if file.exists() => {
            std::fs::remove_file(file).with_context(|| format!("cannot remove {}", file.display()))
        }
        None => Ok(()),
    }
}

/// Copies `from` to `to` when it exists; returns its mode, or `None` when
/// there is no such file. A path that exists but cannot be read fails.
fn copy_if_present(from: &Path, to: &Path) -> anyhow::Result<Option<u32>> {
    let metadata = match std::fs::metadata(from) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = std::fs::remove_file(to);
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", from.display())),
    };
    if !metadata.is_file() {
        bail!("{} is not a file", from.display());
    }
    let bytes = std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
    write_atomic(to, &bytes, PRIVATE_FILE_MODE)?;
    Ok(Some(mode_of(&metadata)))
}

#[cfg(unix)]
fn mode_of(metadata: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o7777
}

#[cfg(not(unix))]
fn mode_of(_: &std::fs::Metadata) -> u32 {
    PRIVATE_FILE_MODE
}

/// Writes `bytes` to a temporary file beside `path` and renames it over
/// `path`, so a reader (or a crash) never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    private_file::write_replacing(path, bytes, Some(mode), private_file::Flush::ToDisk)
        .with_context(|| format!("cannot write {}", path.display()))
}
