//! `zenmode upstream remove`.

use std::{path::Path, process::ExitCode};

use anyhow::bail;

use super::file::{PICKUP_WAIT, servers_mut, update_upstreams_file};
use crate::gateway::{disk::GatewayDirs, serving};

/// `upstream remove`: the entry and every file zenmode kept for it.
pub fn run(file: &Path, dirs: &GatewayDirs, name: &str) -> anyhow::Result<ExitCode> {
    update_upstreams_file(file, |document| {
        if servers_mut(document, file)?.shift_remove(name).is_none() {
            bail!("{}: no server named {name:?}", file.display());
        }
        Ok(())
    })?;
    dirs.files(name).forget();
    println!("removed {name:?} from {}", file.display());
    println!("{}", serving::pickup_report(dirs, file, PICKUP_WAIT));
    Ok(ExitCode::SUCCESS)
}

/// Removes the named entries (those present) with their files, for `setup --undo`; the others stay as they are.
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
        dirs.files(name).forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `root`, relative to it, sorted.
    fn files_under(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    folders.push(path);
                } else {
                    found.push(path.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn removing_a_server_leaves_none_of_its_files() {
        let root = tempfile::tempdir().unwrap();
        let dirs = GatewayDirs::under(root.path());
        let file = root.path().join("upstreams.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"gone": {"command": "a"}, "kept": {"command": "b"}}}"#,
        )
        .unwrap();
        for server in ["gone", "kept"] {
            let files = dirs.files(server);
            for path in [
                &files.catalog,
                &files.capabilities,
                &files.approvals,
                &files.pins,
                &files.token,
                &files.status.join("state.json"),
                &files.status.join("stderr.log"),
                &files.status.join("stderr.log.1"),
            ] {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, server).unwrap();
            }
        }
        let before = files_under(root.path());
        run(&file, &dirs, "gone").unwrap();
        let after = files_under(root.path());
        // What is left: the file of servers, its lock, and the other
        // server's files, every one of them.
        let kept: Vec<&String> = after
            .iter()
            .filter(|path| !path.contains("upstreams.json"))
            .collect();
        assert_eq!(kept.len(), 8, "{after:#?}");
        for path in &kept {
            assert_eq!(
                std::fs::read_to_string(root.path().join(path)).unwrap(),
                "kept",
                "{path} is not the other server's (before: {before:#?})"
            );
        }
    }
}
