//! `zenmode modes ...`: the catalog's manifests checked and rendered.

pub mod check;
pub mod markdown;

use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;

use crate::{
    catalog::describe::{self, FieldSet},
    cli::args::CatalogArgs,
    cli::runtime::{exit_for, runtime},
    executor,
};

#[derive(Debug, Subcommand)]
pub enum ModesCommand {
    /// One line per mode
    List,
    /// Everything about one mode
    Show { name: String },
    /// Compile every schema and validate every example (non-zero exit on problems)
    Check,
    /// Print the mode table for README.md (Markdown)
    Table,
    /// Print the full mode reference, docs/modes.md (Markdown)
    Docs,
}

pub fn modes(catalog: &CatalogArgs, command: ModesCommand) -> anyhow::Result<ExitCode> {
    let runtime = runtime(false)?;
    let (catalog, gateway) = catalog.open(&runtime)?;
    runtime.block_on(gateway.shutdown());
    match command {
        ModesCommand::List => {
            for mode in catalog.modes() {
                let manifest = mode.manifest();
                let status = match manifest.executor.as_deref() {
                    Some(key) if executor::is_registered(key) => "ready",
                    Some(_) => "no-executor",
                    None => "imported",
                };
                println!(
                    "{:<16} {:<13} {:<12} {}",
                    manifest.name, manifest.category, status, manifest.summary
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Show { name } => {
            let Some(mode) = catalog.get(&name) else {
                let closest = catalog.suggestions(&name, 3);
                bail!(
                    "no mode named {name:?}{}; `zenmode modes list` shows them all",
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                );
            };
            let manifest = mode.manifest();
            println!("{} — {}", manifest.name, manifest.title);
            println!("{}\n", manifest.summary);
            println!(
                "category: {}   executor: {}   source: {}\n",
                manifest.category,
                manifest.executor.as_deref().unwrap_or("none"),
                mode.origin
            );
            println!("{}\n", manifest.description);
            println!("required: {}", manifest.required().join(", "));
            println!("fields:");
            let fields = describe::field_summary(manifest, FieldSet::All);
            for (field, summary) in fields.required.iter().chain(&fields.optional) {
                println!("  {field:<28} {}", summary.as_str().unwrap_or_default());
            }
            println!(
                "\nexample request:\n{}",
                serde_json::to_string_pretty(&describe::example_request(manifest))?
            );
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Table => {
            print!("{}", markdown::modes_table(&catalog));
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Docs => {
            print!("{}", markdown::modes_reference(&catalog));
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Check => {
            let reports = check::check_catalog(&catalog);
            let mut failed = 0;
            for report in &reports {
                let status = if report.errors.is_empty() {
                    "ok"
                } else {
                    "FAIL"
                };
                let notes = if report.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", report.notes.join("; "))
                };
                println!("{status:<5} {}{notes}", report.name);
                for error in &report.errors {
                    println!("      - {error}");
                }
                failed += usize::from(!report.errors.is_empty());
            }
            println!(
                "{} modes checked, {} passed, {} failed",
                reports.len(),
                reports.len() - failed,
                failed
            );
            Ok(exit_for(failed > 0))
        }
    }
}
