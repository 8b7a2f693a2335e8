//! `zenmode upstream remove`.

use std::{path::Path, process::ExitCode};

use anyhow::bail;

use super::file::{PICKUP_WAIT, read_document, servers_mut, write_document};
use crate::gateway::{
    live,
    store::{self, GatewayDirs},
};

/// `upstream remove`: the entry, its cached catalog and its pins.
pub fn run(file: &Path, dirs: &GatewayDirs, name: &str) -> anyhow::Result<ExitCode> {
    let mut document = read_document(file)?;
    let servers = servers_mut(&mut document, file)?;
    if servers.shift_remove(name).is_none() {
        bail!("{}: no server named {name:?}", file.display());
    }
    write_document(file, &document)?;
    store::forget_catalog(dirs, name);
    store::forget_pins(dirs, name);
    println!("removed {name:?} from {}", file.display());
    println!("{}", live::pickup_report(dirs, file, PICKUP_WAIT));
    Ok(ExitCode::SUCCESS)
}
