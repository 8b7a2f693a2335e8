//! `zenmode setup CLIENT [--move-servers] [--undo]`: connects a client to
//! zenmode in one step, so nobody has to learn each client's file format,
//! and with `--move-servers` puts the client's other servers behind
//! zenmode's gateway (the hand-made version of which once imported zenmode
//! into itself).
//!
//! The order is chosen so that a failure leaves things as they were: every
//! file is read and checked first (a client that is not installed, or a
//! file that is not JSON, stops here), then the backup is taken, then the
//! servers are added to the gateway (each started and its tools approved,
//! as `upstream import` does; one that does not start stays in the
//! client), and only then is the client changed: through `claude mcp` for
//! Claude Code, by rewriting the JSON file for the others.

pub mod backup;
pub mod client;

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    time::Duration,
};

use crate::platform::private_file::PRIVATE_FILE_MODE;
use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Map, Value};

pub use client::ClientKind;

use crate::gateway::{
    config::{self, UpstreamConfig},
    disk::GatewayDirs,
};
use backup::Backup;

// `zenmode setup`'s own arguments.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The client to connect
    #[arg(value_enum)]
    pub client: ClientKind,
    /// Also move the client's other servers (stdio and HTTP) behind zenmode's gateway and out of the client's own list
    #[arg(long, conflicts_with = "undo")]
    pub move_servers: bool,
    /// Put the client's configuration (and the gateway's, if servers were moved) back as it was before setup
    #[arg(long)]
    pub undo: bool,
}

/// The server name zenmode gets in the client's list.
const NAME: &str = "zenmode";

/// Runs `setup`; `upstreams` is the gateway file (`--upstreams`, else the
/// default one), `wait` how long a moved server may take to list its tools.
pub fn run(
    args: &SetupArgs,
    upstreams: Option<PathBuf>,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    let client = args.client;
    let dirs = GatewayDirs::from_env();
    let backup = Backup::new(&dirs.state, client.arg());
    if args.undo {
        return undo(client, &backup);
    }
    let file = client.config_file()?;
    client.check_installed(&file)?;
    let gateway_file = match &upstreams {
        Some(path) => absolute(path)?,
        None => crate::platform::dirs::upstreams_file(),
    };
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot tell where this zenmode binary is")?;
    let mut serve_args = vec!["serve".to_owned()];
    if upstreams.is_some() {
        serve_args.push("--upstreams".to_owned());
        serve_args.push(gateway_file.to_string_lossy().into_owned());
    }

    let document = read_client(client, &file)?;
    let servers = document
        .get(client.servers_key())
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let present = zenmode_entry(&file, &servers)?;
    let plan = if args.move_servers {
        plan_moves(
            &servers,
            &crate::cli::upstream::gateway_servers(&gateway_file)?,
        )
    } else {
        Plan::default()
    };
    for (name, why) in &plan.kept {
        println!("kept in {}: {name} ({why})", client.label());
    }
    if present.is_some() && plan.to_add.is_empty() && plan.already.is_empty() {
        let name = present.unwrap_or_default();
        println!(
            "{} already runs zenmode (server {name:?} in {}); nothing changed",
            client.label(),
            file.display()
        );
        if args.move_servers {
            println!("no other server to move");
        }
        return Ok(ExitCode::SUCCESS);
    }

    // A backup of the state before zenmode: a fresh one when zenmode is
    // not there yet, else the first one stays.
    if present.is_none() || !backup.exists() {
        backup.take(&file, &gateway_file)?;
    }

    // Past the backup, a failure says how to go back to it.
    let changed = (|| -> anyhow::Result<Vec<String>> {
        let mut moved = plan.already.clone();
        if !plan.to_add.is_empty() {
            let written = crate::cli::upstream::move_in(&gateway_file, plan.to_add.clone(), wait)?;
            for name in plan.to_add.keys() {
                if !written.contains(name) {
                    println!(
                        "kept in {}: {name} (it did not start, see above; zenmode did not take it)",
                        client.label()
                    );
                }
            }
            moved.extend(written);
        }
        backup.note_moved(&moved)?;
        let entry = client.entry(&program, &serve_args);
        match client {
            ClientKind::ClaudeCode => claude_code(present.is_none(), &entry, &moved)?,
            _ => json_client(client, &file, document, present.is_none(), entry, &moved)?,
        }
        Ok(moved)
    })();
    let moved = changed.with_context(|| {
        format!(
            "setup stopped part way; `zenmode setup {} --undo` restores the backup in {}",
            client.arg(),
            backup.dir().display()
        )
    })?;

    if present.is_none() {
        println!(
            "added zenmode to {} ({}): {} {}",
            client.label(),
            file.display(),
            program.display(),
            serve_args.join(" ")
        );
    }
    for name in &moved {
        println!(
            "moved {name} behind zenmode: now in {} and gone from {}'s own list",
            gateway_file.display(),
            client.label()
        );
    }
    println!("backup: {}", backup.dir().display());
    println!("to undo: zenmode setup {} --undo", client.arg());
    if client != ClientKind::ClaudeCode {
        println!(
            "restart {} (or reload its MCP servers) to use the change",
            client.label()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--undo`: the backup's files back in place, byte for byte.
fn undo(client: ClientKind, backup: &Backup) -> anyhow::Result<ExitCode> {
    if !backup.exists() {
        bail!(
            "no backup of {}'s configuration in {}: setup has not changed it, or it was undone already; nothing was changed",
            client.label(),
            backup.dir().display()
        );
    }
    let restored = backup.restore()?;
    let report = |file: &Path, existed: bool| {
        if existed {
            println!("restored {} from the backup", file.display());
        } else {
            println!(
                "removed {}, which did not exist before setup",
                file.display()
            );
        }
    };
    report(&restored.client_file, restored.client_existed);
    if let Some((gateway, existed)) = &restored.gateway_file {
        report(gateway, *existed);
    }
    for path in &restored.saved {
        println!("the file as it was before this undo: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The client's document: `{}` when the file does not exist yet. A file
/// that is not a JSON object, or whose server list is not an object, stops
/// setup before anything changes.
fn read_client(client: ClientKind, file: &Path) -> anyhow::Result<Value> {
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
    if let Some(servers) = document.get(client.servers_key())
        && !servers.is_object()
    {
        bail!(
            "{}: \"{}\" is not an object; nothing was changed",
            file.display(),
            client.servers_key()
        );
    }
    Ok(document)
}

/// The name of the entry that runs zenmode, if one does. An entry named
/// `zenmode` that runs something else stops setup: replacing it would lose
/// the user's server.
fn zenmode_entry(file: &Path, servers: &Map<String, Value>) -> anyhow::Result<Option<String>> {
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

/// What `--move-servers` will do with each of the client's servers.
#[derive(Default)]
struct Plan {
    /// To add to the gateway, then remove from the client.
    to_add: Map<String, Value>,
    /// Already in the gateway as they are: only removed from the client.
    already: Vec<String>,
    /// Left in the client, and why.
    kept: Vec<(String, String)>,
}

fn plan_moves(servers: &Map<String, Value>, gateway: &Map<String, Value>) -> Plan {
    let mut plan = Plan::default();
    for (name, entry) in servers {
        let checked: Result<UpstreamConfig, String> = config::parse_one(name, entry);
        match checked {
            Err(problem) => plan
                .kept
                .push((name.clone(), format!("zenmode cannot run it: {problem}"))),
            Ok(checked) if config::runs_zenmode(&checked).is_some() => {}
            Ok(_) if gateway.get(name) == Some(entry) => plan.already.push(name.clone()),
            Ok(_) if gateway.contains_key(name) => plan.kept.push((
                name.clone(),
                "zenmode's gateway has another server of this name".to_owned(),
            )),
            Ok(_) => {
                plan.to_add.insert(name.clone(), entry.clone());
            }
        }
    }
    plan
}

/// Claude Code changes through its own command: `claude mcp add` and
/// `claude mcp remove`, in the user scope (every project).
fn claude_code(add: bool, entry: &Value, moved: &[String]) -> anyhow::Result<()> {
    if add {
        let mut args = vec![
            "mcp".to_owned(),
            "add".to_owned(),
            "--scope".to_owned(),
            "user".to_owned(),
            NAME.to_owned(),
            "--".to_owned(),
            entry["command"].as_str().unwrap_or_default().to_owned(),
        ];
        args.extend(
            entry["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned),
        );
        claude(&args)?;
    }
    for name in moved {
        claude(&[
            "mcp".to_owned(),
            "remove".to_owned(),
            "--scope".to_owned(),
            "user".to_owned(),
            name.clone(),
        ])?;
    }
    Ok(())
}

/// Runs `claude ARGS`; its failure is an error with its output.
fn claude(args: &[String]) -> anyhow::Result<()> {
    let output = Command::new("claude")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .context("cannot run `claude`")?;
    if !output.status.success() {
        bail!(
            "`claude {}` failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim(),
            String::from_utf8_lossy(&output.stdout).trim()
        );
    }
    Ok(())
}

/// The other clients: their file, rewritten with zenmode's entry and
/// without the moved servers; every other key stays as it was.
fn json_client(
    client: ClientKind,
    file: &Path,
    mut document: Value,
    add: bool,
    entry: Value,
    moved: &[String],
) -> anyhow::Result<()> {
    let Some(root) = document.as_object_mut() else {
        bail!("{} is not a JSON object", file.display());
    };
    let servers = root
        .entry(client.servers_key())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .with_context(|| format!("{}: the server list is not an object", file.display()))?;
    for name in moved {
        servers.shift_remove(name);
    }
    if add {
        servers.insert(NAME.to_owned(), entry);
    }
    let mode = existing_mode(file).unwrap_or(PRIVATE_FILE_MODE);
    let text = serde_json::to_string_pretty(&document)? + "\n";
    backup::write_atomic(file, text.as_bytes(), mode)
}

/// The mode of an existing file, kept when it is rewritten.
fn existing_mode(file: &Path) -> Option<u32> {
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

/// `path` from the current directory, as the client will not start in it.
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}
