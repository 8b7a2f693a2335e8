//! Profiles: named sets of upstream servers (and optionally a strategy),
//! so that each client of a shared instance sees only its own servers.
//!
//! They are kept in `profiles.json` beside the upstreams file, since a
//! profile names that file's servers:
//!
//! ```json
//! { "profiles": { "work": { "servers": ["slack", "notion"], "strategy": "zen" } } }
//! ```
//!
//! A missing file is no profiles. The file is written whole (owner-only,
//! through [`crate::platform::private_file`]) under the lock of the file,
//! so that two `zenmode profile add` never lose each other's change.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::platform::private_file::{self, Flush};

/// The profiles file's name, in the upstreams file's directory.
const FILE_NAME: &str = "profiles.json";
/// The longest profile name.
const MAX_NAME: usize = 64;

/// One profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The upstream servers (names in the upstreams file) it sees.
    #[serde(default)]
    pub servers: BTreeSet<String>,
    /// The strategy its sessions get (`zen` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// Every profile, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profiles {
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// Where the profiles of the upstreams file `upstreams` are kept.
pub fn profiles_file(upstreams: &Path) -> PathBuf {
    upstreams
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(FILE_NAME)
}

/// Checks a profile name: letters, digits, `-` and `_`, 1 to 64 of them
/// (it is part of a URL path and of a client's configuration).
pub fn check_name(name: &str) -> Result<(), String> {
    let good = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if good {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a profile name: use 1 to {MAX_NAME} letters, digits, '-' or '_'"
        ))
    }
}

impl Profiles {
    /// Reads `file`; a missing file is no profiles, a malformed one an
    /// error naming the file.
    pub fn load(file: &Path) -> Result<Profiles, String> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Profiles::default());
            }
            Err(error) => return Err(format!("cannot read {}: {error}", file.display())),
        };
        let profiles: Profiles = serde_json::from_str(&text)
            .map_err(|error| format!("{} is not a profiles file: {error}", file.display()))?;
        for name in profiles.profiles.keys() {
            check_name(name).map_err(|problem| format!("{}: {problem}", file.display()))?;
        }
        Ok(profiles)
    }

    /// Reads `file`, applies `change` and writes it back, under the file's
    /// lock; nothing is written when `change` fails.
    pub fn update<T>(
        file: &Path,
        change: impl FnOnce(&mut Profiles) -> Result<T, String>,
    ) -> Result<T, String> {
        let _lock = private_file::lock_beside(file)
            .map_err(|error| format!("cannot lock {}: {error}", file.display()))?;
        let mut profiles = Profiles::load(file)?;
        let answer = change(&mut profiles)?;
        let mut text = serde_json::to_string_pretty(&profiles)
            .map_err(|error| format!("cannot write the profiles: {error}"))?;
        text.push('\n');
        private_file::write_private(file, text.as_bytes(), Flush::ToDisk)
            .map_err(|error| format!("cannot write {}: {error}", file.display()))?;
        Ok(answer)
    }

    /// The profile `name`, or an error listing the ones there are.
    pub fn get(&self, name: &str) -> Result<&Profile, String> {
        self.profiles.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
            if known.is_empty() {
                format!(
                    "no profile {name:?}: there are no profiles yet; add one with `zenmode profile add {name} SERVER...`"
                )
            } else {
                format!(
                    "no profile {name:?}; the profiles are: {}",
                    known.join(", ")
                )
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip_and_refuse_what_they_do_not_know() {
        let dir = tempfile::tempdir().unwrap();
        let file = profiles_file(&dir.path().join("upstreams.json"));
        assert_eq!(file, dir.path().join("profiles.json"));
        assert_eq!(Profiles::load(&file).unwrap(), Profiles::default());
        Profiles::update(&file, |profiles| {
            profiles.profiles.insert(
                "work".into(),
                Profile {
                    servers: ["slack".to_owned()].into(),
                    strategy: None,
                },
            );
            Ok(())
        })
        .unwrap();
        let loaded = Profiles::load(&file).unwrap();
        assert!(loaded.get("work").unwrap().servers.contains("slack"));
        assert!(loaded.get("home").unwrap_err().contains("work"));

        let failed: Result<(), String> = Profiles::update(&file, |profiles| {
            profiles.profiles.clear();
            Err("no".into())
        });
        assert!(failed.is_err());
        assert_eq!(
            Profiles::load(&file).unwrap(),
            loaded,
            "a failed change writes nothing"
        );

        std::fs::write(&file, r#"{"profiles": {"a b": {}}}"#).unwrap();
        assert!(
            Profiles::load(&file)
                .unwrap_err()
                .contains("not a profile name")
        );
        std::fs::write(
            &file,
            r#"{"profiles": {"a": {"servers": [], "colour": 1}}}"#,
        )
        .unwrap();
        assert!(Profiles::load(&file).unwrap_err().contains("colour"));
    }

    #[test]
    fn profile_names_are_short_and_plain() {
        assert!(check_name("work_2-b").is_ok());
        for bad in ["", "a/b", "a b", "ä", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
