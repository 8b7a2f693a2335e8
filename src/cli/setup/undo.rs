//! `zenmode setup CLIENT --undo`: reverses the changes in the setup
//! journal, each checked against the files as they are now, and touches
//! nothing else (an account, a history, servers added since).
//!
//! Every change is checked before any is made. An entry that is as setup
//! left it is reversed; one that is gone already (the user removed it, or a
//! moved server was put back by hand) needs nothing; one the user changed
//! since is a conflict, reported, and then nothing at all changes. Because
//! each step checks the state first, an undo that stops part way (a
//! `claude` command failing) can simply be run again.

use std::{path::Path, process::ExitCode};

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use super::{
    claude_code,
    client::ClientKind,
    client_file::{NAME, existing_mode, read_client, write_client},
    journal::{Journal, Kept, Records},
    plan::{self, Move, Scope},
};
use crate::platform::private_file::{self, PRIVATE_FILE_MODE};

/// What undo will do, once every entry was checked.
#[derive(Default)]
struct Steps<'a> {
    put_back: Vec<&'a Move>,
    remove_zenmode: bool,
    remove_from_gateway: Vec<String>,
    conflicts: Vec<String>,
    /// Already as before setup: said, so the user knows it was seen.
    nothing_to_do: Vec<String>,
}

pub fn run(client: ClientKind, records: &Records) -> anyhow::Result<ExitCode> {
    let Some(journal) = records.load(client.servers_key())? else {
        bail!(
            "setup has not changed {}'s configuration (no record in {}), or it was undone already; nothing was changed",
            client.label(),
            records.dir().display()
        );
    };
    let document = read_client(client.servers_key(), &journal.client_file)?;
    let gateway = if journal.gateway_file.exists() {
        crate::cli::upstream::gateway_servers(&journal.gateway_file)?
    } else {
        Map::new()
    };
    // A file nothing changed since setup gets its bytes back whole.
    let client_as_left = journal.client_existed.is_some()
        && records.as_setup_left(Kept::Client, &journal.client_file);
    let gateway_as_left = journal.gateway_existed.is_some()
        && records.as_setup_left(Kept::Gateway, &journal.gateway_file);
    let client_before = match journal.client_existed {
        Some(existed) if client_as_left => Some(records.before(Kept::Client, existed)?),
        _ => None,
    };
    let gateway_before = match journal.gateway_existed {
        Some(existed) if gateway_as_left => Some(records.before(Kept::Gateway, existed)?),
        _ => None,
    };
    let steps = plan_undo(
        client,
        &journal,
        &document,
        &gateway,
        client_before.is_none(),
        gateway_before.is_none(),
    )?;
    for line in &steps.nothing_to_do {
        println!("{line}");
    }
    if !steps.conflicts.is_empty() {
        for conflict in &steps.conflicts {
            eprintln!("changed since setup: {conflict}");
        }
        bail!(
            "undo would overwrite the changes above, so nothing was changed; put those entries back as setup left them (or remove them), then run `zenmode setup {} --undo` again",
            client.arg()
        );
    }

    // The client first, so a moved server is back before the gateway
    // lets go of it.
    if let Some(bytes) = &client_before {
        restore(&journal.client_file, bytes.as_deref())?;
    }
    match client {
        ClientKind::ClaudeCode => {
            for moved in &steps.put_back {
                claude_code::put_back(moved)?;
            }
            if steps.remove_zenmode {
                claude_code::remove(NAME, Scope::User, None)?;
            }
        }
        _ => {
            if !steps.put_back.is_empty() || steps.remove_zenmode {
                let mut document = document;
                let servers = document
                    .as_object_mut()
                    .and_then(|root| {
                        root.entry(client.servers_key())
                            .or_insert_with(|| Value::Object(Map::new()))
                            .as_object_mut()
                    })
                    .ok_or_else(|| anyhow::anyhow!("the client's server list is not an object"))?;
                if steps.remove_zenmode {
                    servers.shift_remove(NAME);
                }
                for moved in &steps.put_back {
                    servers.insert(moved.name.clone(), moved.entry.clone());
                }
                write_client(&journal.client_file, &document)?;
            }
        }
    }
    for moved in &steps.put_back {
        println!(
            "put {} back in {} ({})",
            moved.name,
            client.label(),
            moved.describe()
        );
    }
    if steps.remove_zenmode {
        println!(
            "removed zenmode from {} ({})",
            client.label(),
            journal.client_file.display()
        );
    }
    let dirs = crate::gateway::disk::GatewayDirs::from_env();
    if let Some(bytes) = &gateway_before {
        // Checked again under the file's lock: another writer may have
        // changed it since the check above.
        let _lock = private_file::lock_beside(&journal.gateway_file)
            .with_context(|| format!("cannot lock {}", journal.gateway_file.display()))?;
        if !records.as_setup_left(Kept::Gateway, &journal.gateway_file) {
            bail!(
                "{} changed while undo ran; run `zenmode setup {} --undo` again",
                journal.gateway_file.display(),
                client.arg()
            );
        }
        restore(&journal.gateway_file, bytes.as_deref())?;
        let names: Vec<String> = journal.gateway_added.keys().cloned().collect();
        crate::cli::upstream::forget_state(&dirs, &names);
    }
    if !steps.remove_from_gateway.is_empty() {
        crate::cli::upstream::remove_entries(
            &journal.gateway_file,
            &dirs,
            &steps.remove_from_gateway,
        )?;
        for name in &steps.remove_from_gateway {
            println!("removed {name} from {}", journal.gateway_file.display());
        }
    }
    records.remove();
    if client_before.is_none() {
        println!(
            "everything else in {} is left as it is now",
            journal.client_file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Puts a file nothing changed since setup back as it was before (or
/// removes it, when it did not exist).
fn restore(file: &Path, before: Option<&[u8]>) -> anyhow::Result<()> {
    match before {
        Some(bytes) => {
            let mode = existing_mode(file).unwrap_or(PRIVATE_FILE_MODE);
            private_file::write_replacing(file, bytes, Some(mode), private_file::Flush::ToDisk)
                .with_context(|| format!("cannot write {}", file.display()))?;
            println!(
                "restored {} as it was before setup (nothing changed it since)",
                file.display()
            );
        }
        None => {
            if let Err(e) = std::fs::remove_file(file)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(e).with_context(|| format!("cannot remove {}", file.display()));
            }
            println!(
                "removed {}, which did not exist before setup",
                file.display()
            );
        }
    }
    Ok(())
}

/// Checks each change in the journal against the files as they are now.
/// `check_client` and `check_gateway` are false for a file that gets its
/// bytes from before setup back whole.
fn plan_undo<'a>(
    client: ClientKind,
    journal: &'a Journal,
    document: &Value,
    gateway: &Map<String, Value>,
    check_client: bool,
    check_gateway: bool,
) -> anyhow::Result<Steps<'a>> {
    let mut steps = Steps::default();
    let label = client.label();
    let user = plan::sources(client, document, Path::new("/"), None)
        .into_iter()
        .find(|source| source.scope == Scope::User)
        .map(|source| source.servers)
        .unwrap_or_default();
    if let Some(added) = journal.zenmode.as_ref().filter(|_| check_client) {
        match user.get(&added.name) {
            None => steps
                .nothing_to_do
                .push(format!("zenmode is not in {label} any more")),
            Some(now) if plan::same_entry(now, &added.entry) => steps.remove_zenmode = true,
            Some(now) => steps.conflicts.push(format!(
                "{label}'s entry {:?} is now {now}, not the one setup added ({})",
                added.name, added.entry
            )),
        }
    }
    // A moved server's scope may be outside the client's file (Claude
    // Code's project scope), which the whole-file restore does not cover.
    let outside = |moved: &Move| moved.scope == Scope::Project;
    for moved in journal
        .moved
        .iter()
        .filter(|moved| check_client || outside(moved))
    {
        let now = servers_now(client, document, moved)?;
        match now.get(&moved.name) {
            None => steps.put_back.push(moved),
            Some(entry) if plan::same_entry(entry, &moved.entry) => {
                steps.nothing_to_do.push(format!(
                    "{} is back in {label} ({}) already",
                    moved.name,
                    moved.describe()
                ))
            }
            Some(entry) => steps.conflicts.push(format!(
                "{label} ({}) has another server named {:?} now ({entry})",
                moved.describe(),
                moved.name
            )),
        }
    }
    for (name, added) in journal.gateway_added.iter().filter(|_| check_gateway) {
        match gateway.get(name) {
            None => {}
            Some(now) if plan::same_entry(now, added) => {
                steps.remove_from_gateway.push(name.clone())
            }
            Some(now) => steps.conflicts.push(format!(
                "{}: the entry {name:?} is now {now}, not the one setup moved in ({added})",
                journal.gateway_file.display()
            )),
        }
    }
    Ok(steps)
}

/// The servers now in the scope a server was moved from.
fn servers_now(
    client: ClientKind,
    document: &Value,
    moved: &Move,
) -> anyhow::Result<Map<String, Value>> {
    let folder = moved.folder.as_deref().unwrap_or(Path::new("/"));
    let project = match moved.scope {
        Scope::Project => Some(read_client("mcpServers", &folder.join(".mcp.json"))?),
        _ => None,
    };
    Ok(plan::sources(client, document, folder, project.as_ref())
        .into_iter()
        .find(|source| source.scope == moved.scope)
        .map(|source| source.servers)
        .unwrap_or_default())
}
