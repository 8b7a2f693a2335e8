//! What each upstream declared it offers besides tools (resources,
//! subscriptions, prompts, completion), cached beside its catalog and
//! keyed by the entry's fingerprint, so `initialize` can advertise them
//! without starting anyone ([`Offered`]).

use serde_json::{Value, json};

use super::{config::UpstreamConfig, disk::GatewayDirs};
use crate::platform::private_file::{Flush, create_private_dir, write_private};

/// Which of resources, prompts and completion some upstream offers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Offered {
    pub resources: bool,
    pub subscribe: bool,
    pub resources_list_changed: bool,
    pub prompts: bool,
    pub prompts_list_changed: bool,
    pub completions: bool,
}

impl Offered {
    pub(super) fn add(&mut self, capabilities: &Value) {
        let flag = |section: &str, name: &str| capabilities[section][name].as_bool() == Some(true);
        self.resources |= capabilities.get("resources").is_some();
        self.subscribe |= flag("resources", "subscribe");
        self.resources_list_changed |= flag("resources", "listChanged");
        self.prompts |= capabilities.get("prompts").is_some();
        self.prompts_list_changed |= flag("prompts", "listChanged");
        self.completions |= capabilities.get("completions").is_some();
    }
}

fn capabilities_path(dirs: &GatewayDirs, server: &str) -> std::path::PathBuf {
    dirs.files(server).capabilities
}

/// Caches the capabilities a server declared, for this very entry.
pub fn remember_capabilities(dirs: &GatewayDirs, config: &UpstreamConfig, capabilities: &Value) {
    let path = capabilities_path(dirs, &config.name);
    let record = json!({"fingerprint": config.fingerprint(), "capabilities": capabilities});
    if load_capabilities(dirs, config).as_ref() == Some(capabilities) {
        return;
    }
    let written = path
        .parent()
        .map_or(Ok(()), create_private_dir)
        .and_then(|()| write_private(&path, record.to_string().as_bytes(), Flush::Later));
    if let Err(error) = written {
        tracing::debug!(server = config.name, %error, "could not cache capabilities");
    }
}

/// The cached capabilities of `config`'s server, if saved for this entry.
pub fn load_capabilities(dirs: &GatewayDirs, config: &UpstreamConfig) -> Option<Value> {
    let text = std::fs::read_to_string(capabilities_path(dirs, &config.name)).ok()?;
    let record: Value = serde_json::from_str(&text).ok()?;
    (record["fingerprint"].as_str() == Some(config.fingerprint().as_str()))
        .then(|| record["capabilities"].clone())
}
