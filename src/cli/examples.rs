//! `zenmode examples list|forget`: the examples learned from this user's
//! sessions (`catalog::learned`), shown and removed.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;

use crate::catalog::learned::LearnedStore;

#[derive(Debug, Subcommand)]
pub enum ExamplesCommand {
    /// Every learned example: server, tool, whether it corrected the recommendation, and the task
    List {
        /// Only this server's
        #[arg(long)]
        server: Option<String>,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Remove learned examples: a server's, one mode's, or --all
    Forget {
        /// The examples of this server (its name in the upstreams file)
        #[arg(long)]
        server: Option<String>,
        /// The examples of this mode (`prefix__tool`)
        #[arg(long)]
        mode: Option<String>,
        /// Every learned example
        #[arg(long, conflicts_with_all = ["server", "mode"])]
        all: bool,
    },
}

pub fn run(command: ExamplesCommand) -> anyhow::Result<ExitCode> {
    let store = LearnedStore::of_user();
    match command {
        ExamplesCommand::List { server, json } => {
            let examples: Vec<_> = store
                .load()
                .into_iter()
                .filter(|e| server.as_ref().is_none_or(|s| *s == e.server))
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&examples)?);
            } else if examples.is_empty() {
                println!(
                    "no learned examples in {} (a select followed by a successful call of another server's tool makes one)",
                    store.file().display()
                );
            } else {
                for example in &examples {
                    println!(
                        "{:<40} {}{}",
                        example.mode,
                        if example.correction {
                            "(correction) "
                        } else {
                            ""
                        },
                        example.task
                    );
                }
                println!(
                    "{} learned examples in {}",
                    examples.len(),
                    store.file().display()
                );
            }
        }
        ExamplesCommand::Forget { server, mode, all } => {
            if !all && server.is_none() && mode.is_none() {
                bail!("say what to forget: --server NAME, --mode MODE, or --all");
            }
            let gone = store
                .forget(|e| {
                    all || (server.as_ref().is_none_or(|s| *s == e.server)
                        && mode.as_ref().is_none_or(|m| *m == e.mode))
                })
                .with_context(|| format!("cannot change {}", store.file().display()))?;
            println!(
                "forgot {gone} learned example(s); servers already running keep them until their tools are next read (a reload or restart)"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
