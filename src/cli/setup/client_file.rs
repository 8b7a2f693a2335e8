//! Reading and writing a client's own JSON file, and finding zenmode's
//! entry in it: shared by setup and undo.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use crate::gateway::config;
use crate::platform::private_file::{self, PRIVATE_FILE_MODE};

/// The server name zenmode gets in the client's list.
pub const NAME: &str = "zenmode";

/// The client's document: `{}` when the file does not exist yet. A file
/// that is not a JSON object, or whose server list is not an object, stops
/// setup before anything changes.
pub fn read_client(servers_key: &str, file: &Path) -> anyhow::Result<Value> {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Object(Map::new())),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    let document: Value = serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not JSON ({e}); zenmode reads plain JSON, without comments or trailing commas: fix the file, then run setup again; nothing was changed",
            file.display()
        )
    })?;
    if !document.is_object() {
        bail!(
            "{} is not a JSON object; nothing was changed",
            file.display()
        );
    }
    if let Some(servers) = document.get(servers_key)
        && !servers.is_object()
    {
        bail!(
            "{}: \"{servers_key}\" is not an object; nothing was changed",
            file.display()
        );
    }
    Ok(document)
}

/// The name of the entry that runs zenmode, if one does. An entry named
/// `zenmode` that runs something else stops setup: replacing it would lose
/// the user's server.
pub fn zenmode_entry(file: &Path, servers: &Map<String, Value>) -> anyhow::Result<Option<String>> {
    let runs = |name: &str, entry: &Value| {
        config::parse_one(name, entry)
            .ok()
            .and_then(|c| config::runs_zenmode(&c))
            .is_some()
    };
    if let Some(entry) = servers.get(NAME) {
        if runs(NAME, entry) {
            return Ok(Some(NAME.to_owned()));
        }
        bail!(
            "{}: a server named {NAME:?} exists and does not run zenmode; rename or remove it, then run setup again; nothing was changed",
            file.display()
        );
    }
    Ok(servers
        .iter()
        .find(|(name, entry)| runs(name, entry))
        .map(|(name, _)| name.clone()))
}

/// Writes a client's file whole, through a temporary file, keeping its mode.
pub fn write_client(file: &Path, document: &Value) -> anyhow::Result<()> {
    let mode = existing_mode(file).unwrap_or(PRIVATE_FILE_MODE);
    let text = serde_json::to_string_pretty(document)? + "\n";
    private_file::write_replacing(
        file,
        text.as_bytes(),
        Some(mode),
        private_file::Flush::ToDisk,
    )
    .with_context(|| format!("cannot write {}", file.display()))
}

/// The mode of an existing file, kept when it is rewritten.
pub fn existing_mode(file: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        let metadata = std::fs::metadata(file).ok()?;
        Some(std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}
