//! The upstreams file as the `upstream` subcommands read and write it:
//! where it is by default, loading it, choosing servers, writing it back
//! only when it loads, and starting a server to read its tools.

use std::{path::Path, time::Duration};

use crate::platform::private_file;
use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use crate::gateway::{
    config::{self, UpstreamConfig},
    connection::Upstream,
    disk::GatewayDirs,
};

/// How long `add` and `remove` wait for running servers to reload the file
/// (they check it once a second).
pub const PICKUP_WAIT: Duration = Duration::from_secs(4);

/// What `doctor` and `status` say about an upstreams file that does not
/// load: the problem, and what to do.
pub fn does_not_load(file: &Path, problem: &dyn std::fmt::Display) -> (String, &'static str) {
    (
        format!("{} does not load: {problem}", file.display()),
        "correct the file (it must be JSON with an \"mcpServers\" object)",
    )
}

/// The servers in the upstreams `file` (none when it does not exist yet).
pub fn gateway_servers(file: &Path) -> anyhow::Result<Map<String, Value>> {
    if !file.exists() {
        return Ok(Map::new());
    }
    let mut document = read_document(file)?;
    Ok(servers_mut(&mut document, file)?.clone())
}

pub fn read_document(file: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))
}

pub fn servers_mut<'a>(
    document: &'a mut Value,
    file: &Path,
) -> anyhow::Result<&'a mut Map<String, Value>> {
    let Value::Object(root) = document else {
        bail!("{} is not a JSON object", file.display());
    };
    root.entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .with_context(|| format!("{}: \"mcpServers\" is not an object", file.display()))
}

/// The one way the upstreams `file` is changed: its lock is taken, the
/// file read (a missing one is `{"mcpServers": {}}`), `change` applied and
/// the result written back before the lock is let go, so two commands at
/// once (two `upstream add`, an `add` and a `remove`) never write back a
/// copy that lacks the other's edit. Nothing is written when `change`
/// fails or leaves the document as it was. `change` must be quick: a
/// server is started before, never while the lock is held.
pub fn update_upstreams_file<T>(
    file: &Path,
    change: impl FnOnce(&mut Value) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let _lock = private_file::lock_beside(file)
        .with_context(|| format!("cannot lock {}", file.display()))?;
    let before = if file.exists() {
        read_document(file)?
    } else {
        json!({"mcpServers": {}})
    };
    let mut document = before.clone();
    let outcome = change(&mut document)?;
    if document != before {
        write_document(file, &document)?;
    }
    Ok(outcome)
}

/// Writes the file only if it loads, so a bad edit never breaks start-up.
/// It can hold secrets: the file is 0600 (also when it was not) in a
/// directory created 0700.
fn write_document(file: &Path, document: &Value) -> anyhow::Result<()> {
    let checked = config::parse(document)
        .map_err(|problem| anyhow::anyhow!("{}: {problem}", file.display()))?;
    for warning in checked.warnings {
        eprintln!("warning: {warning}");
    }
    private_file::write_private(
        file,
        (serde_json::to_string_pretty(document)? + "\n").as_bytes(),
        private_file::Flush::ToDisk,
    )
    .with_context(|| format!("cannot write {}", file.display()))
}

/// The configured servers, or the one named (an error names the known ones).
pub fn chosen(file: &Path, name: Option<&str>) -> anyhow::Result<Vec<UpstreamConfig>> {
    let servers = config::load(file)?.servers;
    let Some(name) = name else {
        return Ok(servers);
    };
    let known: Vec<String> = servers.iter().map(|c| c.name.clone()).collect();
    let found: Vec<UpstreamConfig> = servers.into_iter().filter(|c| c.name == name).collect();
    if found.is_empty() {
        bail!(
            "{}: no server named {name:?} (configured: {})",
            file.display(),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    }
    Ok(found)
}

/// Starts a server, reads its tools (the cache is updated) and stops it.
pub async fn fetch(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
) -> Result<Vec<Value>, String> {
    let upstream = Upstream::new(config.clone(), dirs.clone(), None);
    let tools = match tokio::time::timeout(wait, upstream.tools()).await {
        Ok(Ok(tools)) => Ok(tools),
        Ok(Err(error)) => Err(error.message),
        Err(_) => Err(format!(
            "did not list its tools within {}s",
            wait.as_secs_f64()
        )),
    };
    upstream.stop().await;
    tools
}
