//! `zenmode upstream enable` and `disable`.

use std::{path::Path, process::ExitCode};

use anyhow::bail;
use serde_json::{Value, json};

use super::file::{PICKUP_WAIT, servers_mut, update_upstreams_file};
use crate::gateway::{disk::GatewayDirs, serving};

/// Sets the entry's `enabled`, and changes nothing else in the file.
pub fn write_enabled(file: &Path, name: &str, enabled: bool) -> anyhow::Result<()> {
    update_upstreams_file(file, |document| {
        let Some(Value::Object(entry)) = servers_mut(document, file)?.get_mut(name) else {
            bail!("{}: no server named {name:?}", file.display());
        };
        entry.shift_remove("disabled");
        entry.insert("enabled".into(), json!(enabled));
        Ok(())
    })
}

/// `upstream enable|disable NAME`: the entry's `enabled` changes, nothing else.
pub fn set_enabled(
    file: &Path,
    dirs: &GatewayDirs,
    name: &str,
    enabled: bool,
) -> anyhow::Result<ExitCode> {
    write_enabled(file, name, enabled)?;
    println!(
        "{} {name:?} in {}",
        if enabled { "enabled" } else { "disabled" },
        file.display(),
    );
    println!("{}", serving::pickup_report(dirs, file, PICKUP_WAIT));
    Ok(ExitCode::SUCCESS)
}
