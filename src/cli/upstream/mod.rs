//! `zenmode upstream ...`: the servers zenmode fronts, managed like
//! `claude mcp add` manages Claude Code's. Edits keep the rest of the file
//! (other entries, other clients' keys) as it was, and a file that would not
//! load is never written; nor is a server that fails to start (unless
//! `--keep`), nor one that runs zenmode itself. The file is private (0600).

pub mod import;
pub mod login;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::{Map, Value, json};

use crate::gateway::{
    Pins, Verdict, catalog_cache,
    config::{self, UpstreamConfig},
    connection::Upstream,
    disk::GatewayDirs,
    pins, serving, status_file,
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
    /// Show what changed and approve the tools a server lists now, ending their quarantine
    Approve {
        name: String,
        /// Approve without asking (needed when standard input is not a terminal)
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Show a quarantined tool's approved and current definitions as a unified diff (every held tool without TOOL)
    Diff { name: String, tool: Option<String> },
    /// Turn a server on again (edits its entry only)
    Enable { name: String },
    /// Turn a server off without removing it (edits its entry only)
    Disable { name: String },
    /// A server's tools: approved or quarantined, and their read-only / destructive hints
    Tools {
        name: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// The end of a server's stderr log (kept while a serving zenmode runs it)
    Logs {
        name: String,
        /// How many lines
        #[arg(long, default_value_t = 50)]
        lines: usize,
    },
    /// Sign in to an HTTP server that asks for OAuth: prints the URL, opens a browser, waits for it on a loopback port
    Login {
        name: String,
        /// Only print the URL (for a machine without a browser)
        #[arg(long)]
        no_browser: bool,
    },
    /// Connect to URL as an upstream, sign in without a browser if asked, list its tools and call each (for the conformance suite)
    #[command(hide = true)]
    Probe {
        url: String,
        /// This client's metadata document URL, used as client ID where the authorization server supports it
        #[arg(long)]
        client_metadata_url: Option<String>,
    },
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
        UpstreamCommand::Login { name, no_browser } => {
            crate::cli::upstream::login::login(&file, &name, no_browser)
        }
        UpstreamCommand::Probe {
            url,
            client_metadata_url,
        } => crate::cli::upstream::login::probe(&url, client_metadata_url),
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
            let outcome = runtime.block_on(add_entries(&file, &dirs, added, &how))?;
            println!("{}", serving::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(outcome)
        }
        UpstreamCommand::Remove { name } => {
            let mut document = read_document(&file)?;
            let servers = servers_mut(&mut document, &file)?;
            if servers.shift_remove(&name).is_none() {
                bail!("{}: no server named {name:?}", file.display());
            }
            write_document(&file, &document)?;
            catalog_cache::forget_catalog(&dirs, &name);
            pins::forget_pins(&dirs, &name);
            println!("removed {name:?} from {}", file.display());
            println!("{}", serving::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(ExitCode::SUCCESS)
        }
        UpstreamCommand::Refresh { name } => {
            let configs = chosen(&file, name.as_deref())?;
            let mut failed = false;
            for config in configs.iter().filter(|c| c.enabled) {
                match runtime.block_on(fetch(config, &dirs, wait)) {
                    Ok(tools) => {
                        let pins = pins::load_pins(&dirs, &config.name).unwrap_or_default();
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
        UpstreamCommand::Approve { name, yes } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            runtime.block_on(approve_reviewed(&config, &dirs, wait, yes))
        }
        UpstreamCommand::Diff { name, tool } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            runtime.block_on(diff(&config, &dirs, wait, tool.as_deref()))
        }
        UpstreamCommand::Enable { name } => set_enabled(&file, &dirs, &name, true),
        UpstreamCommand::Disable { name } => set_enabled(&file, &dirs, &name, false),
        UpstreamCommand::Tools { name, json } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            runtime.block_on(tools(&config, &dirs, wait, json))
        }
        UpstreamCommand::Logs { name, lines } => {
            chosen(&file, Some(&name))?;
            let shown = status_file::tail(&dirs, &name, lines);
            if shown.is_empty() {
                println!(
                    "no stderr logged for {name:?} yet: {} is written while a serving zenmode runs the server",
                    status_file::log_path(&dirs, &name).display()
                );
            }
            for line in shown {
                println!("{line}");
            }
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
                    let servers = import::servers_in(&document, &cwd).with_context(|| {
                        format!(
                            "{}: has no \"mcpServers\" (or VS Code \"servers\") object",
                            source.display()
                        )
                    })?;
                    vec![import::Found {
                        label: "given file".into(),
                        path: source,
                        servers,
                    }]
                }
                None => {
                    let mut problems = Vec::new();
                    let found = import::discover(&cwd, &mut problems);
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
            let outcome = runtime.block_on(add_entries(&file, &dirs, entries, &how))?;
            println!("{}", serving::pickup_report(&dirs, &file, PICKUP_WAIT));
            Ok(outcome)
        }
    }
}

/// The servers in the upstreams `file` (none when it does not exist yet).
pub(crate) fn gateway_servers(file: &Path) -> anyhow::Result<Map<String, Value>> {
    if !file.exists() {
        return Ok(Map::new());
    }
    let mut document = read_document(file)?;
    Ok(servers_mut(&mut document, file)?.clone())
}

/// Adds `entries` to the upstreams `file` as `upstream import` does (each
/// server started and its tools approved first; one that fails is left
/// out) for `zenmode setup --move-servers`; returns the names written.
pub(crate) fn move_in(
    file: &Path,
    entries: Map<String, Value>,
    wait: Duration,
) -> anyhow::Result<Vec<String>> {
    let dirs = GatewayDirs::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
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
        save_approval(dirs, name, tools)?;
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
    found: Vec<import::Found>,
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
        for (label, path) in import::usual_files(&cwd) {
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

/// A directory (and its parents) only its owner can read: the gateway file
/// and the setup backups can hold servers' secrets.
pub(crate) fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
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
        create_private_dir(dir)?;
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

/// Pins `tools` as the approved definitions of `name`.
fn save_approval(dirs: &GatewayDirs, name: &str, tools: &[Value]) -> anyhow::Result<()> {
    let before = pins::load_pins(dirs, name).unwrap_or_default();
    let changed = tools
        .iter()
        .filter(|tool| before.verdict(tool) != Verdict::Approved)
        .count();
    pins::save_pins(dirs, name, &Pins::of(tools))
        .with_context(|| format!("cannot save the approvals of {name:?}"))?;
    println!(
        "{name}: approved {} tools ({changed} new or changed since the last approval)",
        tools.len()
    );
    Ok(())
}

/// `upstream approve`: fetches the tools, shows what changed since the
/// last approval, and pins them once confirmed (`--yes`, or an answer on a
/// terminal). Without a terminal it never waits for an answer.
async fn approve_reviewed(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let name = &config.name;
    let tools = fetch(config, dirs, wait)
        .await
        .map_err(|problem| anyhow::anyhow!("{name}: {problem}"))?;
    let review = match pins::load_pins_with_definitions(dirs, name) {
        // Nothing approved before: there is nothing to compare with.
        None => String::new(),
        Some(pins) => review_text(name, &pins, &tools, None),
    };
    if review.is_empty() || yes {
        print!("{review}");
        save_approval(dirs, name, &tools)?;
        return Ok(ExitCode::SUCCESS);
    }
    print!("{review}");
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "not approved: standard input is not a terminal, so nobody can confirm. Read the changes above, then run `zenmode upstream approve {name} --yes`."
        );
        return Ok(ExitCode::FAILURE);
    }
    print!("Approve these definitions of {name:?}? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        save_approval(dirs, name, &tools)?;
        Ok(ExitCode::SUCCESS)
    } else {
        println!("not approved; nothing changed");
        Ok(ExitCode::FAILURE)
    }
}

/// The tools of `config`'s server: the cached catalog, else fetched now.
async fn current_tools(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
) -> anyhow::Result<Vec<Value>> {
    match catalog_cache::load_catalog(dirs, config) {
        Some(tools) => Ok(tools),
        None => fetch(config, dirs, wait)
            .await
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", config.name)),
    }
}

/// `upstream diff NAME [TOOL]`.
async fn diff(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    tool: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let name = &config.name;
    let tools = current_tools(config, dirs, wait).await?;
    if let Some(tool) = tool
        && !tools.iter().any(|t| pins::tool_name(t) == Some(tool))
    {
        bail!("{name}: lists no tool named {tool:?}");
    }
    let pins = pins::load_pins_with_definitions(dirs, name).unwrap_or_default();
    let review = review_text(name, &pins, &tools, tool);
    if review.is_empty() {
        match tool {
            Some(tool) => println!("{name}: {tool} is as approved"),
            None => println!("{name}: every tool is as approved; nothing to review"),
        }
    }
    print!("{review}");
    Ok(ExitCode::SUCCESS)
}

/// A unified diff per tool that differs from its approval (only `only`
/// when given): approved lines with `-`, current ones with `+`.
fn review_text(server: &str, pins: &Pins, tools: &[Value], only: Option<&str>) -> String {
    let mut out = String::new();
    for tool in tools {
        let Some(name) = pins::tool_name(tool) else {
            continue;
        };
        if only.is_some_and(|wanted| wanted != name) {
            continue;
        }
        let verdict = pins.verdict(tool);
        if verdict == Verdict::Approved {
            continue;
        }
        let current = pretty(&pins::defining(tool));
        let approved = match pins.definitions.get(name) {
            Some(definition) => pretty(definition),
            None if verdict == Verdict::New => String::new(),
            None => {
                out.push_str(&format!(
                    "# {server}/{name}: the approved text was not kept (approved by an older zenmode); only the current definition can be shown\n"
                ));
                String::new()
            }
        };
        out.push_str(&format!(
            "--- {server}/{name} (approved)\n+++ {server}/{name} (now: {})\n",
            verdict.reason()
        ));
        out.push_str(&unified(&approved, &current));
    }
    out
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A line diff of `old` and `new` (longest common subsequence), every line
/// shown: ` ` kept, `-` only in `old`, `+` only in `new`.
fn unified(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || common[i][j + 1] >= common[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}

/// `upstream enable|disable NAME`: the entry's `enabled` changes, nothing else.
fn set_enabled(
    file: &Path,
    dirs: &GatewayDirs,
    name: &str,
    enabled: bool,
) -> anyhow::Result<ExitCode> {
    let mut document = read_document(file)?;
    let servers = servers_mut(&mut document, file)?;
    let Some(Value::Object(entry)) = servers.get_mut(name) else {
        bail!("{}: no server named {name:?}", file.display());
    };
    entry.shift_remove("disabled");
    entry.insert("enabled".into(), json!(enabled));
    write_document(file, &document)?;
    println!(
        "{} {name:?} in {}",
        if enabled { "enabled" } else { "disabled" },
        file.display(),
    );
    println!("{}", serving::pickup_report(dirs, file, PICKUP_WAIT));
    Ok(ExitCode::SUCCESS)
}

/// Whether a tool says it only reads, or may destroy something.
fn hints(tool: &Value) -> (bool, bool) {
    let hint = |key: &str| tool.pointer(&format!("/annotations/{key}")) == Some(&Value::Bool(true));
    let named = crate::engine::named_destructive(pins::tool_name(tool).unwrap_or_default());
    (hint("readOnlyHint"), hint("destructiveHint") || named)
}

/// `upstream tools NAME`.
async fn tools(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let tools = current_tools(config, dirs, wait).await?;
    let pins = pins::load_pins(dirs, &config.name);
    let rows: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let name = pins::tool_name(tool).unwrap_or_default();
            let standing = if !config.allows(name) {
                "filtered out".to_owned()
            } else {
                match pins.as_ref().map(|pins| pins.verdict(tool)) {
                    None => "not approved yet".to_owned(),
                    Some(Verdict::Approved) => "approved".to_owned(),
                    Some(verdict) => format!("quarantined ({})", verdict.reason()),
                }
            };
            let (read_only, destructive) = hints(tool);
            json!({
                "tool": name,
                "mode": crate::catalog::gateway_modes::mode_name(&config.prefix, name),
                "standing": standing,
                "read_only": read_only,
                "destructive": destructive,
                "summary": first_line(
                    tool.get("description").and_then(Value::as_str).unwrap_or_default(),
                ),
            })
        })
        .collect();
    if json {
        println!("{}", json!({"server": config.name, "tools": rows}));
        return Ok(ExitCode::SUCCESS);
    }
    for row in &rows {
        let hint = match (row["read_only"] == true, row["destructive"] == true) {
            (_, true) => "destructive",
            (true, false) => "read-only",
            _ => "-",
        };
        println!(
            "{:<28} {:<12} {:<11} {}",
            row["tool"].as_str().unwrap_or_default(),
            row["standing"].as_str().unwrap_or_default(),
            hint,
            row["summary"].as_str().unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn list(file: &Path, dirs: &GatewayDirs, json: bool) -> anyhow::Result<ExitCode> {
    if !file.exists() {
        return Ok(no_upstreams_file(file, json));
    }
    let configs = config::load(file)?.servers;
    let mut rows = Vec::new();
    for config in &configs {
        let cached = catalog_cache::load_catalog(dirs, config);
        let pins = pins::load_pins_with_definitions(dirs, &config.name);
        let mut quarantined = Vec::new();
        let mut filtered = 0;
        if let (Some(tools), Some(pins)) = (&cached, &pins) {
            for tool in tools {
                let name = pins::tool_name(tool).unwrap_or_default();
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
            "cached_at": catalog_cache::catalog_age(dirs, config),
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

/// The first line of `text`, at most 80 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// Whether the process `pid` still runs.
fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let found = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        found
            && !std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
                status
                    .lines()
                    .any(|l| l.starts_with("State:") && l.contains('Z'))
            })
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// One server as `zenmode status` shows it.
fn server_status(config: &UpstreamConfig, dirs: &GatewayDirs) -> Value {
    let cached = catalog_cache::load_catalog(dirs, config);
    let pins = pins::load_pins(dirs, &config.name);
    let quarantined: Vec<&str> = match (&cached, &pins) {
        (Some(tools), Some(pins)) => tools
            .iter()
            .filter(|tool| config.allows(pins::tool_name(tool).unwrap_or_default()))
            .filter(|tool| pins.verdict(tool) != Verdict::Approved)
            .filter_map(pins::tool_name)
            .collect(),
        _ => Vec::new(),
    };
    let recorded = status_file::load(dirs, &config.name);
    let mut note = None;
    let state_name = match &recorded {
        _ if !config.enabled => "disabled".to_owned(),
        None => "never started".to_owned(),
        Some(recorded)
            if matches!(recorded.state.as_str(), "running" | "starting")
                && !process_alive(recorded.zenmode_pid) =>
        {
            note = Some(format!(
                "the zenmode process {} that ran it has ended",
                recorded.zenmode_pid
            ));
            "stopped".to_owned()
        }
        Some(recorded) => recorded.state.clone(),
    };
    let running = state_name == "running";
    json!({
        "server": config.name,
        "enabled": config.enabled,
        "state": state_name,
        "note": note,
        "target": config.describe(),
        "tools": recorded.as_ref().and_then(|r| r.tools).or(cached.as_ref().map(Vec::len)),
        "quarantined": quarantined,
        "pid": recorded.as_ref().filter(|_| running).and_then(|r| r.pid),
        "zenmode_pid": recorded.as_ref().map(|r| r.zenmode_pid),
        "last_error": recorded.as_ref().and_then(|r| r.last_error.clone()),
        "stderr_tail": recorded.as_ref().map(|r| r.stderr_tail.clone()).unwrap_or_default(),
        "last_call": recorded.as_ref().and_then(|r| r.last_call.clone()),
        "updated_ms": recorded.as_ref().map(|r| r.updated_ms),
    })
}

/// How long ago `at_ms` was, in words.
fn ago(at_ms: u64) -> String {
    let secs = status_file::now_ms().saturating_sub(at_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

/// What `list` and `status` print when there is no upstreams file yet.
fn no_upstreams_file(file: &Path, json: bool) -> ExitCode {
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "servers": []})
        );
    } else {
        println!(
            "no upstreams file at {} (add a server with `zenmode upstream add NAME -- CMD ARGS...`)",
            file.display()
        );
    }
    ExitCode::SUCCESS
}

/// `zenmode status`: every configured server as the serving zenmode
/// processes last recorded it.
pub fn status(file: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(default_upstreams_file);
    let dirs = GatewayDirs::from_env();
    if !file.exists() {
        return Ok(no_upstreams_file(&file, json));
    }
    // Entry by entry, as a serving zenmode reads it: a bad entry is shown
    // beside the others, not a reason to show nothing.
    let parsed = config::load_each(&file)?;
    let mut rows: Vec<Value> = parsed
        .servers
        .iter()
        .map(|c| server_status(c, &dirs))
        .collect();
    rows.extend(
        parsed
            .bad
            .iter()
            .map(|(name, problem)| json!({"server": name, "state": "bad entry", "note": problem})),
    );
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "servers": rows})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", file.display());
    for row in &rows {
        let text = |key: &str| row[key].as_str().unwrap_or_default().to_owned();
        let mut line = format!("  {:<16} {:<14}", text("server"), text("state"));
        if let Some(tools) = row["tools"].as_u64() {
            line.push_str(&format!(" {tools} tools"));
        }
        if let Some(pid) = row["pid"].as_u64() {
            line.push_str(&format!(", pid {pid}"));
        }
        if let Some(call) = row["last_call"].as_object() {
            line.push_str(&format!(
                ", last call {} {} ({})",
                call["tool"].as_str().unwrap_or_default(),
                ago(call["at_ms"].as_u64().unwrap_or_default()),
                call["outcome"].as_str().unwrap_or_default()
            ));
        }
        println!("{line}");
        if let Some(note) = row["note"].as_str() {
            println!("      {note}");
        }
        if row["state"] == crate::gateway::oauth::NEEDS_SIGN_IN {
            println!(
                "      sign in with `zenmode upstream login {}`",
                text("server")
            );
        }
        if row["state"] == "failed"
            && let Some(error) = row["last_error"].as_str()
        {
            println!("      last error: {error}");
            for tail in row["stderr_tail"].as_array().into_iter().flatten() {
                println!("      | {}", tail.as_str().unwrap_or_default());
            }
            println!(
                "      (more with `zenmode upstream logs {}`)",
                text("server")
            );
        }
        let held: Vec<&str> = row["quarantined"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !held.is_empty() {
            println!(
                "      quarantined: {} (review with `zenmode upstream diff {}`)",
                held.join(", "),
                text("server")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The findings of `zenmode doctor`, printed one per line as they come.
#[derive(Default)]
struct Findings {
    problems: usize,
}

impl Findings {
    fn ok(&mut self, text: impl std::fmt::Display) {
        println!("ok    {text}");
    }

    fn warn(&mut self, text: impl std::fmt::Display) {
        println!("warn  {text}");
    }

    fn problem(&mut self, text: impl std::fmt::Display, fix: impl std::fmt::Display) {
        self.problems += 1;
        println!("FAIL  {text}; fix: {fix}");
    }
}

/// `zenmode doctor`: checks the upstreams file, each server, the file's
/// permissions and the client configurations that run zenmode; exits
/// non-zero when something needs fixing.
pub fn doctor(file: Option<PathBuf>, wait_secs: f64) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(default_upstreams_file);
    let dirs = GatewayDirs::from_env();
    let wait = Duration::from_secs_f64(if wait_secs.is_finite() {
        wait_secs.clamp(0.1, 600.0)
    } else {
        20.0
    });
    let mut findings = Findings::default();
    check_upstreams(&file, &dirs, wait, &mut findings)?;
    check_clients(&mut findings);
    if findings.problems == 0 {
        println!("no problems found");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} problem(s) found", findings.problems);
        Ok(ExitCode::FAILURE)
    }
}

fn check_upstreams(
    file: &Path,
    dirs: &GatewayDirs,
    wait: Duration,
    findings: &mut Findings,
) -> anyhow::Result<()> {
    if !file.exists() {
        findings.ok(format!(
            "no upstreams file at {}: zenmode serves its own modes only",
            file.display()
        ));
        return Ok(());
    }
    #[cfg(unix)]
    if let Ok(metadata) = std::fs::metadata(file) {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            findings.problem(
                format!(
                    "{} is readable by other users (mode {mode:04o}) and may hold tokens",
                    file.display()
                ),
                format!("chmod 600 '{}'", file.display()),
            );
        } else {
            findings.ok(format!("{} has mode {mode:04o}", file.display()));
        }
    }
    let loaded = match config::load(file) {
        Ok(loaded) => loaded,
        Err(problem) => {
            findings.problem(
                format!("{} does not load: {problem}", file.display()),
                "correct the file (it must be JSON with an \"mcpServers\" object)",
            );
            return Ok(());
        }
    };
    findings.ok(format!(
        "{} loads: {} server(s)",
        file.display(),
        loaded.servers.len()
    ));
    for warning in &loaded.warnings {
        findings.warn(warning);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    for config in &loaded.servers {
        let name = &config.name;
        if !config.enabled {
            findings.ok(format!("{name}: disabled, not checked"));
            continue;
        }
        let started = std::time::Instant::now();
        match runtime.block_on(fetch(config, dirs, wait)) {
            Ok(tools) => {
                findings.ok(format!(
                    "{name}: started and listed {} tools in {:.1}s",
                    tools.len(),
                    started.elapsed().as_secs_f64()
                ));
                let pins = pins::load_pins(dirs, name);
                let held = tools
                    .iter()
                    .filter(|tool| {
                        pins.as_ref()
                            .is_some_and(|pins| pins.verdict(tool) != Verdict::Approved)
                    })
                    .count();
                if held > 0 {
                    findings.warn(format!(
                        "{name}: {held} tool(s) quarantined; review with `zenmode upstream diff {name}`, then `zenmode upstream approve {name}`"
                    ));
                }
            }
            Err(problem) => findings.problem(
                format!("{name}: {problem}"),
                format!(
                    "correct its entry ({}), or turn it off with `zenmode upstream disable {name}`",
                    config.describe()
                ),
            ),
        }
    }
    Ok(())
}

/// Client configuration files, relative to the home directory.
const CLIENT_FILES: &[(&str, &str)] = &[
    (
        "Claude Desktop",
        ".config/Claude/claude_desktop_config.json",
    ),
    (
        "Claude Desktop",
        "Library/Application Support/Claude/claude_desktop_config.json",
    ),
    ("Claude Code", ".claude.json"),
    ("Claude Code", ".claude/settings.json"),
    ("Cursor", ".cursor/mcp.json"),
    ("VS Code", ".config/Code/User/mcp.json"),
    ("VS Code", ".config/Code/User/settings.json"),
    ("VS Code", "Library/Application Support/Code/User/mcp.json"),
    ("Windsurf", ".codeium/windsurf/mcp_config.json"),
];

/// Each client configuration under HOME whose entries run zenmode: is the
/// command there to run?
fn check_clients(findings: &mut Findings) {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        findings.warn("HOME is not set: client configurations not checked");
        return;
    };
    let mut found = 0;
    for (client, relative) in CLIENT_FILES {
        let path = home.join(relative);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let document: Value = match serde_json::from_str(&text) {
            Ok(document) => document,
            Err(error) => {
                findings.problem(
                    format!("{client}: {} is not valid JSON ({error})", path.display()),
                    "correct the file; the client cannot read it either",
                );
                continue;
            }
        };
        let mut entries = Vec::new();
        zenmode_entries(&document, &mut entries);
        for (name, command) in entries {
            found += 1;
            if command_exists(&command) {
                findings.ok(format!(
                    "{client}: {} runs zenmode as {name:?} ({command})",
                    path.display()
                ));
            } else {
                findings.problem(
                    format!(
                        "{client}: {} runs zenmode as {name:?} with {command:?}, which is not found",
                        path.display()
                    ),
                    "give the full path of the zenmode binary as its command",
                );
            }
        }
    }
    if found == 0 {
        findings.warn(
            "no client configuration under your home runs zenmode (see README: Connect a client)",
        );
    }
}

/// `(name, command)` of every server entry in `value` (at any depth, under
/// `mcpServers` or VS Code's `servers`) whose command or arguments name zenmode.
fn zenmode_entries(value: &Value, out: &mut Vec<(String, String)>) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, child) in map {
        if (key == "mcpServers" || key == "servers")
            && let Value::Object(servers) = child
        {
            for (name, entry) in servers {
                let command = entry
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = entry.get("args").map(Value::to_string).unwrap_or_default();
                if command.contains("zenmode") || args.contains("zenmode") {
                    out.push((name.clone(), command.to_owned()));
                }
            }
        } else {
            zenmode_entries(child, out);
        }
    }
}

/// Whether `command` names a file, or a program on PATH.
fn command_exists(command: &str) -> bool {
    let path = Path::new(command);
    if path.components().count() > 1 {
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(command).is_file()))
}
