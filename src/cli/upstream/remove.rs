//! `zenmode upstream remove`.

use std::{path::Path, process::ExitCode};

use anyhow::bail;

use super::file::{PICKUP_WAIT, servers_mut, update_upstreams_file};
use crate::gateway::{catalog_cache, disk::GatewayDirs, pins, serving};

/// `upstream remove`: the entry, its cached catalog and its pins.
pub fn run(file: &Path, dirs: &GatewayDirs, name: &str) -> anyhow::Result<ExitCode> {
    update_upstreams_file(file, |document| {
        if servers_mut(document, file)?.shift_remove(name).is_none() {
            bail!("{}: no server named {name:?}", file.display());
        }
        Ok(())
    })?;
    catalog_cache::forget_catalog(dirs, name);
    pins::forget_pins(dirs, name);
    println!("removed {name:?} from {}", file.display());
    println!("{}", serving::pickup_report(dirs, file, PICKUP_WAIT));
    Ok(ExitCode::SUCCESS)
}

/// Removes the named entries (those present) with their cached catalogs
/// and pins, for `setup --undo`; the others stay as they are.
pub fn remove_entries(file: &Path, dirs: &GatewayDirs, names: &[String]) -> anyhow::Result<()> {
    update_upstreams_file(file, |document| {
        let servers = servers_mut(document, file)?;
        for name in names {
            servers.shift_remove(name);
        }
        Ok(())
    })?;
    forget_state(dirs, names);
    Ok(())
}

/// Drops what the gateway kept about servers no longer in its file.
pub fn forget_state(dirs: &GatewayDirs, names: &[String]) {
    for name in names {
        catalog_cache::forget_catalog(dirs, name);
        pins::forget_pins(dirs, name);
    }
}
