//! `zenmode upstream logs`.

use std::{path::Path, process::ExitCode};

use super::file::chosen;
use crate::gateway::{disk::GatewayDirs, status_file};

/// `upstream logs`: the last lines a serving zenmode kept of a server's
/// stderr.
pub fn run(file: &Path, dirs: &GatewayDirs, name: &str, lines: usize) -> anyhow::Result<ExitCode> {
    chosen(file, Some(name))?;
    let shown = status_file::tail(dirs, name, lines);
    if shown.is_empty() {
        println!(
            "no stderr logged for {name:?} yet: {} is written while a serving zenmode runs the server",
            status_file::log_path(dirs, name).display()
        );
    }
    for line in shown {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
