//! What `zenmode setup` changed, kept so that `--undo` reverses exactly
//! that and nothing else.
//!
//! Setup used to keep a copy of the whole client file and write it back on
//! undo. Claude Code keeps its account, history and every later `claude mcp
//! add` in that same file, so the copy threw all of that away. The journal
//! instead lists the entries setup added (zenmode's, and the servers it put
//! in the gateway) and the servers it took out of the client, each with its
//! scope; undo checks each against the files as they are now.
//!
//! It lives in zenmode's state directory (`setup/<client>/journal.json`),
//! not beside the client's file, so a client that reads every file in its
//! folder never sees it. A second setup adds to the journal; undo removes it.
//! A backup from an older zenmode (`record.json` and full copies) is read
//! into the same form.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::client_file::NAME;
use super::plan::{Move, Scope};
use crate::platform::private_file::{self, PRIVATE_FILE_MODE};

const JOURNAL: &str = "journal.json";
/// The older backup's files.
const LEGACY_RECORD: &str = "record.json";
const LEGACY_CLIENT_COPY: &str = "client.json";
const LEGACY_GATEWAY_COPY: &str = "upstreams.json";

/// An entry setup added under `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Added {
    pub name: String,
    pub entry: Value,
}

/// Everything setup changed for one client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub client_file: PathBuf,
    pub gateway_file: PathBuf,
    /// zenmode's entry in the client (user scope), when setup added it.
    #[serde(default)]
    pub zenmode: Option<Added>,
    /// Servers taken out of the client, in the order they were.
    #[serde(default)]
    pub moved: Vec<Move>,
    /// Entries setup wrote into the gateway's upstreams file.
    #[serde(default)]
    pub gateway_added: Map<String, Value>,
    /// Whether the client's file existed before setup; set once a copy of
    /// it was kept (not for Claude Code, changed through its command).
    #[serde(default)]
    pub client_existed: Option<bool>,
    /// The same for the gateway's file, once setup wrote to it.
    #[serde(default)]
    pub gateway_existed: Option<bool>,
}

impl Journal {
    /// Adds `other`'s changes to this one (a second setup), keeping the
    /// first record of an entry.
    pub fn extend(&mut self, other: Journal) {
        if self.zenmode.is_none() {
            self.zenmode = other.zenmode;
        }
        for moved in other.moved {
            if !self.moved.contains(&moved) {
                self.moved.push(moved);
            }
        }
        for (name, entry) in other.gateway_added {
            self.gateway_added.entry(name).or_insert(entry);
        }
        self.client_existed = self.client_existed.or(other.client_existed);
        self.gateway_existed = self.gateway_existed.or(other.gateway_existed);
    }
}

/// Which file a copy is of.
#[derive(Debug, Clone, Copy)]
pub enum Kept {
    Client,
    Gateway,
}

impl Kept {
    fn before(self) -> &'static str {
        match self {
            Kept::Client => "client-before.json",
            Kept::Gateway => "upstreams-before.json",
        }
    }

    fn after(self) -> &'static str {
        match self {
            Kept::Client => "client-after.json",
            Kept::Gateway => "upstreams-after.json",
        }
    }
}

/// One client's folder of setup records.
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(state_dir: &Path, client: &str) -> Self {
        Self {
            dir: state_dir.join("setup").join(client),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal, from the current or an older format; `None` when setup
    /// has changed nothing (or it was undone). `servers_key` reads the
    /// older format's copy of the client file.
    pub fn load(&self, servers_key: &str) -> anyhow::Result<Option<Journal>> {
        let path = self.dir.join(JOURNAL);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                return serde_json::from_str(&text)
                    .map(Some)
                    .with_context(|| format!("the setup journal {} is damaged", path.display()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
        if self.dir.join(LEGACY_RECORD).is_file() {
            return self.load_legacy(servers_key).map(Some);
        }
        Ok(None)
    }

    pub fn save(&self, journal: &Journal) -> anyhow::Result<()> {
        private_file::create_private_dir(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let text = serde_json::to_string_pretty(journal)? + "\n";
        let path = self.dir.join(JOURNAL);
        private_file::write_replacing(
            &path,
            text.as_bytes(),
            Some(PRIVATE_FILE_MODE),
            private_file::Flush::ToDisk,
        )
        .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Removes the journal, its copies (and an older backup's files) once
    /// undone.
    pub fn remove(&self) {
        for name in [
            JOURNAL,
            LEGACY_RECORD,
            LEGACY_CLIENT_COPY,
            LEGACY_GATEWAY_COPY,
            Kept::Client.before(),
            Kept::Client.after(),
            Kept::Gateway.before(),
            Kept::Gateway.after(),
        ] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// Keeps `file` as it is before setup changes it; returns whether it
    /// existed. When nothing else changes it afterwards, undo gives these
    /// bytes back (spacing and key order included).
    pub fn keep_before(&self, kept: Kept, file: &Path) -> anyhow::Result<bool> {
        self.keep(file, kept.before())
    }

    /// Keeps `file` as setup left it, to tell at undo whether anything
    /// changed it since.
    pub fn keep_after(&self, kept: Kept, file: &Path) -> anyhow::Result<()> {
        self.keep(file, kept.after()).map(drop)
    }

    /// Drops the copy of `file` as setup left it, so that undo never gives
    /// the whole file back (something else changed it since).
    pub fn forget_after(&self, kept: Kept) {
        let _ = std::fs::remove_file(self.dir.join(kept.after()));
    }

    /// Whether `file` is byte for byte as setup last left it.
    pub fn as_setup_left(&self, kept: Kept, file: &Path) -> bool {
        match (
            std::fs::read(self.dir.join(kept.after())),
            std::fs::read(file),
        ) {
            (Ok(after), Ok(now)) => after == now,
            _ => false,
        }
    }

    /// The bytes kept before setup (`None`: the file did not exist).
    pub fn before(&self, kept: Kept, existed: bool) -> anyhow::Result<Option<Vec<u8>>> {
        if !existed {
            return Ok(None);
        }
        let path = self.dir.join(kept.before());
        std::fs::read(&path)
            .map(Some)
            .with_context(|| format!("the copy {} is missing", path.display()))
    }

    fn keep(&self, file: &Path, copy: &str) -> anyhow::Result<bool> {
        private_file::create_private_dir(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let copy = self.dir.join(copy);
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(&copy);
                return Ok(false);
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
        };
        private_file::write_replacing(
            &copy,
            &bytes,
            Some(PRIVATE_FILE_MODE),
            private_file::Flush::ToDisk,
        )
        .with_context(|| format!("cannot write {}", copy.display()))?;
        Ok(true)
    }

    /// An older zenmode's backup: the names it moved, with their entries
    /// from its copy of the client file (all in the user scope, the only
    /// one it moved from); zenmode's entry as it is now in the client, if
    /// the copy did not have one.
    fn load_legacy(&self, servers_key: &str) -> anyhow::Result<Journal> {
        #[derive(Deserialize)]
        struct Record {
            client_file: PathBuf,
            gateway_file: PathBuf,
            #[serde(default)]
            moved: Vec<String>,
        }
        let path = self.dir.join(LEGACY_RECORD);
        let record: Record = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        )
        .with_context(|| format!("the backup record {} is damaged", path.display()))?;
        let servers_of = |file: &Path, key: &str| -> Map<String, Value> {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .and_then(|doc| doc.get(key).and_then(Value::as_object).cloned())
                .unwrap_or_default()
        };
        let before = servers_of(&self.dir.join(LEGACY_CLIENT_COPY), servers_key);
        let gateway_before = servers_of(&self.dir.join(LEGACY_GATEWAY_COPY), "mcpServers");
        let now = servers_of(&record.client_file, servers_key);
        let mut journal = Journal {
            client_file: record.client_file,
            gateway_file: record.gateway_file,
            ..Journal::default()
        };
        if !before.contains_key(NAME)
            && let Some(entry) = now.get(NAME)
        {
            journal.zenmode = Some(Added {
                name: NAME.to_owned(),
                entry: entry.clone(),
            });
        }
        for name in record.moved {
            let Some(entry) = before.get(&name) else {
                continue;
            };
            if !gateway_before.contains_key(&name) {
                journal.gateway_added.insert(name.clone(), entry.clone());
            }
            journal.moved.push(Move {
                name,
                scope: Scope::User,
                folder: None,
                entry: entry.clone(),
            });
        }
        Ok(journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_older_backup_reads_as_the_changes_it_stood_for() {
        let dir = tempfile::tempdir().unwrap();
        let records = Records::new(dir.path(), "cursor");
        std::fs::create_dir_all(records.dir()).unwrap();
        let client = dir.path().join("mcp.json");
        let gateway = dir.path().join("upstreams.json");
        std::fs::write(
            &client,
            json!({"mcpServers": {"zenmode": {"command": "zenmode"}, "new": {"command": "n"}}})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            records.dir().join(LEGACY_CLIENT_COPY),
            json!({"mcpServers": {"time": {"command": "t"}, "kept": {"command": "k"}}}).to_string(),
        )
        .unwrap();
        std::fs::write(
            records.dir().join(LEGACY_RECORD),
            json!({"client_file": client, "client_mode": 420, "gateway_file": gateway,
                   "gateway_mode": null, "moved": ["time"]})
            .to_string(),
        )
        .unwrap();
        let journal = records.load("mcpServers").unwrap().unwrap();
        assert_eq!(
            journal.zenmode.unwrap().entry,
            json!({"command": "zenmode"})
        );
        assert_eq!(journal.moved.len(), 1);
        assert_eq!(journal.moved[0].name, "time");
        assert_eq!(journal.moved[0].scope, Scope::User);
        assert_eq!(journal.gateway_added["time"], json!({"command": "t"}));
        records.remove();
        assert!(records.load("mcpServers").unwrap().is_none());
    }

    #[test]
    fn a_second_setup_adds_to_the_first_record() {
        let one = Move {
            name: "a".into(),
            scope: Scope::Local,
            folder: Some("/p".into()),
            entry: json!({"command": "a"}),
        };
        let mut first = Journal {
            zenmode: Some(Added {
                name: "zenmode".into(),
                entry: json!(1),
            }),
            moved: vec![one.clone()],
            ..Journal::default()
        };
        let mut second = Journal {
            zenmode: Some(Added {
                name: "zenmode".into(),
                entry: json!(2),
            }),
            moved: vec![one.clone()],
            ..Journal::default()
        };
        second.moved.push(Move {
            name: "b".into(),
            ..one
        });
        first.extend(second);
        assert_eq!(first.zenmode.unwrap().entry, json!(1));
        assert_eq!(first.moved.len(), 2);
    }
}
