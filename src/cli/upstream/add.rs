//! `zenmode upstream add`, and the adding that `import` and `setup
//! --move-servers` share: each server started and approved first.

use std::{path::Path, process::ExitCode, time::Duration};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::{
    file::{
        PICKUP_WAIT, fetch, gateway_servers, read_document, servers_mut, update_upstreams_file,
    },
    review::save_approval,
    vectors,
};
use crate::gateway::{
    config::{self},
    disk::GatewayDirs,
    serving,
};

/// `upstream add`: one server, started first unless `--no-fetch`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    file: &Path,
    dirs: &GatewayDirs,
    runtime: &tokio::runtime::Runtime,
    wait: Duration,
    name: String,
    url: Option<String>,
    headers: Vec<String>,
    env: Vec<String>,
    prefix: Option<String>,
    replace: bool,
    no_fetch: bool,
    keep: bool,
    command: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let entry = new_entry(url, &headers, &env, prefix, &command)?;
    if let Some(why) = runs_zenmode(&name, &entry)? {
        bail!("{}", config::self_skip_message(&name, &why));
    }
    let mut added = Map::new();
    added.insert(name, entry);
    let how = Adding {
        replace,
        fetch: !no_fetch,
        keep,
        wait,
    };
    let before = serving::Stamp::of(file);
    let outcome = runtime.block_on(add_entries(file, dirs, added, &how))?;
    report_pickup(dirs, file, before.as_ref());
    Ok(outcome)
}

/// Says whether running zenmode servers picked the file up, but only when
/// this command changed it (`before` is its stamp beforehand): after a
/// failed add nothing was written, and a line about "the next start" using
/// it would contradict the error.
pub fn report_pickup(dirs: &GatewayDirs, file: &Path, before: Option<&serving::Stamp>) {
    let after = serving::Stamp::of(file);
    let changed = match (before, after.as_ref()) {
        (Some(before), Some(after)) => !before.same_file(after),
        (None, after) => after.is_some(),
        (Some(_), None) => true,
    };
    if changed {
        println!("{}", serving::pickup_report(dirs, file, PICKUP_WAIT));
    }
}

/// Adds `entries` to the upstreams `file` as `upstream import` does (each
/// server started and its tools approved first; one that fails is left
/// out) for `zenmode setup --move-servers`; returns the names written.
pub fn move_in(
    file: &Path,
    entries: Map<String, Value>,
    wait: Duration,
) -> anyhow::Result<Vec<String>> {
    let dirs = GatewayDirs::from_env();
    let runtime = crate::cli::runtime::runtime(false)?;
    let how = Adding {
        replace: false,
        fetch: true,
        keep: false,
        wait,
    };
    runtime.block_on(add_entries(file, &dirs, entries.clone(), &how))?;
    let now = gateway_servers(file)?;
    Ok(entries
        .iter()
        .filter(|(name, entry)| now.get(*name) == Some(*entry))
        .map(|(name, _)| name.clone())
        .collect())
}

/// The entry `upstream add` writes.
pub fn new_entry(
    url: Option<String>,
    headers: &[String],
    env: &[String],
    prefix: Option<String>,
    command: &[String],
) -> anyhow::Result<Value> {
    let mut entry = Map::new();
    match (url, command.split_first()) {
        (Some(url), None) => {
            entry.insert("type".into(), json!("http"));
            entry.insert("url".into(), json!(url));
            let mut map = Map::new();
            for header in headers {
                let (key, value) = header
                    .split_once(':')
                    .with_context(|| format!("--header {header:?} must look like 'Name: value'"))?;
                map.insert(key.trim().to_owned(), json!(value.trim()));
            }
            if !map.is_empty() {
                entry.insert("headers".into(), Value::Object(map));
            }
        }
        (None, Some((program, args))) => {
            if !headers.is_empty() {
                bail!("--header is for --url servers");
            }
            entry.insert("command".into(), json!(program));
            entry.insert("args".into(), json!(args));
        }
        (Some(_), Some(_)) => bail!("give either --url or a command after --, not both"),
        (None, None) => bail!(
            "give the server's command after --, e.g. `zenmode upstream add fs -- npx -y @modelcontextprotocol/server-filesystem /tmp`, or --url"
        ),
    }
    if !env.is_empty() {
        let mut map = Map::new();
        for pair in env {
            let (key, value) = pair
                .split_once('=')
                .with_context(|| format!("--env {pair:?} must look like KEY=VALUE"))?;
            map.insert(key.to_owned(), json!(value));
        }
        entry.insert("env".into(), Value::Object(map));
    }
    if let Some(prefix) = prefix {
        entry.insert("prefix".into(), json!(prefix));
    }
    Ok(Value::Object(entry))
}

/// How `add` and `import` add entries.
pub struct Adding {
    pub replace: bool,
    /// Start each server first; one that fails is not written (see `keep`).
    pub fetch: bool,
    /// Write a server that fails to start, disabled.
    pub keep: bool,
    pub wait: Duration,
}

/// Adds `entries` to the file (created when missing). With `fetch`, each
/// server is started first and its tools approved; one that fails is left
/// out (or, with `keep`, written disabled) and the exit code says so. The
/// file is checked as a whole before any server starts.
pub async fn add_entries(
    file: &Path,
    dirs: &GatewayDirs,
    entries: Map<String, Value>,
    how: &Adding,
) -> anyhow::Result<ExitCode> {
    let mut candidate = if file.exists() {
        read_document(file)?
    } else {
        json!({"mcpServers": {}})
    };
    let servers = servers_mut(&mut candidate, file)?;
    for (name, entry) in &entries {
        if servers.contains_key(name) && !how.replace {
            bail!(
                "{}: a server named {name:?} exists already; pass --replace to overwrite it",
                file.display()
            );
        }
        servers.insert(name.clone(), entry.clone());
    }
    let checked = config::parse(&candidate)
        .map_err(|problem| anyhow::anyhow!("{}: {problem}; nothing was written", file.display()))?;
    let mut approved = Vec::new();
    let mut failed = Vec::new();
    for config in checked.servers.iter().filter(|c| how.fetch && c.enabled) {
        if entries.contains_key(&config.name) {
            match fetch(config, dirs, how.wait).await {
                Ok(tools) => approved.push((config.name.clone(), tools)),
                Err(problem) => failed.push((config.name.clone(), problem)),
            }
        }
    }
    let is_failed = |name: &str| failed.iter().any(|(n, _)| n == name);
    let mut kept = Vec::new();
    for (name, mut entry) in entries {
        if is_failed(&name) {
            if !how.keep {
                continue;
            }
            if let Some(fields) = entry.as_object_mut() {
                fields.shift_remove("disabled");
                fields.insert("enabled".into(), json!(false));
            }
        }
        kept.push((name, entry));
    }
    // The file as it is now, not as it was before the servers started:
    // another command may have changed it meanwhile.
    let written = if kept.is_empty() {
        Vec::new()
    } else {
        update_upstreams_file(file, |document| {
            let servers = servers_mut(document, file)?;
            for (name, _) in &kept {
                if servers.contains_key(name) && !how.replace {
                    bail!(
                        "{}: a server named {name:?} was added meanwhile; nothing was written; pass --replace to overwrite it",
                        file.display()
                    );
                }
            }
            let mut written = Vec::new();
            for (name, entry) in kept {
                servers.insert(name.clone(), entry);
                written.push(name);
            }
            Ok(written)
        })?
    };
    for name in &written {
        let note = if is_failed(name) {
            " (disabled, since its server did not start: set \"enabled\": true once it does)"
        } else {
            ""
        };
        println!("added {name:?} to {}{note}", file.display());
    }
    for (name, tools) in &approved {
        save_approval(dirs, name, tools)?;
    }
    let encode: Vec<vectors::Approved<'_>> = approved
        .iter()
        .filter(|(name, _)| written.contains(name))
        .filter_map(|(name, tools)| {
            let config = checked.servers.iter().find(|c| &c.name == name)?;
            Some(vectors::Approved {
                name,
                prefix: &config.prefix,
                tools,
            })
        })
        .collect();
    vectors::compute(dirs, &encode);
    if failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for (name, problem) in &failed {
        eprintln!("{name}: {problem}");
    }
    if how.keep {
        eprintln!("the servers above did not start; their entries are written disabled");
    } else {
        eprintln!(
            "the servers above did not start, so nothing was written for them; fix them and add again, or pass --keep to write them disabled"
        );
    }
    Ok(ExitCode::FAILURE)
}

/// Why the entry `upstream add` would write runs zenmode itself, if it does.
pub fn runs_zenmode(name: &str, entry: &Value) -> anyhow::Result<Option<String>> {
    let config = config::parse_one(name, entry).map_err(|problem| anyhow::anyhow!(problem))?;
    Ok(config::runs_zenmode(&config))
}
