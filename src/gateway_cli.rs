//! `zenmode upstream ...`: the servers zenmode fronts, managed like
//! `claude mcp add` manages Claude Code's. Edits keep the rest of the file
//! (other entries, other clients' keys) as it was, and a file that would not
//! load is never written; nor is a server that fails to start (unless
//! `--keep`), nor one that runs zenmode itself. The file is private (0600).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Map, Value, json};

use crate::gateway_import;
use crate::services::gateway::{
    Pins, Verdict,
    config::{self, UpstreamConfig},
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
        /// Write the entry, disabled, even when the server fails to start
        #[arg(long)]
        keep: bool,
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
    /// Add the servers of other clients (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf): from FILE, or from the usual files, shown first
    Import {
        /// One client's file; without it the usual files are found and shown
        file: Option<PathBuf>,
        /// Replace entries whose names already exist
        #[arg(long)]
        replace: bool,
        /// Write the entries without starting the servers
        #[arg(long)]
        no_fetch: bool,
        /// Write entries whose server fails to start too, disabled
        #[arg(long)]
        keep: bool,
        /// Import what the usual files hold without asking
        #[arg(long, visible_alias = "all")]
        yes: bool,
    },
}

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
            keep,
            command,
        } => {
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
            runtime.block_on(add_entries(&file, &dirs, added, &how))
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
            keep,
            yes,
        } => {
            let how = Adding {
                replace,
                fetch: !no_fetch,
                keep,
                wait,
            };
            let cwd = std::env::current_dir().unwrap_or_default();
            let found = match source {
                Some(source) => {
                    let document = read_document(&source)?;
                    let servers =
                        gateway_import::servers_in(&document, &cwd).with_context(|| {
                            format!(
                                "{}: has no \"mcpServers\" (or VS Code \"servers\") object",
                                source.display()
                            )
                        })?;
                    vec![gateway_import::Found {
                        label: "given file".into(),
                        path: source,
                        servers,
                    }]
                }
                None => {
                    let mut problems = Vec::new();
                    let found = gateway_import::discover(&cwd, &mut problems);
                    for problem in problems {
                        eprintln!("warning: skipping {problem}");
                    }
                    found
                }
            };
            let discovered = !matches!(found.first(), Some(f) if f.label == "given file");
            let entries = choose_imports(&file, found, replace)?;
            if entries.is_empty() {
                println!("nothing to import");
                return Ok(ExitCode::SUCCESS);
            }
            if discovered && !yes && !confirmed(entries.len())? {
                return Ok(ExitCode::SUCCESS);
            }
            runtime.block_on(add_entries(&file, &dirs, entries, &how))
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

/// How `add` and `import` add entries.
struct Adding {
    replace: bool,
    /// Start each server first; one that fails is not written (see `keep`).
    fetch: bool,
    /// Write a server that fails to start, disabled.
    keep: bool,
    wait: Duration,
}

/// Adds `entries` to the file (created when missing). With `fetch`, each
/// server is started first and its tools approved; one that fails is left
/// out (or, with `keep`, written disabled) and the exit code says so. The
/// file is checked as a whole before any server starts.
async fn add_entries(
    file: &Path,
    dirs: &GatewayDirs,
    entries: Map<String, Value>,
    how: &Adding,
) -> anyhow::Result<ExitCode> {
    let mut document = if file.exists() {
        read_document(file)?
    } else {
        json!({"mcpServers": {}})
    };
    let mut candidate = document.clone();
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
    let servers = servers_mut(&mut document, file)?;
    let mut written = Vec::new();
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
        servers.insert(name.clone(), entry);
        written.push(name);
    }
    if !written.is_empty() {
        write_document(file, &document)?;
    }
    for name in &written {
        let note = if is_failed(name) {
            " (disabled, since its server did not start: set \"enabled\": true once it does)"
        } else {
            ""
        };
        println!("added {name:?} to {}{note}", file.display());
    }
    for (name, tools) in &approved {
        pin(dirs, name, tools)?;
    }
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
fn runs_zenmode(name: &str, entry: &Value) -> anyhow::Result<Option<String>> {
    let config = config::parse_one(name, entry).map_err(|problem| anyhow::anyhow!(problem))?;
    Ok(config::runs_zenmode(&config))
}

/// Shows, source by source, what importing would do, and returns the
/// entries to import: none that runs zenmode, does not load, or would
/// replace an entry without `replace`; the first of two of a name.
fn choose_imports(
    file: &Path,
    found: Vec<gateway_import::Found>,
    replace: bool,
) -> anyhow::Result<Map<String, Value>> {
    let existing = if file.exists() {
        read_document(file)?
            .get("mcpServers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    } else {
        Map::new()
    };
    if found.is_empty() {
        println!("no client configuration with MCP servers found; looked at:");
        let cwd = std::env::current_dir().unwrap_or_default();
        for (label, path) in gateway_import::usual_files(&cwd) {
            println!("  {label}: {}", path.display());
        }
    }
    let mut chosen = Map::new();
    for source in found {
        println!("{} ({}):", source.label, source.path.display());
        for (name, entry) in source.servers {
            let verdict = match config::parse_one(&name, &entry) {
                Err(problem) => format!("skipped: {problem}"),
                Ok(checked) => match config::runs_zenmode(&checked) {
                    Some(why) => config::self_skip_message(&name, &why),
                    None if chosen.get(&name) == Some(&entry) => "the same as above".into(),
                    None if chosen.contains_key(&name) => {
                        "skipped: an entry above has this name; import this file alone with --replace to take this one".into()
                    }
                    None if existing.get(&name) == Some(&entry) => "already in the upstreams file".into(),
                    None if existing.contains_key(&name) && !replace => format!(
                        "skipped: {} has a server of this name; --replace overwrites it",
                        file.display()
                    ),
                    None => {
                        let target = checked.describe();
                        chosen.insert(name.clone(), entry);
                        format!("to import: {target}")
                    }
                },
            };
            println!("  {name}: {verdict}");
        }
    }
    Ok(chosen)
}

/// Asks on a terminal whether to import `count` servers; elsewhere says
/// what to run and answers no (never waits on a stdin that is not a person).
fn confirmed(count: usize) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        println!(
            "nothing written; run `zenmode upstream import --yes` to import these {count} servers"
        );
        return Ok(false);
    }
    eprint!("import these {count} servers? [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if !yes {
        println!("nothing written");
    }
    Ok(yes)
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
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let temporary = file.with_extension("json.tmp");
    write_private(
        &temporary,
        (serde_json::to_string_pretty(document)? + "\n").as_bytes(),
    )
    .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, file).with_context(|| format!("cannot write {}", file.display()))
}

/// Writes `bytes` to a file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut out = options.open(path)?;
    // A file left from before keeps its mode on open: set it.
    #[cfg(unix)]
    out.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    out.write_all(bytes)?;
    out.sync_all()
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
            Ok(tools) => pin(dirs, name, &tools)?,
            Err(problem) => failures.push(format!("{name}: {problem}")),
        }
    }
    if !failures.is_empty() {
        bail!(
            "could not fetch tools to approve; run `zenmode upstream approve NAME` once the server starts:\n  {}",
            failures.join("\n  ")
        );
    }
    Ok(())
}

/// Approves `tools` as the server's current definitions.
fn pin(dirs: &GatewayDirs, name: &str, tools: &[Value]) -> anyhow::Result<()> {
    let before = store::load_pins(dirs, name).unwrap_or_default();
    let changed = tools
        .iter()
        .filter(|tool| before.verdict(tool) != Verdict::Approved)
        .count();
    store::save_pins(dirs, name, &Pins::of(tools))
        .with_context(|| format!("cannot save the approvals of {name:?}"))?;
    println!(
        "{name}: approved {} tools ({changed} new or changed since the last approval)",
        tools.len()
    );
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
