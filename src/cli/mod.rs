//! The `zenmode` command line: clap's argument types in `args`, one file
//! per subcommand, and the dispatch below.

pub mod args;
mod connect;
mod dashboard;
mod eval;
mod examples;
mod exec;
pub mod model;
pub mod modes;
mod profile;
mod runtime;
mod select;
mod serve;
pub mod setup;
pub mod shared;
pub mod tokens;
pub mod upstream;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cli::args::{AccessArgs, BeforeCommand, CatalogFlags, UpstreamsArg, WaitArg};

pub use args::VERSION;

#[derive(Debug, Parser)]
#[command(
    name = "zenmode",
    version = VERSION,
    about = "An MCP server that lists two tools instead of a whole suite",
    long_about = "zenmode serves the zen tool suite over the Model Context Protocol behind two tools: \
zen_select_mode recommends a mode for a task and zen_execute runs it. The model's context holds two \
small tool definitions instead of every mode's schema."
)]
pub struct Cli {
    #[command(flatten)]
    pub before: BeforeCommand,
    #[command(subcommand)]
    pub command: Command,
}

// `defer`: clap builds a subcommand's arguments only when that subcommand
// is parsed or its help shown. Building all of them cost `serve` about
// 0.5 ms of its start-up, most of it the page faults of running that code
// for the first time (docs/benchmarks.md, "Where start-up went"). A
// deferred subcommand takes the `about` of the argument structs it
// flattens, if they have doc comments, so theirs are plain comments.
//
// The enum is as large as `serve`'s flags: parsed once per process, that
// costs nothing, and boxing them would not make anything faster.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Serve MCP to a client: over stdin/stdout (default; what clients start), or listen on TCP (one JSON message a line) or Streamable HTTP (--transport tcp|http, --listen)
    Serve(serve::ServeArgs),
    /// Print what each tool-list strategy costs in tokens
    Tokens {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
        /// Count the tokens of standard input instead (prints o200k and cl100k counts as JSON)
        #[arg(long)]
        count_stdin: bool,
        /// Count many texts with one tokenizer load: each line of standard input is one text as a JSON string, and each gets its counts on a line of its own as soon as it is read
        #[arg(long, conflicts_with_all = ["count_stdin", "json"])]
        count_lines: bool,
        #[command(flatten)]
        catalog: CatalogFlags,
    },
    /// List, show or check the mode manifests
    Modes {
        #[command(subcommand)]
        command: modes::ModesCommand,
        #[command(flatten)]
        catalog: CatalogFlags,
    },
    /// Recommend a mode for a task, as zen_select_mode does
    Select {
        /// The task, in plain words
        task: String,
        /// How many modes to return [default: 3, or up to 5 when the first three are unsure]
        #[arg(long = "top")]
        top: Option<usize>,
        /// Print the exact tool reply as JSON
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        catalog: CatalogFlags,
    },
    /// Score mode selection on a labeled set (JSON lines: query, expected, acceptable)
    Eval(eval::EvalArgs),
    /// The state of every upstream server: running, idle, failed (with its last error), quarantined tools, last call
    Status {
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        upstreams: UpstreamsArg,
    },
    /// Check the upstreams file, start each server, and check file permissions and client configurations; says what to fix
    Doctor {
        #[command(flatten)]
        upstreams: UpstreamsArg,
        #[command(flatten)]
        wait: WaitArg,
    },
    /// Manage the MCP servers zenmode fronts (the --upstreams file)
    Upstream {
        #[command(subcommand)]
        command: crate::cli::upstream::UpstreamCommand,
        #[command(flatten)]
        upstreams: UpstreamsArg,
        #[command(flatten)]
        wait: WaitArg,
    },
    /// Connect a client (claude-code, claude-desktop, cursor, vscode) to zenmode; --move-servers puts its other servers behind zenmode, --undo reverses what setup changed
    Setup {
        #[command(flatten)]
        args: crate::cli::setup::SetupArgs,
        #[command(flatten)]
        upstreams: UpstreamsArg,
        #[command(flatten)]
        wait: WaitArg,
    },
    /// The embedding model select ranks with: where it is found (show), or fetch it (install)
    Model {
        #[command(subcommand)]
        command: model::ModelCommand,
    },
    /// What a client runs to use the user's shared zenmode: a stdio bridge to it, starting it when none runs (one for all clients, one process per upstream server)
    Connect {
        /// See and call only this profile's servers (`zenmode profile`)
        #[arg(long)]
        profile: Option<String>,
        /// If this starts the instance: it stops after this many seconds with no client [default: 600]
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        idle_stop_secs: Option<u64>,
        /// Stop the running shared instance instead
        #[arg(long, conflicts_with_all = ["profile", "idle_stop_secs"])]
        stop: bool,
        #[command(flatten)]
        upstreams: UpstreamsArg,
    },
    /// Open the shared instance's dashboard (starting the instance if needed): prints a one-time sign-in link and opens it
    Dashboard {
        /// Only print the link
        #[arg(long)]
        no_open: bool,
        #[command(flatten)]
        upstreams: UpstreamsArg,
    },
    /// Examples learned from your sessions (a select followed by a successful call): list or forget them
    Examples {
        #[command(subcommand)]
        command: examples::ExamplesCommand,
    },
    /// Named sets of upstream servers, one per client of the shared instance
    Profile {
        #[command(subcommand)]
        command: profile::ProfileCommand,
        #[command(flatten)]
        upstreams: UpstreamsArg,
    },
    /// Run one mode, as zen_execute does
    Exec {
        /// Mode name
        mode: String,
        /// The request as a JSON object
        #[arg(long, default_value = "{}")]
        request: String,
        /// Continue an earlier thread
        #[arg(long = "continuation-id")]
        continuation_id: Option<String>,
        #[command(flatten)]
        catalog: CatalogFlags,
        #[command(flatten)]
        access: AccessArgs,
    },
}

/// Parses the arguments, runs the command, and maps failures to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        default_sigpipe();
    }
    let reports = matches!(
        cli.command,
        Command::Setup { .. }
            | Command::Model { .. }
            | Command::Doctor { .. }
            | Command::Status { .. }
            | Command::Upstream { .. }
            | Command::Profile { .. }
            | Command::Examples { .. }
            | Command::Dashboard { .. }
    );
    let _logging = if reports {
        crate::server::logging::init_with(crate::server::logging::QUIET_FILTER)
    } else {
        crate::server::logging::init()
    };
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            crate::server::logging::print(&format!("zenmode: {error:#}"));
            ExitCode::from(2)
        }
    }
}

/// `--upstreams` (after the subcommand or before it) or `ZEN_UPSTREAMS`,
/// else the default upstreams file (which may not exist yet).
fn upstreams_path(before: &BeforeCommand, upstreams: UpstreamsArg) -> std::path::PathBuf {
    before
        .upstreams_file(Some(&upstreams))
        .unwrap_or_else(crate::platform::dirs::upstreams_file)
}

/// Rust ignores SIGPIPE, so `println!` into a closed pipe (`zenmode eval |
/// head`) panics. The one-shot commands take the Unix default instead and
/// end quietly when the reader goes away; `serve` keeps ignoring it and
/// handles a closed peer as the end of the connection.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called before any thread starts; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let before = &cli.before;
    match cli.command {
        Command::Serve(args) => {
            let catalog = before.catalog_flags(&args.catalog);
            let access = before.access(&args.access);
            serve::serve(&catalog, &access, args)
        }
        Command::Tokens {
            json,
            count_stdin,
            count_lines,
            catalog,
        } => {
            let source = if count_lines {
                tokens::TokensOf::Lines
            } else if count_stdin {
                tokens::TokensOf::Stdin
            } else {
                tokens::TokensOf::Catalog
            };
            tokens::print_tokens(&before.catalog_flags(&catalog), json, source)
        }
        Command::Modes { command, catalog } => {
            modes::modes(&before.catalog_flags(&catalog), command)
        }
        Command::Status { json, upstreams } => crate::cli::upstream::status(
            before.catalog(None, Some(&upstreams), None).upstreams,
            json,
        ),
        Command::Doctor { upstreams, wait } => {
            let catalog = before.catalog(None, Some(&upstreams), Some(&wait));
            crate::cli::upstream::doctor(catalog.upstreams, catalog.upstream_wait_secs)
        }
        Command::Upstream {
            command,
            upstreams,
            wait,
        } => {
            let catalog = before.catalog(None, Some(&upstreams), Some(&wait));
            crate::cli::upstream::run(catalog.upstreams, catalog.upstream_wait_secs, command)
        }
        Command::Setup {
            args,
            upstreams,
            wait,
        } => {
            let catalog = before.catalog(None, Some(&upstreams), Some(&wait));
            let wait = catalog.upstream_wait_secs;
            crate::cli::setup::run(
                &args,
                catalog.upstreams,
                crate::cli::args::upstream_wait(wait),
            )
        }
        Command::Select {
            task,
            top,
            json,
            catalog,
        } => select::run(&before.catalog_flags(&catalog), task, top, json),
        Command::Model { command } => model::run(command),
        Command::Examples { command } => examples::run(command),
        Command::Connect {
            profile,
            idle_stop_secs,
            stop,
            upstreams,
        } => connect::run(
            &upstreams_path(before, upstreams),
            profile.as_deref(),
            idle_stop_secs,
            stop,
        ),
        Command::Dashboard { no_open, upstreams } => {
            dashboard::run(&upstreams_path(before, upstreams), no_open)
        }
        Command::Profile { command, upstreams } => {
            profile::run(&upstreams_path(before, upstreams), command)
        }
        Command::Eval(args) => eval::eval(&before.catalog(Some(&args.modes), None, None), &args),
        Command::Exec {
            mode,
            request,
            continuation_id,
            catalog,
            access,
        } => exec::run(
            &before.catalog_flags(&catalog),
            &before.access(&access),
            &mode,
            &request,
            continuation_id.as_deref(),
        ),
    }
}
