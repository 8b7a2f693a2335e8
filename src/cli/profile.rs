//! `zenmode profile list|add|remove|show`: named sets of upstream servers,
//! one per client of the shared instance (`zenmode connect --profile`).

use std::{collections::BTreeSet, path::Path, process::ExitCode};

use clap::{Subcommand, ValueEnum};

use crate::{
    gateway::{
        config,
        profiles::{self, Profile, Profiles},
    },
    surface::StrategyKind,
};

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Every profile and its servers
    List {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Create a profile, or add servers to one: `zenmode profile add work slack notion`
    Add {
        name: String,
        /// Servers of the upstreams file this profile sees
        servers: Vec<String>,
        /// The strategy its sessions get (default: zen)
        #[arg(long, value_enum)]
        strategy: Option<StrategyKind>,
        /// Replace the profile's servers instead of adding to them
        #[arg(long)]
        replace: bool,
    },
    /// Remove a profile, or only some of its servers
    Remove {
        name: String,
        /// Only these servers leave the profile
        servers: Vec<String>,
    },
    /// One profile: its servers, with each one's state in the upstreams file
    Show {
        name: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
}

/// Runs one `profile` command for the upstreams file `upstreams`.
pub fn run(upstreams: &Path, command: ProfileCommand) -> anyhow::Result<ExitCode> {
    let file = profiles::profiles_file(upstreams);
    match command {
        ProfileCommand::List { json } => {
            let all = Profiles::load(&file).map_err(anyhow::Error::msg)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if all.profiles.is_empty() {
                println!(
                    "no profiles in {}; add one with `zenmode profile add NAME SERVER...`",
                    file.display()
                );
            } else {
                for (name, profile) in &all.profiles {
                    println!(
                        "{name}: {}{}",
                        servers_line(profile),
                        strategy_note(profile)
                    );
                }
            }
        }
        ProfileCommand::Add {
            name,
            servers,
            strategy,
            replace,
        } => {
            profiles::check_name(&name).map_err(anyhow::Error::msg)?;
            check_servers(upstreams, &servers)?;
            let strategy = strategy.map(strategy_name);
            let profile = Profiles::update(&file, |all| {
                let profile = all.profiles.entry(name.clone()).or_default();
                if replace {
                    profile.servers.clear();
                }
                profile.servers.extend(servers.iter().cloned());
                if strategy.is_some() {
                    profile.strategy = strategy;
                }
                Ok(profile.clone())
            })
            .map_err(anyhow::Error::msg)?;
            println!(
                "profile {name}: {}{}",
                servers_line(&profile),
                strategy_note(&profile)
            );
        }
        ProfileCommand::Remove { name, servers } => {
            let left = Profiles::update(&file, |all| {
                all.get(&name)?;
                if servers.is_empty() {
                    all.profiles.remove(&name);
                    return Ok(None);
                }
                let profile = all.profiles.get_mut(&name).expect("checked above");
                let absent: Vec<&String> = servers
                    .iter()
                    .filter(|server| !profile.servers.contains(*server))
                    .collect();
                if !absent.is_empty() {
                    return Err(format!(
                        "profile {name:?} has no server {}; it has: {}",
                        quoted(absent.iter().map(|s| s.as_str())),
                        servers_line(profile)
                    ));
                }
                profile.servers.retain(|server| !servers.contains(server));
                Ok(Some(profile.clone()))
            })
            .map_err(anyhow::Error::msg)?;
            match left {
                None => println!("profile {name} removed"),
                Some(profile) => println!("profile {name}: {}", servers_line(&profile)),
            }
        }
        ProfileCommand::Show { name, json } => {
            let all = Profiles::load(&file).map_err(anyhow::Error::msg)?;
            let profile = all.get(&name).map_err(anyhow::Error::msg)?;
            let configured = configured_servers(upstreams)?;
            if json {
                let servers: Vec<serde_json::Value> = profile
                    .servers
                    .iter()
                    .map(|server| {
                        serde_json::json!({
                            "name": server,
                            "state": server_state(&configured, server),
                        })
                    })
                    .collect();
                let reply = serde_json::json!({
                    "name": name,
                    "servers": servers,
                    "strategy": profile.strategy.as_deref().unwrap_or("zen"),
                });
                println!("{}", serde_json::to_string_pretty(&reply)?);
            } else {
                println!(
                    "profile {name} (strategy {})",
                    profile.strategy.as_deref().unwrap_or("zen")
                );
                if profile.servers.is_empty() {
                    println!("  no servers: its sessions see zenmode's own modes only");
                }
                for server in &profile.servers {
                    println!("  {server}: {}", server_state(&configured, server));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A strategy's name as `--strategy` spells it.
fn strategy_name(kind: StrategyKind) -> String {
    kind.to_possible_value()
        .map(|value| value.get_name().to_owned())
        .unwrap_or_else(|| "zen".to_owned())
}

/// The servers of the upstreams file, with whether each is enabled.
fn configured_servers(upstreams: &Path) -> anyhow::Result<Vec<(String, bool)>> {
    if !upstreams.exists() {
        return Ok(Vec::new());
    }
    Ok(config::load(upstreams)?
        .servers
        .into_iter()
        .map(|server| (server.name, server.enabled))
        .collect())
}

fn server_state(configured: &[(String, bool)], server: &str) -> &'static str {
    match configured.iter().find(|(name, _)| name == server) {
        Some((_, true)) => "enabled",
        Some((_, false)) => "disabled",
        None => "not in the upstreams file",
    }
}

/// Refuses servers the upstreams file does not have: a typo would make a
/// profile that silently sees nothing.
fn check_servers(upstreams: &Path, servers: &[String]) -> anyhow::Result<()> {
    let configured = configured_servers(upstreams)?;
    let unknown: BTreeSet<&str> = servers
        .iter()
        .map(String::as_str)
        .filter(|server| !configured.iter().any(|(name, _)| name == server))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = configured.iter().map(|(name, _)| name.as_str()).collect();
    anyhow::bail!(
        "{}: no server {} (configured: {}); add it with `zenmode upstream add` first",
        upstreams.display(),
        quoted(unknown.into_iter()),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn servers_line(profile: &Profile) -> String {
    if profile.servers.is_empty() {
        "no servers".to_owned()
    } else {
        profile
            .servers
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn strategy_note(profile: &Profile) -> String {
    profile
        .strategy
        .as_deref()
        .map(|strategy| format!(" (strategy {strategy})"))
        .unwrap_or_default()
}
