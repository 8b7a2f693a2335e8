//! Where zenmode keeps its files: one resolver for every directory.
//!
//! | what | variable | else (Linux) | else |
//! |---|---|---|---|
//! | configuration: the upstreams file, OAuth tokens | `ZEN_CONFIG_DIR` | `~/.config/zenmode` | `<temp>/zenmode-config` |
//! | state: pins, status, logs, threads, setup's copies, the shared instance | `ZEN_STATE_DIR` | `~/.local/state/zenmode` | `<temp>/zenmode-state` |
//! | cache: upstream catalogs, the model's vectors | `ZEN_CACHE_DIR` | `~/.cache/zenmode` | `<temp>/zenmode-cache` |
//! | installed models | `XDG_DATA_HOME` | `~/.local/share/zenmode/model` | none |
//!
//! The platform's own directories come from the `dirs` crate (macOS and
//! Windows have theirs); the last column is for a process without a home
//! directory. The model's root is spelled out rather than taken from the
//! platform, so that `scripts/install.sh` and the binary agree everywhere.

use std::path::PathBuf;

use super::settings;

/// zenmode's configuration directory.
pub fn config_dir() -> PathBuf {
    resolve(settings::CONFIG_DIR, dirs::config_dir(), "zenmode-config")
}

/// zenmode's state directory: what losing would cost protection or history.
pub fn state_dir() -> PathBuf {
    resolve(
        settings::STATE_DIR,
        dirs::state_dir().or_else(dirs::data_local_dir),
        "zenmode-state",
    )
}

/// zenmode's cache directory: what losing costs only a fetch.
pub fn cache_dir() -> PathBuf {
    resolve(settings::CACHE_DIR, dirs::cache_dir(), "zenmode-cache")
}

/// Where the shared instance (`zenmode connect`) keeps its address, token,
/// locks and log: one instance per user, so one folder per state directory.
pub fn shared_instance_dir() -> PathBuf {
    state_dir().join("shared")
}

/// The examples learned from this user's sessions (`zenmode examples`).
pub fn learned_examples_file() -> PathBuf {
    state_dir().join("learned").join("examples.json")
}

/// The upstreams file when no `--upstreams` is given.
pub fn upstreams_file() -> PathBuf {
    config_dir().join("upstreams.json")
}

/// Where a Python package installs models beside the binary it brings
/// (`pip install zenmode`: the binary in `PREFIX/bin`, the model's wheel's
/// data in `PREFIX/share/zenmode/model`); `None` when the binary's own
/// path is unknown.
pub fn model_root_beside_binary() -> Option<PathBuf> {
    let binary = std::env::current_exe().ok()?.canonicalize().ok()?;
    Some(binary.parent()?.parent()?.join("share/zenmode/model"))
}

/// Where `scripts/install.sh` and `zenmode model install` put models:
/// `${XDG_DATA_HOME:-$HOME/.local/share}/zenmode/model`; `None` without a
/// home directory.
pub fn model_root() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".local/share"))
        })?;
    Some(data.join("zenmode").join("model"))
}

/// The variable's directory, else `zenmode` in the platform's, else a
/// folder in the temporary directory.
fn resolve(variable: &str, platform: Option<PathBuf>, fallback: &str) -> PathBuf {
    settings::get_os(variable)
        .map(PathBuf::from)
        .or_else(|| platform.map(|dir| dir.join("zenmode")))
        .unwrap_or_else(|| std::env::temp_dir().join(fallback))
}
