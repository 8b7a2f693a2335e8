//! `zenmode upstream refresh`.

use std::{path::Path, process::ExitCode, time::Duration};

use super::file::{chosen, fetch};
use crate::gateway::{Verdict, disk::GatewayDirs, pins};

/// `upstream refresh`: each server (or the one named) started, its tools
/// cached, and what waits for approval counted.
pub fn run(
    file: &Path,
    dirs: &GatewayDirs,
    runtime: &tokio::runtime::Runtime,
    wait: Duration,
    name: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let configs = chosen(file, name)?;
    let mut failed = false;
    for config in configs.iter().filter(|c| c.enabled) {
        match runtime.block_on(fetch(config, dirs, wait)) {
            Ok(tools) => {
                let pins = pins::load_pins(dirs, &config.name).unwrap_or_default();
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
