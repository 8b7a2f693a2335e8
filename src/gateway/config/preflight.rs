//! Why an entry cannot start, found without starting it: an unset `${VAR}`,
//! a command that is not there, a URL that does not parse. `zenmode status`
//! and `doctor` say so instead of "never started" or a spawn error.
//!
//! It is checked in the environment of the process that asks (the shell
//! running `status`); a zenmode started by a client has that client's
//! environment, which may differ.

use std::path::{Path, PathBuf};

use super::entry::{Transport, UpstreamConfig};

impl UpstreamConfig {
    /// Why this entry cannot start here, if it cannot; never a secret's value.
    pub fn cannot_start(&self) -> Option<String> {
        let filled = match self.expanded() {
            Ok(filled) => filled,
            Err(problem) => return Some(problem),
        };
        match &filled.transport {
            Transport::Stdio {
                command, env, cwd, ..
            } => {
                if let Some(dir) = cwd
                    && !dir.is_dir()
                {
                    return Some(format!("its \"cwd\" {} is not a directory", dir.display()));
                }
                let path = env
                    .get("PATH")
                    .cloned()
                    .or_else(|| std::env::var("PATH").ok())
                    .unwrap_or_default();
                missing_command(command, cwd.as_deref(), &path)
            }
            Transport::Http { url, .. } => match reqwest::Url::parse(url) {
                Ok(parsed) if parsed.host_str().is_some_and(|h| !h.is_empty()) => None,
                Ok(_) => Some("its \"url\" names no host".into()),
                // The parser's reason never quotes the URL, which may hold a secret.
                Err(error) => Some(format!("its \"url\" is not a valid URL ({error})")),
            },
        }
    }
}

/// Why `command` cannot be run, if it cannot: a path (relative to `cwd`)
/// that is no executable file, or a name found in no directory of `path`.
fn missing_command(command: &str, cwd: Option<&Path>, path: &str) -> Option<String> {
    let as_path = Path::new(command);
    if command.is_empty() {
        return Some("its \"command\" is empty".into());
    }
    if as_path.components().count() > 1 {
        // Relative to the serving zenmode's own directory, unknown here.
        let full = match cwd {
            Some(dir) if as_path.is_relative() => dir.join(as_path),
            None if as_path.is_relative() => return None,
            _ => as_path.to_path_buf(),
        };
        return (!is_executable(&full))
            .then(|| format!("its command {command:?} is not an executable file"));
    }
    let suffixes: &[&str] = if cfg!(windows) {
        &["", ".exe", ".cmd", ".bat", ".com"]
    } else {
        &[""]
    };
    let found = std::env::split_paths(path).any(|dir: PathBuf| {
        suffixes
            .iter()
            .any(|suffix| is_executable(&dir.join(format!("{command}{suffix}"))))
    });
    (!found).then(|| {
        format!("its command {command:?} is not found on PATH; install it, or give its full path")
    })
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        metadata.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_is_named_and_a_present_one_passes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().display().to_string();
        assert!(missing_command("no-such-tool-x1", None, &path).is_some());
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert!(
                missing_command("tool", None, &path).is_some(),
                "not executable"
            );
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(missing_command("tool", None, &path), None);
        assert_eq!(missing_command("./tool", Some(dir.path()), ""), None);
        assert!(missing_command("./other", Some(dir.path()), "").is_some());
    }
}
