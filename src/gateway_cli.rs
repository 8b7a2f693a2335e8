//! `zenmode upstream ...`: the servers zenmode fronts, managed like
//! `claude mcp add` manages Claude Code's. Edits keep the rest of the file
//! (other entries, other clients' keys) as it was, and a file that would not
//! load is never written.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Map, Value, json};

use crate::services::gateway::{
    Pins, Verdict,
    config::{self, UpstreamConfig},
    live,
    store::{self, GatewayDirs},
    upstream::Upstream,
};

#[derive(Debug, Subcommand)]
pub enum UpstreamCommand {
    /// Every configured server, its cached catalog and any quarantined tools
    List {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `zenmode upstream add NAME -- CMD ARGS...` or `--url URL`; its tools are approved as fetched now
    Add {
        name: String,
        /// A Streamable HTTP server instead of a command
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// HTTP header for --url, as 'Name: value' (repeatable)
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Environment variable for the command, as KEY=VALUE (repeatable)
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Mode-name prefix (default: NAME)
        #[arg(long)]
        prefix: Option<String>,
        /// Replace an entry of the same name
        #[arg(long)]
        replace: bool,
        /// Write the entry without starting the server
        #[arg(long)]
        no_fetch: bool,
        /// The command and its arguments, after `--`
        #[arg(last = true, value_name = "CMD ARGS")]
        command: Vec<String>,
    },
    /// Remove a server, its cached catalog and its approvals
    Remove { name: String },
    /// Start servers, re-read their tools and update the cache (all servers without NAME)
    Refresh { name: Option<String> },
    /// Approve the tools a server lists now, ending their quarantine
    Approve { name: String },
    /// Add the servers of another client's configuration file (Claude Desktop, Claude Code, Cursor)
    Import {
        file: PathBuf,
        /// Replace entries whose names already exist
        #[arg(long)]
        replace: bool,
        /// Write the entries without starting the servers
        #[arg(long)]
        no_fetch: bool,
    },
}

/// How long `add` and `remove` wait for running servers to reload the file
/// (they check it once a second).
const PICKUP_WAIT: Duration = Duration::from_secs(4);

/// Where `upstream add` writes when no `--upstreams` is given:
/// `ZEN_CONFIG_DIR`, else the platform's config directory, `zenmode/upstreams.json`.
pub fn default_upstreams_file() -> PathBuf {
    std::env::var_os("ZEN_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::config_dir().map(|dir| dir.join("zenmode")))
        .unwrap_or_else(|| PathBuf::from(".zenmode"))
        .join("upstreams.json")
}

/// Runs one `upstream` command on `file` (`--upstreams`, else the default
/// file), waiting at most `wait_secs` for a server to list its tools.
pub fn run(
    file: Option<PathBuf>,
    wait_secs: f64,
    command: UpstreamCommand,
) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(default_upstreams_file);
    let dirs = GatewayDirs::from_env();
    let wait = Duration::from_secs_f64(if wait_secs.is_finite() {
        wait_secs.clamp(0.1, 600.0)
    } else {
        20.0
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match command {
        UpstreamCommand::List { json } => list(&file, &dirs, json),
        UpstreamCommand::Add {
            name,
            url,
            headers,
            env,
            prefix,
            replace,
            no_fetch,
            command,
        } => {
            let entry = new_entry(url, &headers, &env, prefix, &command)?;
            let mut added = Map::new();
            added.insert(name, entry);
            let names = write_entries(&file, added, replace)?;
            if !no_fetch {
                runtime.block_on(approve_all(&file, &dirs, &names, wait))?;
            }
            println!("{}", live::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(ExitCode::SUCCESS)
        }
        UpstreamCommand::Remove { name } => {
            let mut document = read_document(&file)?;
            let servers = servers_mut(&mut document, &file)?;
            if servers.shift_remove(&name).is_none() {
                bail!("{}: no server named {name:?}", file.display());
            }
            write_document(&file, &document)?;
            store::forget_catalog(&dirs, &name);
            store::forget_pins(&dirs, &name);
            println!("removed {name:?} from {}", file.display());
            println!("{}", live::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(ExitCode::SUCCESS)
        }
        UpstreamCommand::Refresh { name } => {
            let configs = chosen(&file, name.as_deref())?;
            let mut failed = false;
            for config in configs.iter().filter(|c| c.enabled) {
                match runtime.block_on(fetch(config, &dirs, wait)) {
                    Ok(tools) => {
                        let pins = store::load_pins(&dirs, &config.name).unwrap_or_default();
                        let held = tools
                            .iter()
                            .filter(|tool| pins.verdict(tool) != Verdict::Approved)
                            .count();
                        println!(
                            "{}: {} tools cached{}",
                            config.name,
                            tools.len(),
                            if held > 0 {
                                format!(
                                    ", {held} quarantined (see `zenmode upstream list`; approve with `zenmode upstream approve {}`)",
                                    config.name
                                )
                            } else {
                                String::new()
                            }
                        );
                    }
                    Err(problem) => {
                        failed = true;
                        println!("{}: {problem}", config.name);
                    }
                }
            }
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        UpstreamCommand::Approve { name } => {
            chosen(&file, Some(&name))?;
            runtime.block_on(approve_all(&file, &dirs, &[name], wait))?;
            Ok(ExitCode::SUCCESS)
        }
        UpstreamCommand::Import {
            file: source,
            replace,
            no_fetch,
        } => {
            let imported = read_document(&source)?;
            let servers = imported
                .get("mcpServers")
                .and_then(Value::as_object)
                .cloned()
                .with_context(|| format!("{}: has no \"mcpServers\" object", source.display()))?;
            if servers.is_empty() {
                bail!("{}: \"mcpServers\" is empty", source.display());
            }
            let names = write_entries(&file, servers, replace)?;
            if !no_fetch {
                runtime.block_on(approve_all(&file, &dirs, &names, wait))?;
            }
            println!("{}", live::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The entry `upstream add` writes.
fn new_entry(
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

fn read_document(file: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))
}

fn servers_mut<'a>(
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

/// Adds `entries` to the file (created when missing); returns their names.
fn write_entries(
    file: &Path,
    entries: Map<String, Value>,
    replace: bool,
) -> anyhow::Result<Vec<String>> {
    let mut document = if file.exists() {
        read_document(file)?
    } else {
        json!({"mcpServers": {}})
    };
    let servers = servers_mut(&mut document, file)?;
    let mut names = Vec::new();
    for (name, entry) in entries {
        if servers.contains_key(&name) && !replace {
            bail!(
                "{}: a server named {name:?} exists already; pass --replace to overwrite it",
                file.display()
            );
        }
        servers.insert(name.clone(), entry);
        names.push(name);
    }
    write_document(file, &document)?;
    for name in &names {
        println!("added {name:?} to {}", file.display());
    }
    Ok(names)
}

/// Writes the file only if it loads, so a bad edit never breaks start-up.
fn write_document(file: &Path, document: &Value) -> anyhow::Result<()> {
    let checked = config::parse(document)
        .map_err(|problem| anyhow::anyhow!("{}: {problem}", file.display()))?;
    for warning in checked.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let temporary = file.with_extension("json.tmp");
    std::fs::write(&temporary, serde_json::to_string_pretty(document)? + "\n")
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, file).with_context(|| format!("cannot write {}", file.display()))
}

/// The configured servers, or the one named (an error names the known ones).
fn chosen(file: &Path, name: Option<&str>) -> anyhow::Result<Vec<UpstreamConfig>> {
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
async fn fetch(
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

/// Fetches each named server's tools and pins them as approved.
async fn approve_all(
    file: &Path,
    dirs: &GatewayDirs,
    names: &[String],
    wait: Duration,
) -> anyhow::Result<()> {
    let configs = config::load(file)?.servers;
    let mut failures = Vec::new();
    for name in names {
        let Some(config) = configs.iter().find(|c| &c.name == name) else {
            continue;
        };
        match fetch(config, dirs, wait).await {
            Ok(tools) => {
                let before = store::load_pins(dirs, name).unwrap_or_default();
                let changed = tools
                    .iter()
                    .filter(|tool| before.verdict(tool) != Verdict::Approved)
                    .count();
                store::save_pins(dirs, name, &Pins::of(&tools))
                    .with_context(|| format!("cannot save the approvals of {name:?}"))?;
                println!(
                    "{name}: approved {} tools ({changed} new or changed since the last approval)",
                    tools.len()
                );
            }
            Err(problem) => failures.push(format!("{name}: {problem}")),
        }
    }
    if !failures.is_empty() {
        bail!(
            "could not fetch tools to approve; the entries are written, run `zenmode upstream approve NAME` once the server starts:\n  {}",
            failures.join("\n  ")
        );
    }
    Ok(())
}

fn list(file: &Path, dirs: &GatewayDirs, json: bool) -> anyhow::Result<ExitCode> {
    if !file.exists() {
        if json {
            println!(
                "{}",
                json!({"file": file.display().to_string(), "servers": []})
            );
        } else {
            println!(
                "no upstreams file at {} (add one with `zenmode upstream add NAME -- CMD ARGS...`)",
                file.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let configs = config::load(file)?.servers;
    let mut rows = Vec::new();
    for config in &configs {
        let cached = store::load_catalog(dirs, config);
        let pins = store::load_pins_with_definitions(dirs, &config.name);
        let mut quarantined = Vec::new();
        let mut filtered = 0;
        if let (Some(tools), Some(pins)) = (&cached, &pins) {
            for tool in tools {
                let name = store::tool_name(tool).unwrap_or_default();
                if !config.allows(name) {
                    filtered += 1;
                    continue;
                }
                let verdict = pins.verdict(tool);
                if verdict != Verdict::Approved {
                    quarantined.push(json!({
                        "tool": name,
                        "reason": verdict.reason(),
                        "changed": pins.changes(tool),
                    }));
                }
            }
        }
        rows.push(json!({
            "server": config.name,
            "prefix": config.prefix,
            "enabled": config.enabled,
            "target": config.describe(),
            "cached_tools": cached.as_ref().map(Vec::len),
            "cached_at": store::catalog_age(dirs, config),
            "approved": pins.is_some(),
            "filtered": filtered,
            "quarantined": quarantined,
        }));
    }
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "servers": rows})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", file.display());
    for row in &rows {
        let tools = match row["cached_tools"].as_u64() {
            Some(n) => format!("{n} tools cached"),
            None => "not cached yet".to_owned(),
        };
        println!(
            "  {:<16} prefix {:<12} {:<9} {:<16} {}",
            row["server"].as_str().unwrap_or_default(),
            row["prefix"].as_str().unwrap_or_default(),
            if row["enabled"] == true {
                "enabled"
            } else {
                "disabled"
            },
            tools,
            row["target"].as_str().unwrap_or_default()
        );
        for held in row["quarantined"].as_array().into_iter().flatten() {
            let changed: Vec<&str> = held["changed"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            println!(
                "      quarantined: {} ({}{})",
                held["tool"].as_str().unwrap_or_default(),
                held["reason"].as_str().unwrap_or_default(),
                if changed.is_empty() {
                    String::new()
                } else {
                    format!(": {} changed", changed.join(", "))
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
