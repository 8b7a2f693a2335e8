//! Where each MCP client keeps its servers: the one table that `setup`
//! (which writes a client's file), `upstream import` (which reads them
//! all) and `doctor` (which checks them) share.
//!
//! | client | scope | file |
//! |---|---|---|
//! | Claude Desktop | user | `Claude/claude_desktop_config.json` in the OS's config directory |
//! | Claude Code | user and local | `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json` |
//! | Cursor | user | `~/.cursor/mcp.json` |
//! | Windsurf | user | `~/.codeium/windsurf/mcp_config.json` |
//! | VS Code | user | `Code/User/mcp.json` in the OS's config directory |
//! | VS Code | user settings | `Code/User/settings.json` there (`mcp.servers`) |
//! | Claude Code | project | `.mcp.json` in the working directory |
//! | Cursor | project | `.cursor/mcp.json` there |
//! | VS Code | project | `.vscode/mcp.json` there |

use std::path::{Path, PathBuf};

/// An MCP client whose files zenmode knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Windsurf,
    VsCode,
}

impl Client {
    /// The name people know the client by.
    pub fn label(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Windsurf => "Windsurf",
            Client::VsCode => "VS Code",
        }
    }
}

/// The directory a client file's path starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Home,
    /// The OS's configuration directory (`~/.config` on Linux).
    Config,
    /// Claude Code's own: `$CLAUDE_CONFIG_DIR`, else the home directory.
    ClaudeConfig,
    /// The directory zenmode runs in (a project's files).
    WorkingDir,
}

/// One file a client keeps servers in.
#[derive(Debug)]
pub struct ClientFile {
    pub client: Client,
    /// Which of the client's scopes the file holds (empty: its only one).
    pub scope: &'static str,
    base: Base,
    relative: &'static str,
}

impl ClientFile {
    /// "Claude Code (project)", or the client alone for its only file.
    pub fn label(&self) -> String {
        if self.scope.is_empty() {
            self.client.label().to_owned()
        } else {
            format!("{} ({})", self.client.label(), self.scope)
        }
    }

    /// Whether the file belongs to the user rather than to a project.
    pub fn is_users(&self) -> bool {
        self.base != Base::WorkingDir
    }

    /// The file's path, `None` when its base directory cannot be told (no
    /// home directory).
    pub fn path(&self, cwd: &Path) -> Option<PathBuf> {
        let base = match self.base {
            Base::Home => dirs::home_dir()?,
            Base::Config => dirs::config_dir()?,
            Base::ClaudeConfig => std::env::var_os("CLAUDE_CONFIG_DIR")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
                .or_else(dirs::home_dir)?,
            Base::WorkingDir => cwd.to_path_buf(),
        };
        Some(base.join(self.relative))
    }
}

const fn file(
    client: Client,
    scope: &'static str,
    base: Base,
    relative: &'static str,
) -> ClientFile {
    ClientFile {
        client,
        scope,
        base,
        relative,
    }
}

/// Every client file, users' first; each client's first file is the one
/// `zenmode setup` writes.
pub const CLIENT_FILES: &[ClientFile] = &[
    file(
        Client::ClaudeDesktop,
        "",
        Base::Config,
        "Claude/claude_desktop_config.json",
    ),
    file(
        Client::ClaudeCode,
        "user and local",
        Base::ClaudeConfig,
        ".claude.json",
    ),
    file(Client::Cursor, "user", Base::Home, ".cursor/mcp.json"),
    file(
        Client::Windsurf,
        "",
        Base::Home,
        ".codeium/windsurf/mcp_config.json",
    ),
    file(Client::VsCode, "user", Base::Config, "Code/User/mcp.json"),
    file(
        Client::VsCode,
        "user settings",
        Base::Config,
        "Code/User/settings.json",
    ),
    file(Client::ClaudeCode, "project", Base::WorkingDir, ".mcp.json"),
    file(
        Client::Cursor,
        "project",
        Base::WorkingDir,
        ".cursor/mcp.json",
    ),
    file(
        Client::VsCode,
        "project",
        Base::WorkingDir,
        ".vscode/mcp.json",
    ),
];

/// The file `zenmode setup` writes for `client`: its first in the table.
pub fn setup_file(client: Client) -> &'static ClientFile {
    CLIENT_FILES
        .iter()
        .find(|file| file.client == client)
        .expect("every client has a file in the table")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_has_a_users_file_first() {
        for client in [
            Client::ClaudeDesktop,
            Client::ClaudeCode,
            Client::Cursor,
            Client::Windsurf,
            Client::VsCode,
        ] {
            assert!(setup_file(client).is_users(), "{client:?}");
        }
    }

    #[test]
    fn project_files_are_under_the_working_directory() {
        let cwd = Path::new("/work/project");
        let project: Vec<PathBuf> = CLIENT_FILES
            .iter()
            .filter(|file| !file.is_users())
            .filter_map(|file| file.path(cwd))
            .collect();
        assert_eq!(project.len(), 3);
        assert!(project.iter().all(|path| path.starts_with(cwd)));
        assert_eq!(
            setup_file(Client::ClaudeCode).label(),
            "Claude Code (user and local)"
        );
        assert_eq!(setup_file(Client::Windsurf).label(), "Windsurf");
    }
}
