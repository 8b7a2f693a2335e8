//! Where each client keeps its MCP servers, and the entry that starts
//! zenmode in its format. Kept apart from the command's flow so that a new
//! client is one more arm in each `match` here.
//!
//! Where each client's file is: `platform::client_files`, the one table
//! `setup`, `upstream import` and `doctor` share. The key of the servers
//! is `servers` for VS Code (entries carry `type`), else `mcpServers`;
//! Claude Code gets zenmode through `claude mcp add --scope user`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::ValueEnum;
use serde_json::{Value, json};

use crate::platform::client_files::{self, Client};

/// The clients `zenmode setup` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientKind {
    /// Claude Code, through its `claude mcp` command (user scope)
    ClaudeCode,
    /// Claude Desktop's claude_desktop_config.json
    ClaudeDesktop,
    /// Cursor's ~/.cursor/mcp.json (every project)
    Cursor,
    /// VS Code's user mcp.json
    Vscode,
}

impl ClientKind {
    /// The name people know the client by.
    pub fn label(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::ClaudeDesktop => "Claude Desktop",
            Self::Cursor => "Cursor",
            Self::Vscode => "VS Code",
        }
    }

    /// The name on the command line (`zenmode setup NAME`).
    pub fn arg(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::ClaudeDesktop => "claude-desktop",
            Self::Cursor => "cursor",
            Self::Vscode => "vscode",
        }
    }

    /// The key of the server object in the client's file.
    pub fn servers_key(self) -> &'static str {
        match self {
            Self::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// The client as the table of client files names it.
    pub fn client(self) -> Client {
        match self {
            Self::ClaudeCode => Client::ClaudeCode,
            Self::ClaudeDesktop => Client::ClaudeDesktop,
            Self::Cursor => Client::Cursor,
            Self::Vscode => Client::VsCode,
        }
    }

    /// The JSON file that holds the client's servers (it may not exist yet):
    /// its users' file in the one table of client files.
    pub fn config_file(self) -> anyhow::Result<PathBuf> {
        let cwd = std::env::current_dir().unwrap_or_default();
        client_files::setup_file(self.client())
            .path(&cwd)
            .context("cannot tell where the client keeps its servers: HOME is not set")
    }

    /// Fails with what to do when the client does not seem installed: for
    /// Claude Code, `claude` is not on PATH; for the others, the directory
    /// the client creates on its first start is missing (writing a file
    /// there would configure nothing).
    pub fn check_installed(self, file: &Path) -> anyhow::Result<()> {
        if self == Self::ClaudeCode {
            if find_on_path("claude").is_none() {
                bail!(
                    "Claude Code is not installed here: no `claude` command on PATH (install it with `npm install -g @anthropic-ai/claude-code`); nothing was changed"
                );
            }
            return Ok(());
        }
        let dir = file.parent().unwrap_or(file);
        if !dir.is_dir() {
            bail!(
                "{} does not seem installed: {} does not exist (start {} once, or create that directory); nothing was changed",
                self.label(),
                dir.display(),
                self.label()
            );
        }
        Ok(())
    }

    /// The entry that runs `program serve_args...` in this client's format.
    pub fn entry(self, program: &Path, serve_args: &[String]) -> Value {
        let command = program.to_string_lossy();
        match self {
            Self::Vscode => json!({"type": "stdio", "command": command, "args": serve_args}),
            _ => json!({"command": command, "args": serve_args}),
        }
    }
}

/// The first file named `name` in a PATH directory.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
