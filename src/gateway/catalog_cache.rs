//! Each upstream's cached catalog: the tool list it last gave, in the
//! user's cache directory, keyed by the entry's fingerprint so that a
//! changed entry is fetched again. Start-up reads it instead of starting
//! the server; losing it costs a fetch (the pins, in [`super::pins`], are
//! what protects).

use std::{
    io,
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use serde_json::{Value, value::RawValue};

use super::{
    config::UpstreamConfig,
    disk::GatewayDirs,
    pins::{tool_hash, tool_name},
};
use crate::platform::private_file;

#[derive(Serialize, Deserialize)]
struct CachedCatalog {
    fingerprint: String,
    fetched_at: u64,
    /// Each tool with its name and definition hash beside it, so start-up
    /// reads names and compares pins without parsing or hashing schemas.
    entries: Vec<CachedEntry>,
}

#[derive(Serialize, Deserialize)]
struct CachedEntry {
    name: String,
    hash: String,
    tool: Box<RawValue>,
}

/// The cached catalog of `config`'s server, if one was saved for this very entry.
pub fn load_catalog(dirs: &GatewayDirs, config: &UpstreamConfig) -> Option<Vec<Value>> {
    let text = std::fs::read_to_string(dirs.files(&config.name).catalog).ok()?;
    let cached: CachedCatalog = serde_json::from_str(&text).ok()?;
    if cached.fingerprint != config.fingerprint() {
        return None;
    }
    cached
        .entries
        .iter()
        .map(|entry| serde_json::from_str(entry.tool.get()).ok())
        .collect()
}

/// One tool as start-up needs it: its name, its definition hash, and its
/// JSON text, parsed only if the mode is used.
pub struct ListedTool {
    pub name: String,
    pub hash: String,
    pub definition: Box<RawValue>,
}

impl ListedTool {
    pub fn value(&self) -> Value {
        serde_json::from_str(self.definition.get()).unwrap_or(Value::Null)
    }
}

/// Tools fetched just now, as [`ListedTool`]s.
pub fn listed(tools: &[Value]) -> Vec<ListedTool> {
    tools
        .iter()
        .filter_map(|tool| {
            Some(ListedTool {
                name: tool_name(tool)?.to_owned(),
                hash: tool_hash(tool),
                definition: RawValue::from_string(tool.to_string()).ok()?,
            })
        })
        .collect()
}

/// The cached catalog of `config`'s server as names, hashes and text: what
/// start-up reads, without building any definition.
pub fn load_listed(dirs: &GatewayDirs, config: &UpstreamConfig) -> Option<Vec<ListedTool>> {
    let text = std::fs::read_to_string(dirs.files(&config.name).catalog).ok()?;
    let cached: CachedCatalog = serde_json::from_str(&text).ok()?;
    if cached.fingerprint != config.fingerprint() {
        return None;
    }
    Some(
        cached
            .entries
            .into_iter()
            .map(|entry| ListedTool {
                name: entry.name,
                hash: entry.hash,
                definition: entry.tool,
            })
            .collect(),
    )
}

/// When the cached catalog was fetched (seconds since the epoch), if cached.
pub fn catalog_age(dirs: &GatewayDirs, config: &UpstreamConfig) -> Option<u64> {
    let text = std::fs::read_to_string(dirs.files(&config.name).catalog).ok()?;
    let cached: CachedCatalog = serde_json::from_str(&text).ok()?;
    (cached.fingerprint == config.fingerprint()).then_some(cached.fetched_at)
}

pub fn save_catalog(
    dirs: &GatewayDirs,
    config: &UpstreamConfig,
    tools: &[Value],
) -> io::Result<()> {
    let cached = CachedCatalog {
        fingerprint: config.fingerprint(),
        fetched_at: now_secs(),
        entries: listed(tools)
            .into_iter()
            .map(|tool| CachedEntry {
                name: tool.name,
                hash: tool.hash,
                tool: tool.definition,
            })
            .collect(),
    };
    private_file::write_replacing(
        &dirs.files(&config.name).catalog,
        &serde_json::to_vec(&cached)?,
        None,
        private_file::Flush::Later,
    )
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::pins::{Pins, load_pins, load_pins_with_definitions, save_pins};
    use serde_json::json;

    #[test]
    fn catalogs_are_cached_per_entry_and_pins_round_trip() {
        let root = tempfile::tempdir().unwrap();
        let dirs = GatewayDirs::under(root.path());
        let parse = |entry| {
            super::super::config::parse(&json!({"mcpServers": {"s/../x": entry}}))
                .unwrap()
                .servers
                .remove(0)
        };
        let config = parse(json!({"command": "one", "prefix": "sx"}));
        assert!(load_catalog(&dirs, &config).is_none());
        let tools = vec![json!({"name": "t"})];
        save_catalog(&dirs, &config, &tools).unwrap();
        assert_eq!(load_catalog(&dirs, &config).unwrap(), tools);
        let listed = load_listed(&dirs, &config).unwrap();
        assert_eq!(listed[0].name, "t");
        assert_eq!(listed[0].hash, tool_hash(&tools[0]));
        assert_eq!(listed[0].value(), tools[0]);
        // Another command behind the same name is another catalog.
        assert!(load_catalog(&dirs, &parse(json!({"command": "two", "prefix": "sx"}))).is_none());
        let pins = Pins::of(&tools);
        save_pins(&dirs, "s/../x", &pins).unwrap();
        assert_eq!(load_pins_with_definitions(&dirs, "s/../x").unwrap(), pins);
        assert_eq!(load_pins(&dirs, "s/../x").unwrap().tools, pins.tools);
        // The odd name stayed inside the directories.
        for entry in std::fs::read_dir(dirs.cache.join("upstreams")).unwrap() {
            assert!(
                entry
                    .unwrap()
                    .file_name()
                    .to_str()
                    .unwrap()
                    .starts_with("s____x-")
            );
        }
    }
}
