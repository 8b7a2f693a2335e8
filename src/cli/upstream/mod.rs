//! `zenmode upstream ...`: the servers zenmode fronts, managed like
//! `claude mcp add` manages Claude Code's. Edits keep the rest of the file
//! (other entries, other clients' keys) as it was, and a file that would not
//! load is never written; nor is a server that fails to start (unless
//! `--keep`), nor one that runs zenmode itself. The file is private (0600).

mod add;
mod doctor;
mod enable;
mod file;
pub mod import;
mod list;
pub mod login;
mod logs;
mod probe;
mod refresh;
mod remove;
mod review;
mod status;
mod tools;
mod vectors;

use std::{path::PathBuf, process::ExitCode};

use clap::Subcommand;

use self::file::chosen;
use crate::gateway::GatewayDirs;

pub use add::move_in;
pub use doctor::doctor;
pub use enable::write_enabled;
pub use file::{gateway_servers, servers_mut, update_upstreams_file};
pub use remove::{forget_state, remove_entries};
pub use status::status;

#[derive(Debug, Subcommand)]
pub enum UpstreamCommand {
    /// Every configured server, its cached catalog and any quarantined tools
    List {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `zenmode upstream add NAME -- CMD ARGS...` or `--url URL`; its tools are approved as fetched now
    Add {
        name: String,
        /// A Streamable HTTP server instead of a command
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// HTTP header for --url, as 'Name: value' (repeatable)
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Environment variable for the command, as KEY=VALUE (repeatable)
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// Mode-name prefix (default: NAME)
        #[arg(long)]
        prefix: Option<String>,
        /// Replace an entry of the same name
        #[arg(long)]
        replace: bool,
        /// Write the entry without starting the server
        #[arg(long)]
        no_fetch: bool,
        /// Write the entry, disabled, even when the server fails to start
        #[arg(long)]
        keep: bool,
        /// The command and its arguments, after `--`
        #[arg(last = true, value_name = "CMD ARGS")]
        command: Vec<String>,
    },
    /// Remove a server, its cached catalog and its approvals
    Remove { name: String },
    /// Start servers, re-read their tools and update the cache (all servers without NAME)
    Refresh { name: Option<String> },
    /// Show what changed and approve the tools a server lists now, ending their quarantine
    Approve {
        name: String,
        /// Approve without asking (needed when standard input is not a terminal)
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Show a quarantined tool's approved and current definitions as a unified diff (every held tool without TOOL)
    Diff { name: String, tool: Option<String> },
    /// Turn a server on again (edits its entry only)
    Enable { name: String },
    /// Turn a server off without removing it (edits its entry only)
    Disable { name: String },
    /// A server's tools: approved or quarantined, and their read-only / destructive hints
    Tools {
        name: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// The end of a server's stderr log (kept while a serving zenmode runs it)
    Logs {
        name: String,
        /// How many lines
        #[arg(long, default_value_t = 50)]
        lines: usize,
    },
    /// Sign in to an HTTP server that asks for OAuth: prints the URL, opens a browser, waits for it on a loopback port
    Login {
        name: String,
        /// Only print the URL (for a machine without a browser)
        #[arg(long)]
        no_browser: bool,
    },
    /// Connect to URL as an upstream, sign in without a browser if asked, list its tools and call each (for the conformance suite)
    #[command(hide = true)]
    Probe {
        url: String,
        /// This client's metadata document URL, used as client ID where the authorization server supports it
        #[arg(long)]
        client_metadata_url: Option<String>,
    },
    /// Add the servers of other clients (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf): from FILE, or from the usual files, shown first
    Import {
        /// One client's file; without it the usual files are found and shown
        file: Option<PathBuf>,
        /// Replace entries whose names already exist
        #[arg(long)]
        replace: bool,
        /// Write the entries without starting the servers
        #[arg(long)]
        no_fetch: bool,
        /// Write entries whose server fails to start too, disabled
        #[arg(long)]
        keep: bool,
        /// Import what the usual files hold without asking
        #[arg(long, visible_alias = "all")]
        yes: bool,
    },
}

/// A server approved while the shared instance serves it: the instance
/// opens it again, so its clients see the approved tools now.
fn restart_in_shared_instance(file: &std::path::Path, name: &str) {
    let path = format!("servers/{}/restart", percent_encode(name));
    match crate::cli::shared::ask_instance(file, reqwest::Method::POST, &path) {
        None => {}
        Some((_, Ok(_))) => println!("the shared instance serves {name}'s approved tools now"),
        Some((_, Err(problem))) => println!(
            "the shared instance did not restart {name} ({problem}); it serves the approval from its next start"
        ),
    }
}

/// A name as one URL path segment.
fn percent_encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Runs one `upstream` command on `file` (`--upstreams`, else the default
/// file), waiting at most `wait_secs` for a server to list its tools.
pub fn run(
    file: Option<PathBuf>,
    wait_secs: f64,
    command: UpstreamCommand,
) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(crate::platform::dirs::upstreams_file);
    let dirs = GatewayDirs::from_env();
    let wait = crate::cli::args::upstream_wait(wait_secs);
    let runtime = crate::cli::runtime::runtime(false)?;
    match command {
        UpstreamCommand::List { json } => list::list(&file, &dirs, json),
        UpstreamCommand::Login { name, no_browser } => {
            crate::cli::upstream::login::login(&file, &name, no_browser)
        }
        UpstreamCommand::Probe {
            url,
            client_metadata_url,
        } => probe::probe(&url, client_metadata_url),
        UpstreamCommand::Add {
            name,
            url,
            headers,
            env,
            prefix,
            replace,
            no_fetch,
            keep,
            command,
        } => add::run(
            &file, &dirs, &runtime, wait, name, url, headers, env, prefix, replace, no_fetch, keep,
            command,
        ),
        UpstreamCommand::Remove { name } => remove::run(&file, &dirs, &name),
        UpstreamCommand::Refresh { name } => {
            refresh::run(&file, &dirs, &runtime, wait, name.as_deref())
        }
        UpstreamCommand::Approve { name, yes } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            let code = runtime.block_on(review::approve_reviewed(&config, &dirs, wait, yes))?;
            drop(runtime);
            if code == ExitCode::SUCCESS {
                restart_in_shared_instance(&file, &name);
            }
            Ok(code)
        }
        UpstreamCommand::Diff { name, tool } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            runtime.block_on(review::diff(&config, &dirs, wait, tool.as_deref()))
        }
        UpstreamCommand::Enable { name } => enable::set_enabled(&file, &dirs, &name, true),
        UpstreamCommand::Disable { name } => enable::set_enabled(&file, &dirs, &name, false),
        UpstreamCommand::Tools { name, json } => {
            let config = chosen(&file, Some(&name))?.remove(0);
            runtime.block_on(tools::tools(&config, &dirs, wait, json))
        }
        UpstreamCommand::Logs { name, lines } => logs::run(&file, &dirs, &name, lines),
        UpstreamCommand::Import {
            file: source,
            replace,
            no_fetch,
            keep,
            yes,
        } => import::run(
            &file, &dirs, &runtime, wait, source, replace, no_fetch, keep, yes,
        ),
    }
}
