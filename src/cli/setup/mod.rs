//! `zenmode setup CLIENT [--move-servers] [--undo]`: connects a client to
//! zenmode in one step, so nobody has to learn each client's file format,
//! and with `--move-servers` puts the client's other servers behind
//! zenmode's gateway (the hand-made version of which once imported zenmode
//! into itself).
//!
//! The order is chosen so that a failure can be undone: every file is read
//! and checked first (a client that is not installed, or a file that is not
//! JSON, stops here), then what setup is about to change goes into the
//! journal (`journal.rs`), then the servers are added to the gateway (each
//! started and its tools approved, as `upstream import` does; one that does
//! not start stays in the client), and only then is the client changed:
//! through `claude mcp` for Claude Code, by rewriting the JSON file for the
//! others. `--undo` (`undo.rs`) reverses the journal's changes and nothing
//! else.

pub mod claude_code;
pub mod client;
mod client_file;
mod env;
pub mod journal;
pub mod plan;
pub mod project_scope;
mod undo;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Map, Value};

pub use client::ClientKind;

use crate::gateway::disk::GatewayDirs;
use client_file::{NAME, read_client, write_client, zenmode_entry};
use journal::{Added, Journal, Kept, Records};
use plan::{Move, Plan};

// `zenmode setup`'s own arguments.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The client to connect
    #[arg(value_enum)]
    pub client: ClientKind,
    /// Also move the client's other servers (stdio and HTTP, from every scope: for Claude Code local, project and user) behind zenmode's gateway and out of the client's own list
    #[arg(long, conflicts_with = "undo")]
    pub move_servers: bool,
    /// A variable for zenmode's entry, for upstream entries that use `${NAME}`: NAME=VALUE, or NAME for its value here (repeatable); an entry that runs zenmode already gets it added
    #[arg(
        long = "env",
        short = 'e',
        value_name = "NAME[=VALUE]",
        conflicts_with = "undo"
    )]
    pub env: Vec<String>,
    /// Reverse what setup changed (zenmode's entry, the moved servers, each back in its scope); what else changed since stays as it is
    #[arg(long)]
    pub undo: bool,
    /// Connect the client to the user's shared zenmode (`zenmode connect`: one instance, one process per upstream server, for all clients) instead of a zenmode of its own
    #[arg(long, conflicts_with = "undo")]
    pub shared: bool,
    /// With --shared: the client sees only this profile's servers (`zenmode profile`)
    #[arg(long, requires = "shared", value_name = "NAME")]
    pub profile: Option<String>,
}

/// Runs `setup`; `upstreams` is the gateway file (`--upstreams`, else the
/// default one), `wait` how long a moved server may take to list its tools.
pub fn run(
    args: &SetupArgs,
    upstreams: Option<PathBuf>,
    wait: Duration,
) -> anyhow::Result<ExitCode> {
    let client = args.client;
    let dirs = GatewayDirs::from_env();
    let records = Records::new(&dirs.state, client.arg());
    if args.undo {
        return undo::run(client, &records);
    }
    let env = env::parse(&args.env)?;
    let file = client.config_file()?;
    client.check_installed(&file)?;
    let gateway_file = match &upstreams {
        Some(path) => absolute(path)?,
        None => crate::platform::dirs::upstreams_file(),
    };
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot tell where this zenmode binary is")?;
    let mut serve_args = vec![if args.shared { "connect" } else { "serve" }.to_owned()];
    if let Some(profile) = &args.profile {
        crate::gateway::profiles::Profiles::load(&crate::gateway::profiles::profiles_file(
            &gateway_file,
        ))
        .and_then(|profiles| profiles.get(profile).map(|_| ()))
        .map_err(anyhow::Error::msg)?;
        serve_args.push("--profile".to_owned());
        serve_args.push(profile.clone());
    }
    if upstreams.is_some() {
        serve_args.push("--upstreams".to_owned());
        serve_args.push(gateway_file.to_string_lossy().into_owned());
    }

    let document = read_client(client.servers_key(), &file)?;
    let folder = std::env::current_dir().context("cannot tell the current folder")?;
    let project = match client {
        ClientKind::ClaudeCode => Some(read_client("mcpServers", &folder.join(".mcp.json"))?),
        _ => None,
    };
    let mut sources = plan::sources(client, &document, &folder, project.as_ref());
    let held_back = if args.move_servers && client == ClientKind::ClaudeCode {
        project_scope::hold_back(&mut sources)
    } else {
        Vec::new()
    };
    let users = sources
        .iter()
        .find(|source| source.scope == plan::Scope::User)
        .map(|source| source.servers.clone())
        .unwrap_or_default();
    let present = zenmode_entry(&file, &users)?;
    // An entry that runs zenmode already gets the variables in place, so
    // the client keeps one zenmode.
    let updated = present
        .as_ref()
        .and_then(|name| Some((name.clone(), env::with_env(users.get(name)?, &env)?)));
    let mut plan = if args.move_servers {
        plan::plan_moves(
            &sources,
            &crate::cli::upstream::gateway_servers(&gateway_file)?,
        )
    } else {
        Plan::default()
    };
    plan.kept.extend(held_back);
    for (name, why) in &plan.kept {
        println!("kept in {}: {name} ({why})", client.label());
    }
    if present.is_some() && plan.is_empty() && updated.is_none() {
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

    let bare = client.entry(&program, &serve_args);
    let entry = env::with_env(&bare, &env).unwrap_or(bare);
    let mut journal = records
        .load(client.servers_key())?
        .unwrap_or_else(|| Journal {
            client_file: file.clone(),
            gateway_file: gateway_file.clone(),
            ..Journal::default()
        });
    // What setup is about to do goes into the journal first: undo checks
    // each entry against the files, so a setup that stops part way is
    // undone as far as it got.
    let mut intent = Journal {
        zenmode: present.is_none().then(|| Added {
            name: NAME.to_owned(),
            entry: entry.clone(),
        }),
        moved: plan.moves.clone(),
        gateway_added: plan.to_add.clone(),
        ..Journal::default()
    };
    // A file changed by someone else since the last setup left it cannot go
    // back whole on undo: its bytes from before the first setup would lose
    // that change (a server the user added between two setups). From then
    // on undo takes setup's entries out one by one instead.
    let client_whole =
        journal.client_existed.is_none() || records.as_setup_left(Kept::Client, &file);
    let gateway_whole =
        journal.gateway_existed.is_none() || records.as_setup_left(Kept::Gateway, &gateway_file);
    if !client_whole {
        records.forget_after(Kept::Client);
    }
    if !gateway_whole {
        records.forget_after(Kept::Gateway);
    }
    if client != ClientKind::ClaudeCode && journal.client_existed.is_none() {
        intent.client_existed = Some(records.keep_before(Kept::Client, &file)?);
    }
    if !plan.to_add.is_empty() && journal.gateway_existed.is_none() {
        intent.gateway_existed = Some(records.keep_before(Kept::Gateway, &gateway_file)?);
    }
    let mut recorded = journal.clone();
    recorded.extend(intent.clone());
    records.save(&recorded)?;

    let changed = (|| -> anyhow::Result<Vec<Move>> {
        let mut moves = plan.moves.clone();
        if !plan.to_add.is_empty() {
            let written = crate::cli::upstream::move_in(&gateway_file, plan.to_add.clone(), wait)?;
            for name in plan.to_add.keys() {
                if !written.contains(name) {
                    println!(
                        "kept in {}: {name} (it did not start or is zenmode itself, see above; zenmode did not take it)",
                        client.label()
                    );
                }
            }
            moves.retain(|m| !plan.to_add.contains_key(&m.name) || written.contains(&m.name));
            intent
                .gateway_added
                .retain(|name, _| written.contains(name));
            if !written.is_empty() && gateway_whole {
                records.keep_after(Kept::Gateway, &gateway_file)?;
            }
        }
        intent.moved = moves.clone();
        journal.extend(intent.clone());
        records.save(&journal)?;
        match client {
            ClientKind::ClaudeCode => {
                if present.is_none() {
                    claude_code::add_json(NAME, plan::Scope::User, None, &entry)?;
                }
                if let Some((name, entry)) = &updated {
                    claude_code::remove(name, plan::Scope::User, None)?;
                    claude_code::add_json(name, plan::Scope::User, None, entry)?;
                }
                for moved in &moves {
                    claude_code::remove(&moved.name, moved.scope, moved.folder.as_deref())?;
                }
            }
            _ => {
                let set = match &updated {
                    Some((name, entry)) => Some((name.clone(), entry.clone())),
                    None => present.is_none().then(|| (NAME.to_owned(), entry.clone())),
                };
                json_client(client, &file, document, set, &moves)?;
                if client_whole {
                    records.keep_after(Kept::Client, &file)?;
                }
            }
        }
        // Undo takes out the entry as it is now.
        if let (Some((name, entry)), Some(added)) = (&updated, journal.zenmode.as_mut())
            && &added.name == name
        {
            added.entry = entry.clone();
            records.save(&journal)?;
        }
        Ok(moves)
    })();
    let moves = changed.with_context(|| {
        format!(
            "setup stopped part way; `zenmode setup {} --undo` reverses what it did",
            client.arg()
        )
    })?;

    if let Some((name, _)) = &updated {
        let names: Vec<&String> = env.keys().collect();
        println!(
            "set {} in the environment of {}'s entry {name:?} ({})",
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            client.label(),
            file.display()
        );
    }
    if present.is_none() {
        println!(
            "added zenmode to {} ({}): {} {}",
            client.label(),
            file.display(),
            program.display(),
            serve_args.join(" ")
        );
    }
    for moved in &moves {
        println!(
            "moved {} ({}) behind zenmode: now in {} and gone from {}'s own list",
            moved.name,
            moved.describe(),
            gateway_file.display(),
            client.label()
        );
    }
    println!(
        "what changed is recorded in {}",
        records.dir().join("journal.json").display()
    );
    println!(
        "to undo: zenmode setup {} --undo (reverses only these changes)",
        client.arg()
    );
    if client != ClientKind::ClaudeCode {
        println!(
            "restart {} (or reload its MCP servers) to use the change",
            client.label()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The other clients: their file, rewritten with zenmode's entry (`set`:
/// its name and entry, when added or changed) and without the moved
/// servers; every other key stays as it was.
fn json_client(
    client: ClientKind,
    file: &Path,
    mut document: Value,
    set: Option<(String, Value)>,
    moved: &[Move],
) -> anyhow::Result<()> {
    let Some(root) = document.as_object_mut() else {
        bail!("{} is not a JSON object", file.display());
    };
    let servers = root
        .entry(client.servers_key())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .with_context(|| format!("{}: the server list is not an object", file.display()))?;
    for moved in moved {
        servers.shift_remove(&moved.name);
    }
    if let Some((name, entry)) = set {
        servers.insert(name, entry);
    }
    write_client(file, &document)
}

/// `path` from the current directory, as the client will not start in it.
fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}
