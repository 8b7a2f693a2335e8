//! The `zenmode` command line: argument parsing and one function per subcommand.

pub mod modes;
pub mod setup;
#[cfg(feature = "tokens")]
pub mod tokens;
pub mod upstream;

use std::{io::Write, net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;

use crate::{
    call::CallContext,
    catalog::describe::{self, FieldSet},
    catalog::{Catalog, CatalogSources},
    cli::modes::check,
    cli::modes::markdown,
    conversation::{MemoryConfig, StoreUrl, open_store},
    engine::Engine,
    executor,
    gateway::{Gateway, GatewayDirs},
    server::ZenServer,
    server::http,
    server::listener,
    server::shutdown,
    server::transport::DEFAULT_MAX_MESSAGE_BYTES,
    services::Services,
    surface::{
        self, StrategyKind, SurfaceOptions, ToolLoading,
        zen::{self, select_mode},
    },
};

#[derive(Debug, Parser)]
#[command(
    name = "zenmode",
    version,
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

/// The flags older command lines give before the subcommand
/// (`zenmode --catalog FILE select ...`). They still work, but are hidden:
/// each subcommand's help lists the flags it uses, and only those. A flag
/// given after the subcommand wins over the same one given before it.
#[derive(Debug, Args)]
pub struct BeforeCommand {
    #[arg(
        long = "modes-dir",
        id = "before_modes_dir",
        hide = true,
        value_delimiter = ','
    )]
    pub modes_dirs: Vec<PathBuf>,
    #[arg(long = "catalog", id = "before_catalog", hide = true)]
    pub catalogs: Vec<PathBuf>,
    #[arg(long = "upstreams", id = "before_upstreams", hide = true)]
    pub upstreams: Option<PathBuf>,
    #[arg(long = "no-builtin-modes", id = "before_no_builtin_modes", hide = true)]
    pub no_builtin_modes: bool,
    #[arg(
        long = "upstream-wait-secs",
        id = "before_upstream_wait_secs",
        hide = true
    )]
    pub upstream_wait_secs: Option<f64>,
    #[arg(long = "embedding-model", id = "before_embedding_model", hide = true)]
    pub embedding_model: Option<PathBuf>,
    #[arg(long = "allow-root", id = "before_allow_root", hide = true)]
    pub allow_roots: Vec<PathBuf>,
    #[arg(long = "store", id = "before_store", hide = true)]
    pub store: Option<String>,
}

// What running modes may touch; `serve` and `exec` only.
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// Let modes read files under DIR too (repeatable; the working directory is always allowed; env ZEN_ALLOWED_ROOTS, ':'-separated)
    #[arg(long = "allow-root", value_name = "DIR", global = true)]
    pub allow_roots: Vec<PathBuf>,
    /// Where conversation threads live: memory:, sqlite:PATH or redis://HOST:PORT [default: sqlite:threads.db in the state directory]
    #[arg(long, value_name = "URL", env = "ZEN_STORE", global = true)]
    pub store: Option<String>,
}

// Where modes come from; the commands that load the catalog.
#[derive(Debug, Clone, Args)]
pub struct ModeArgs {
    /// Add or override modes with the manifests (*.json) in DIR (repeatable)
    #[arg(
        long = "modes-dir",
        value_name = "DIR",
        global = true,
        env = "ZEN_MODES_DIR",
        value_delimiter = ','
    )]
    pub modes_dirs: Vec<PathBuf>,
    /// Import a tools/list-shaped JSON file as extra modes without executors (repeatable)
    #[arg(long = "catalog", value_name = "FILE", global = true)]
    pub catalogs: Vec<PathBuf>,
    /// Leave zenmode's own modes out: only the upstream servers' tools and the --catalog and --modes-dir modes remain
    #[arg(long, global = true)]
    pub no_builtin_modes: bool,
    /// The full all-MiniLM-L6-v2 model in DIR (config.json, model.safetensors) backs the distilled table: it ranks the requests for tools without example phrasings that the table is unsure of. Default: the model `scripts/install.sh` puts in $XDG_DATA_HOME/zenmode/model (~/.local/share/...), if there; `none`: the table alone
    #[arg(long, value_name = "DIR", global = true, env = "ZEN_EMBEDDING_MODEL")]
    pub embedding_model: Option<PathBuf>,
}

// The gateway's upstreams file; the commands that read or write it.
#[derive(Debug, Clone, Args)]
pub struct UpstreamsArg {
    /// The upstreams file: the MCP servers zenmode fronts ({"mcpServers": {...}}, as Claude and Cursor write it) [default: zenmode/upstreams.json in the config directory, or in ZEN_CONFIG_DIR]
    #[arg(long, value_name = "FILE", global = true, env = "ZEN_UPSTREAMS")]
    pub upstreams: Option<PathBuf>,
}

// How long to wait for upstream servers; the commands that start them.
#[derive(Debug, Clone, Args)]
pub struct WaitArg {
    /// How long to wait for an upstream server to list its tools (at start-up: those whose catalog is not cached yet, for the lazy and groups strategies, --no-builtin-modes and one-shot commands; the others start them in the background) [default: 20]
    #[arg(long, value_name = "SECS", global = true)]
    pub upstream_wait_secs: Option<f64>,
}

// The catalog flags of `serve`, `exec`, `select`, `tokens` and `modes`.
#[derive(Debug, Clone, Args)]
pub struct CatalogFlags {
    #[command(flatten)]
    pub modes: ModeArgs,
    #[command(flatten)]
    pub upstreams: UpstreamsArg,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// How long start-up waits for upstreams when no flag says.
const DEFAULT_UPSTREAM_WAIT_SECS: f64 = 20.0;

/// Where modes come from, with the flags given before and after the
/// subcommand merged (after wins).
#[derive(Debug, Clone, Default)]
pub struct CatalogArgs {
    pub modes_dirs: Vec<PathBuf>,
    pub catalogs: Vec<PathBuf>,
    pub upstreams: Option<PathBuf>,
    pub no_builtin_modes: bool,
    pub upstream_wait_secs: f64,
    pub embedding_model: Option<PathBuf>,
}

impl BeforeCommand {
    /// The catalog flags: a group the subcommand has wins over these.
    fn catalog(
        &self,
        modes: Option<&ModeArgs>,
        upstreams: Option<&UpstreamsArg>,
        wait: Option<&WaitArg>,
    ) -> CatalogArgs {
        fn or<T: Clone>(after: &[T], before: &[T]) -> Vec<T> {
            if after.is_empty() { before } else { after }.to_vec()
        }
        CatalogArgs {
            modes_dirs: or(
                modes.map(|m| m.modes_dirs.as_slice()).unwrap_or_default(),
                &self.modes_dirs,
            ),
            catalogs: or(
                modes.map(|m| m.catalogs.as_slice()).unwrap_or_default(),
                &self.catalogs,
            ),
            no_builtin_modes: modes.is_some_and(|m| m.no_builtin_modes) || self.no_builtin_modes,
            embedding_model: modes
                .and_then(|m| m.embedding_model.clone())
                .or_else(|| self.embedding_model.clone()),
            upstreams: upstreams
                .and_then(|u| u.upstreams.clone())
                .or_else(|| self.upstreams.clone()),
            upstream_wait_secs: wait
                .and_then(|w| w.upstream_wait_secs)
                .or(self.upstream_wait_secs)
                .unwrap_or(DEFAULT_UPSTREAM_WAIT_SECS),
        }
    }

    fn catalog_flags(&self, flags: &CatalogFlags) -> CatalogArgs {
        self.catalog(
            Some(&flags.modes),
            Some(&flags.upstreams),
            Some(&flags.wait),
        )
    }

    fn access(&self, after: &AccessArgs) -> AccessArgs {
        AccessArgs {
            allow_roots: if after.allow_roots.is_empty() {
                self.allow_roots.clone()
            } else {
                after.allow_roots.clone()
            },
            store: after.store.clone().or_else(|| self.store.clone()),
        }
    }
}

impl CatalogArgs {
    /// The catalog without upstreams (they need a runtime: see [`Self::open`]).
    pub fn load(&self) -> anyhow::Result<Catalog> {
        self.choose_model()?;
        let sources = CatalogSources {
            no_builtin: self.no_builtin_modes,
            modes_dirs: self.modes_dirs.clone(),
            foreign_catalogs: self.catalogs.clone(),
        };
        Catalog::load(&sources).context("cannot load the mode catalog")
    }

    /// Sets up the full embedding model. A directory named on the command
    /// line or in the environment must load (an error says why); the
    /// default one is only named here and opened by the first index that
    /// needs it, so start-up never waits for it, and a default install
    /// without the weights ranks with the table, noted at debug level.
    fn choose_model(&self) -> anyhow::Result<()> {
        use crate::select::embedding;
        let cache = || crate::gateway::GatewayDirs::from_env().cache;
        match &self.embedding_model {
            Some(dir) if dir.as_os_str() == "none" => {
                tracing::debug!("embedding model off (--embedding-model none)");
            }
            Some(dir) => {
                embedding::use_model(dir, Some(&cache()))
                    .map_err(anyhow::Error::msg)
                    .context(
                        "cannot load the embedding model (--embedding-model or ZEN_EMBEDDING_MODEL; `none` turns it off)",
                    )?;
            }
            None if cfg!(feature = "transformer") => match embedding::default_model_dir() {
                Some(dir) => {
                    embedding::use_model_later(&dir, Some(&cache()));
                }
                None => tracing::debug!(
                    "no embedding model installed (bash scripts/install.sh puts one in $XDG_DATA_HOME/zenmode/model); the distilled table ranks alone"
                ),
            },
            None => {}
        }
        Ok(())
    }

    /// The upstreams file in use: `--upstreams`, else the default file if it exists.
    pub fn upstreams_file(&self) -> Option<PathBuf> {
        self.upstreams
            .clone()
            .or_else(|| Some(crate::cli::upstream::default_upstreams_file()).filter(|p| p.exists()))
    }

    /// The catalog with every upstream's modes, and the gateway that runs
    /// them; waits up to `--upstream-wait-secs` for upstreams whose catalog
    /// is not cached (one-shot commands).
    pub fn open(
        &self,
        runtime: &tokio::runtime::Runtime,
    ) -> anyhow::Result<(Catalog, Arc<Gateway>)> {
        self.open_with(runtime, true)
    }

    /// [`Self::open`]; with `settle` false, start-up does not wait for
    /// uncached upstreams: they start in the background and their modes
    /// join later (servers whose tool list is fixed). A broken upstreams
    /// file or entry never fails this: it is logged and the rest served.
    pub fn open_with(
        &self,
        runtime: &tokio::runtime::Runtime,
        settle: bool,
    ) -> anyhow::Result<(Catalog, Arc<Gateway>)> {
        let catalog = self.load()?;
        if !(self.upstream_wait_secs.is_finite() && self.upstream_wait_secs > 0.0) {
            bail!("--upstream-wait-secs must be a positive number of seconds");
        }
        let Some(file) = self.upstreams_file() else {
            return Ok((catalog, Arc::default()));
        };
        if !file.exists() {
            tracing::warn!(
                "{}: no such file; no upstream is served until it exists",
                file.display()
            );
        }
        let gateway = {
            let _entered = runtime.enter();
            Gateway::open(Some(&file), GatewayDirs::from_env())
        };
        if settle || self.no_builtin_modes {
            let wait = std::time::Duration::from_secs_f64(self.upstream_wait_secs.min(600.0));
            runtime.block_on(gateway.settle(wait));
        }
        let (_, modes) = gateway.modes();
        let catalog = catalog.with_shared_modes(modes);
        if catalog.is_empty() {
            bail!(
                "no modes to serve: --no-builtin-modes leaves nothing, and no upstream offered a tool"
            );
        }
        Ok((catalog, gateway))
    }
}

// `defer`: clap builds a subcommand's arguments only when that subcommand
// is parsed or its help shown. Building all of them cost `serve` about
// 0.5 ms of its start-up, most of it the page faults of running that code
// for the first time (docs/selection.md, "Where start-up went"). A
// deferred subcommand takes the `about` of the argument structs it
// flattens, if they have doc comments, so theirs are plain comments.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Serve MCP to a client: over stdin/stdout (default; what clients start), or listen on TCP (one JSON message a line) or Streamable HTTP (--transport tcp|http, --listen)
    Serve(ServeArgs),
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
        command: ModesCommand,
        #[command(flatten)]
        catalog: CatalogFlags,
    },
    /// Recommend a mode for a task, as zen_select_mode does
    Select {
        /// The task, in plain words
        task: String,
        /// How many modes to return
        #[arg(long = "top", default_value_t = select_mode::DEFAULT_TOP_K)]
        top: usize,
        /// Print the exact tool reply as JSON
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        catalog: CatalogFlags,
    },
    /// Score mode selection on a labeled set (JSON lines: query, expected, acceptable)
    Eval(EvalArgs),
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
    /// Connect a client (claude-code, claude-desktop, cursor, vscode) to zenmode; --move-servers puts its other servers behind zenmode, --undo restores its configuration
    Setup {
        #[command(flatten)]
        args: crate::cli::setup::SetupArgs,
        #[command(flatten)]
        upstreams: UpstreamsArg,
        #[command(flatten)]
        wait: WaitArg,
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

// `zenmode eval`; `--catalog FILE` adds foreign tools to rank.
#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub modes: ModeArgs,
    /// Labels file: one {"query", "expected", "acceptable"?} JSON object per
    /// line ("expected": null for a query no mode fits); repeat to pool files
    #[arg(long, value_name = "FILE", required = true)]
    pub labels: Vec<PathBuf>,
    /// Ranking to score: the fused ranker, one signal alone, or plain BM25
    #[arg(long, value_enum, default_value = "full")]
    pub ranker: crate::select::Ranker,
    /// Remove this share of the expected modes from the catalog (picked by a
    /// stable hash of their names); their queries become no-fit queries
    #[arg(long, value_name = "SHARE", value_parser = share_in_unit_range)]
    pub hold_out: Option<f64>,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// List every miss in the table
    #[arg(long)]
    pub misses: bool,
    /// Exit non-zero if top-1 is below this share (for CI on your own catalog)
    #[arg(long, value_name = "SHARE")]
    pub min_top1: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub enum ModesCommand {
    /// One line per mode
    List,
    /// Everything about one mode
    Show { name: String },
    /// Compile every schema and validate every example (non-zero exit on problems)
    Check,
    /// Print the mode table for README.md (Markdown)
    Table,
    /// Print the full mode reference, docs/modes.md (Markdown)
    Docs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportKind {
    /// One session over stdin and stdout, for a client that starts zenmode
    Stdio,
    /// Sessions over TCP connections at --listen, one JSON-RPC message a line
    Tcp,
    /// Streamable HTTP at /mcp (and /healthz)
    Http,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub catalog: CatalogFlags,
    #[command(flatten)]
    pub access: AccessArgs,
    /// How to present the modes as tools [default: zen]
    #[arg(long, value_enum, env = "ZEN_STRATEGY")]
    pub strategy: Option<StrategyKind>,
    /// Same as --strategy full: every mode as its own tool (the original tool list)
    #[arg(long)]
    pub full: bool,
    /// categories strategy: list every tool in full (eager), with a stripped schema (stripped), none (lazy) or the pinned ones (core)
    #[arg(long, value_enum, env = "TOOL_LOADING", ignore_case = true)]
    pub tool_loading: Option<ToolLoading>,
    /// groups strategy: groups of which at most one may be active, e.g. workflow,conversation (repeatable)
    #[arg(long = "exclusive-groups", value_name = "GROUPS")]
    pub exclusive_groups: Vec<String>,
    /// Put PREFIX before the name of every meta tool, under any strategy
    /// (`--strategy discover --tool-prefix afd-` gives afd-discover, afd-detail, afd-call...)
    #[arg(
        long,
        value_name = "PREFIX",
        env = "ZEN_TOOL_PREFIX",
        default_value = ""
    )]
    pub tool_prefix: String,
    /// groups strategy: a call to a hidden tool names the activator instead of "tool not found"
    #[arg(long)]
    pub hidden_tool_hints: bool,
    /// Do not mark meta tools and pinned modes with _meta "anthropic/alwaysLoad"
    #[arg(long)]
    pub no_always_load: bool,
    /// Also list these modes as native tools beside the meta tools (comma-separated)
    #[arg(
        long,
        value_name = "MODES",
        env = "ZEN_PINNED_MODES",
        value_delimiter = ','
    )]
    pub pin: Vec<String>,
    /// How clients reach this server
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: TransportKind,
    /// Address for --transport tcp or http (port 0 picks a free port)
    #[arg(long, default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
    /// Allow --listen on a non-loopback address (http also needs a token)
    #[arg(long)]
    pub allow_remote: bool,
    /// Put each call's arguments in its activity log line (by default the line has the tool, mode, server, duration, outcome and size only)
    #[arg(long)]
    pub log_arguments: bool,
    /// http: require `Authorization: Bearer <token>`, the token being this file's first line
    #[arg(long, value_name = "FILE")]
    pub auth_token_file: Option<PathBuf>,
    /// http: a browser origin allowed to call (e.g. http://localhost:3000; repeatable); any other Origin gets 403
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// http: a host name accepted in the Host header (repeatable; default: loopback names, or any with --allow-remote)
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
    /// Largest accepted message (http: request body) in bytes; longer ones get an error and are discarded
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE_BYTES, value_parser = clap::value_parser!(usize))]
    pub max_message_bytes: usize,
    /// tcp, http: close a connection after this many seconds without a request (http: --header-timeout-secs, if shorter, closes it first; also ends an unused session)
    #[arg(long, default_value_t = listener::TcpLimits::DEFAULT_IDLE_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// tcp, http: most connections served at once; one more is refused and closed
    #[arg(long, default_value_t = listener::TcpLimits::DEFAULT_MAX_CONNECTIONS, value_parser = clap::value_parser!(usize))]
    pub max_connections: usize,
    /// http: most requests in progress at once; one more gets 503
    #[arg(long, default_value_t = http::HttpOptions::DEFAULT_MAX_REQUESTS_IN_FLIGHT, value_parser = clap::value_parser!(usize))]
    pub max_requests_in_flight: usize,
    /// http: most legacy sessions (`Mcp-Session-Id`) held at once; a new one past it ends the least recently used
    #[arg(long, env = "ZEN_MAX_SESSIONS", default_value_t = http::HttpOptions::DEFAULT_MAX_SESSIONS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// http: most connections from one IP address at once; one more is refused with 503
    #[arg(long, env = "ZEN_MAX_CONNECTIONS_PER_IP", default_value_t = http::HttpOptions::DEFAULT_MAX_CONNECTIONS_PER_IP, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_ip: u64,
    /// http: seconds a client has to send a request's headers (also how long a kept-alive connection may wait for its next request)
    #[arg(long, env = "ZEN_HEADER_TIMEOUT_SECS", default_value_t = http::HttpOptions::DEFAULT_HEADER_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,
    /// http: seconds a client has to send a whole request body; a slower one gets 408
    #[arg(long, env = "ZEN_BODY_TIMEOUT_SECS", default_value_t = http::HttpOptions::DEFAULT_BODY_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
}

impl ServeArgs {
    /// The HTTP listener's options; the token comes from --auth-token-file,
    /// else from `ZEN_AUTH_TOKEN`.
    fn http_options(&self) -> anyhow::Result<http::HttpOptions> {
        let auth_token = match &self.auth_token_file {
            Some(path) => Some(http::read_token_file(path).map_err(anyhow::Error::msg)?),
            None => std::env::var("ZEN_AUTH_TOKEN")
                .ok()
                .map(|token| token.trim().to_owned())
                .filter(|token| !token.is_empty()),
        };
        if let Some(token) = &auth_token {
            crate::platform::redact::register(&crate::platform::redact::Redactor::new(vec![
                token.clone(),
            ]));
        }
        let allowed_hosts = if !self.allow_hosts.is_empty() {
            Some(self.allow_hosts.clone())
        } else if self.allow_remote {
            Some(Vec::new())
        } else {
            None
        };
        Ok(http::HttpOptions {
            max_body_bytes: self.max_message_bytes,
            max_connections: self.max_connections.max(1),
            max_requests_in_flight: self.max_requests_in_flight,
            idle_timeout: std::time::Duration::from_secs(self.idle_timeout_secs),
            max_sessions: usize::try_from(self.max_sessions).unwrap_or(usize::MAX),
            max_connections_per_ip: usize::try_from(self.max_connections_per_ip)
                .unwrap_or(usize::MAX),
            header_timeout: std::time::Duration::from_secs(self.header_timeout_secs),
            body_timeout: std::time::Duration::from_secs(self.body_timeout_secs),
            auth_token,
            allowed_origins: self.allow_origins.clone(),
            allowed_hosts,
        })
    }

    /// The strategy, from the first of: `--strategy` (or `ZEN_STRATEGY`);
    /// `--full` or `ZEN_TOKEN_OPTIMIZATION=disabled` (as zen users know it);
    /// `LAZY_MODE=true`; `--tool-loading` (or `TOOL_LOADING`), which picks
    /// `categories`; and otherwise `zen`.
    fn strategy(&self) -> anyhow::Result<StrategyKind> {
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_ascii_lowercase())
        };
        let optimization_disabled = match env("ZEN_TOKEN_OPTIMIZATION").as_deref() {
            None | Some("" | "enabled") => false,
            Some("disabled") => true,
            Some(other) => {
                bail!("ZEN_TOKEN_OPTIMIZATION must be \"enabled\" or \"disabled\" (got {other:?})")
            }
        };
        let full = self.full || optimization_disabled;
        if let Some(strategy) = self.strategy {
            if full && strategy != StrategyKind::Full {
                bail!(
                    "--full (or ZEN_TOKEN_OPTIMIZATION=disabled) asks for the full list, but --strategy asks for {strategy:?}; give one"
                );
            }
            return Ok(strategy);
        }
        if full {
            return Ok(StrategyKind::Full);
        }
        let lazy = match env("LAZY_MODE").as_deref() {
            None | Some("" | "false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => bail!("LAZY_MODE must be true or false (got {other:?})"),
        };
        Ok(if lazy {
            StrategyKind::Lazy
        } else if self.tool_loading.is_some() {
            StrategyKind::Categories
        } else {
            StrategyKind::Zen
        })
    }

    fn surface_options(&self) -> SurfaceOptions {
        SurfaceOptions {
            always_load: !self.no_always_load,
            pinned: self
                .pin
                .iter()
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect(),
            tool_loading: self.tool_loading.unwrap_or_default(),
            exclusive_groups: self
                .exclusive_groups
                .iter()
                .map(|set| {
                    set.split(',')
                        .map(|g| g.trim().to_owned())
                        .filter(|g| !g.is_empty())
                        .collect()
                })
                .collect(),
            unavailable: Vec::new(),
            hidden_tool_hints: self.hidden_tool_hints,
            tool_prefix: self.tool_prefix.trim().to_owned(),
        }
    }
}

/// Parses the arguments, runs the command, and maps failures to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        default_sigpipe();
    }
    let _logging = crate::server::logging::init();
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            crate::server::logging::print(&format!("zenmode: {error:#}"));
            ExitCode::from(2)
        }
    }
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
            serve(&catalog, &access, args)
        }
        Command::Tokens {
            json,
            count_stdin,
            count_lines,
            catalog,
        } => {
            let source = if count_lines {
                TokensOf::Lines
            } else if count_stdin {
                TokensOf::Stdin
            } else {
                TokensOf::Catalog
            };
            print_tokens(&before.catalog_flags(&catalog), json, source)
        }
        Command::Modes { command, catalog } => modes(&before.catalog_flags(&catalog), command),
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
                std::time::Duration::from_secs_f64(if wait.is_finite() {
                    wait.clamp(0.1, 600.0)
                } else {
                    DEFAULT_UPSTREAM_WAIT_SECS
                }),
            )
        }
        Command::Select {
            task,
            top,
            json,
            catalog,
        } => {
            let runtime = runtime(false)?;
            let engine = offline_engine(&before.catalog_flags(&catalog), &runtime)?;
            let args = select_mode::SelectArgs {
                task_description: Some(task),
                mode: None,
                top_k: Some(top),
            };
            let outcome = select_mode::run(&engine, &args);
            runtime.block_on(engine.services().gateway.shutdown());
            if json {
                println!("{}", outcome.body);
            } else {
                print!("{}", render_selection(&outcome.body));
            }
            Ok(exit_for(outcome.is_error))
        }
        Command::Eval(args) => eval(&before.catalog(Some(&args.modes), None, None), &args),
        Command::Exec {
            mode,
            request,
            continuation_id,
            catalog,
            access,
        } => {
            let catalog = before.catalog_flags(&catalog);
            let access = before.access(&access);
            let request: Value = serde_json::from_str(&request).context(
                "--request must be a JSON object, e.g. --request '{\"prompt\":\"...\"}'",
            )?;
            let runtime = runtime(false)?;
            let engine = serving_engine(&catalog, &access, &runtime, true)?;
            // `exec` answers as the default strategy would (version reports it).
            surface::build(StrategyKind::Zen, &engine, &SurfaceOptions::default())
                .map_err(anyhow::Error::msg)?;
            let outcome = runtime
                .block_on(engine.execute(
                    &mode,
                    request,
                    continuation_id.as_deref(),
                    &CallContext::default(),
                ))
                .unwrap_or_else(zen::unknown_mode);
            runtime.block_on(engine.services().gateway.shutdown());
            println!("{}", serde_json::to_string_pretty(&outcome.body)?);
            Ok(exit_for(outcome.is_error))
        }
    }
}

/// What `zenmode tokens` counts.
enum TokensOf {
    /// Every strategy's tool list for the catalog (the tables).
    Catalog,
    /// Standard input, as one text.
    Stdin,
    /// Each line of standard input, a JSON string, on its own.
    Lines,
}

#[cfg(feature = "tokens")]
fn print_tokens(catalog: &CatalogArgs, json: bool, source: TokensOf) -> anyhow::Result<ExitCode> {
    use crate::cli::tokens;
    let tokenizers = tokens::Tokenizers::load()?;
    let counts = |text: &str| serde_json::json!({"o200k": tokenizers.o200k(text), "cl100k": tokenizers.cl100k(text), "bytes": text.len()});
    match source {
        TokensOf::Catalog => {}
        TokensOf::Stdin => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("standard input is not UTF-8 text")?;
            println!("{}", counts(&text));
            return Ok(ExitCode::SUCCESS);
        }
        TokensOf::Lines => {
            // Loading the two tokenizers costs a tenth of a second; a
            // benchmark that counts hundreds of texts pays it once here.
            use std::io::{BufRead, Write};
            let mut out = std::io::stdout().lock();
            for (number, line) in std::io::stdin().lock().lines().enumerate() {
                let line = line.context("standard input is not UTF-8 text")?;
                let text: String = serde_json::from_str(&line).with_context(|| {
                    format!("line {} of standard input is not a JSON string", number + 1)
                })?;
                writeln!(out, "{}", counts(&text))?;
                out.flush()?;
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    let runtime = runtime(false)?;
    let (catalog, gateway) = catalog.open(&runtime)?;
    runtime.block_on(gateway.shutdown());
    let servers = tokens::per_server(&catalog, &tokenizers);
    let report = tokens::measure(catalog, &tokenizers)?;
    if json {
        let mut value = tokens::to_json(&report);
        if !servers.is_empty() {
            value["upstreams"] = servers
                .iter()
                .map(|(server, tools, o200k)| serde_json::json!({"server": server, "tools": tools, "o200k": o200k}))
                .collect();
        }
        println!("{value}");
    } else {
        print!("{}", tokens::to_table(&report));
        if !servers.is_empty() {
            println!("\nyour upstream servers, each listed directly (o200k):");
            let mut total = 0;
            for (server, tools, o200k) in &servers {
                total += o200k;
                println!("  {server:<20} {tools:>4} tools {o200k:>8}");
            }
            println!(
                "  {:<20} {:>4}       {total:>8}  (zenmode's optimized list above stays the same)",
                "all upstreams", ""
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A server-only build has no tokenizers to count with.
#[cfg(not(feature = "tokens"))]
fn print_tokens(_: &CatalogArgs, _: bool, _: TokensOf) -> anyhow::Result<ExitCode> {
    bail!(
        "this build of zenmode has no tokenizers; `zenmode tokens` needs the default \"tokens\" feature (cargo install --locked --path . without --no-default-features)"
    )
}

fn exit_for(is_error: bool) -> ExitCode {
    if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn offline_engine(
    catalog: &CatalogArgs,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Engine> {
    let (catalog, gateway) = catalog.open(runtime)?;
    let services = Services {
        gateway,
        ..Services::offline()
    };
    Engine::with_services(catalog, services).map_err(anyhow::Error::msg)
}

/// An engine with the real services: providers, allowed roots and memory
/// from the flags and environment.
fn serving_engine(
    catalog: &CatalogArgs,
    access: &AccessArgs,
    runtime: &tokio::runtime::Runtime,
    settle: bool,
) -> anyhow::Result<Engine> {
    let mut services =
        Services::from_env(&access.allow_roots).context("cannot set up file access")?;
    for problem in services.providers.problems() {
        tracing::warn!("provider configuration: {problem}");
    }
    let store = StoreUrl::parse(access.store.as_deref()).map_err(anyhow::Error::msg)?;
    let limits = MemoryConfig::from_env(&|name: &str| std::env::var(name).ok());
    services.memory = runtime
        .block_on(open_store(&store, limits))
        .map_err(anyhow::Error::msg)
        .context("cannot open the conversation store (--store or ZEN_STORE)")?;
    tracing::debug!(store = %store.display(), "conversation store");
    let (catalog, gateway) = catalog.open_with(runtime, settle)?;
    services.gateway = gateway;
    Engine::with_services(catalog, services).map_err(anyhow::Error::msg)
}

/// A stdio session (and a one-shot `exec`) needs one thread, and a
/// single-threaded runtime starts faster: start-up happens on every client
/// launch. The TCP listener serves many sessions, so it gets every core.
fn runtime(multi_threaded: bool) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = if multi_threaded {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(catalog: &CatalogArgs, access: &AccessArgs, args: ServeArgs) -> anyhow::Result<ExitCode> {
    if args.max_message_bytes < 1024 {
        bail!("--max-message-bytes must be at least 1024");
    }
    let strategy_kind = args.strategy()?;
    if args.transport == TransportKind::Stdio {
        terminal_hint();
    }
    let runtime = runtime(args.transport != TransportKind::Stdio)?;
    // Strategies with a fixed list answer at once and take upstream modes
    // as they arrive; `lazy` and `groups` build their lists from the catalog
    // at start-up, so they wait for uncached upstreams (bounded).
    let settle = matches!(strategy_kind, StrategyKind::Lazy | StrategyKind::Groups);
    let engine = Arc::new(serving_engine(catalog, access, &runtime, settle)?.build_model_later());
    let gateway = engine.services().gateway.clone();
    let watched = catalog
        .upstreams
        .clone()
        .unwrap_or_else(crate::cli::upstream::default_upstreams_file);
    gateway.record_loads(&watched);
    let strategy = surface::build(strategy_kind, &engine, &args.surface_options())
        .map_err(anyhow::Error::msg)?;
    let server = ZenServer::new(engine.clone(), strategy)
        .context("cannot build the tool list")?
        .with_log_arguments(args.log_arguments);
    let result = runtime.block_on(async {
        let shutdown = shutdown::on_signal();
        tokio::spawn(engine.follow_gateway());
        // The SIGHUP handler is in place before the first reply.
        #[cfg(unix)]
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        #[cfg(not(unix))]
        let hangup: Option<Hangup> = None;
        tokio::spawn(watch_upstreams(gateway.clone(), watched, hangup));
        match args.transport {
            TransportKind::Stdio => {
                listener::serve_stdio(server, args.max_message_bytes, shutdown).await;
                Ok(ExitCode::SUCCESS)
            }
            TransportKind::Tcp => {
                listener::check_listen_address(args.listen, args.allow_remote)
                    .map_err(anyhow::Error::msg)?;
                let limits = listener::TcpLimits {
                    idle_timeout: std::time::Duration::from_secs(args.idle_timeout_secs),
                    max_connections: args.max_connections.max(1),
                    ..Default::default()
                };
                let tcp = listener::bind(args.listen, limits.backlog)
                    .await
                    .with_context(|| format!("cannot listen on {}", args.listen))?;
                listener::serve_tcp_with(server, tcp, args.max_message_bytes, limits, shutdown)
                    .await?;
                Ok(ExitCode::SUCCESS)
            }
            TransportKind::Http => {
                let options = args.http_options()?;
                http::check_http_address(
                    args.listen,
                    args.allow_remote,
                    options.auth_token.is_some(),
                )
                .map_err(anyhow::Error::msg)?;
                let tcp = listener::bind(args.listen, listener::TcpLimits::DEFAULT_BACKLOG)
                    .await
                    .with_context(|| format!("cannot listen on {}", args.listen))?;
                http::serve_http(server, tcp, options, shutdown).await?;
                Ok(ExitCode::SUCCESS)
            }
        }
    });
    // Upstream servers (and their process groups) end with zenmode.
    runtime.block_on(gateway.shutdown());
    // Reading stdin happens on a blocking thread that only returns when a
    // line arrives; waiting for it would keep a signalled server alive for
    // as long as the client keeps stdin open. Sessions have ended by now.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    result
}

/// A person who types `zenmode serve` sees a server that waits in silence
/// for JSON-RPC; one line on stderr says why and what to run instead. A
/// client starts zenmode with stdin on a pipe and never sees it.
fn terminal_hint() {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        crate::server::logging::print(
            "zenmode: waiting for an MCP client on stdin (Ctrl-C ends it). To try zenmode, run `zenmode select \"review my PR for security problems\"`; to connect a client, `zenmode setup claude-code` (or claude-desktop, cursor, vscode).",
        );
    }
}

#[cfg(unix)]
type Hangup = tokio::signal::unix::Signal;
#[cfg(not(unix))]
type Hangup = ();

/// Rereads the upstreams file when it changes (checked once a second: a
/// `stat`, and a read and hash only when size or time moved) and on SIGHUP.
async fn watch_upstreams(
    gateway: Arc<Gateway>,
    file: std::path::PathBuf,
    #[cfg_attr(not(unix), allow(unused_mut, unused_variables))] mut hangup: Option<Hangup>,
) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        #[cfg(unix)]
        let hung_up = async {
            match hangup.as_mut() {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hung_up = std::future::pending::<Option<()>>();
        tokio::select! {
            _ = tick.tick() => gateway.reload_if_changed(&file),
            _ = hung_up => {
                tracing::info!("SIGHUP: reloading {}", file.display());
                gateway.reload(&file);
            }
        }
    }
}

/// How long shutdown waits for blocking work (a pending stdin read, a file
/// read) after every session has ended.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

fn modes(catalog: &CatalogArgs, command: ModesCommand) -> anyhow::Result<ExitCode> {
    let runtime = runtime(false)?;
    let (catalog, gateway) = catalog.open(&runtime)?;
    runtime.block_on(gateway.shutdown());
    match command {
        ModesCommand::List => {
            for mode in catalog.modes() {
                let manifest = mode.manifest();
                let status = match manifest.executor.as_deref() {
                    Some(key) if executor::is_registered(key) => "ready",
                    Some(_) => "no-executor",
                    None => "imported",
                };
                println!(
                    "{:<16} {:<13} {:<12} {}",
                    manifest.name, manifest.category, status, manifest.summary
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Show { name } => {
            let Some(mode) = catalog.get(&name) else {
                let closest = catalog.closest_names(&name, 3);
                bail!(
                    "no mode named {name:?}{}; `zenmode modes list` shows them all",
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                );
            };
            let manifest = mode.manifest();
            println!("{} — {}", manifest.name, manifest.title);
            println!("{}\n", manifest.summary);
            println!(
                "category: {}   executor: {}   source: {}\n",
                manifest.category,
                manifest.executor.as_deref().unwrap_or("none"),
                mode.origin
            );
            println!("{}\n", manifest.description);
            println!("required: {}", manifest.required().join(", "));
            println!("fields:");
            let fields = describe::field_summary(manifest, FieldSet::All);
            for (field, summary) in fields.required.iter().chain(&fields.optional) {
                println!("  {field:<28} {}", summary.as_str().unwrap_or_default());
            }
            println!(
                "\nexample request:\n{}",
                serde_json::to_string_pretty(&describe::example_request(manifest))?
            );
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Table => {
            print!("{}", markdown::modes_table(&catalog));
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Docs => {
            print!("{}", markdown::modes_reference(&catalog));
            Ok(ExitCode::SUCCESS)
        }
        ModesCommand::Check => {
            let reports = check::check_catalog(&catalog);
            let mut failed = 0;
            for report in &reports {
                let status = if report.errors.is_empty() {
                    "ok"
                } else {
                    "FAIL"
                };
                let notes = if report.notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", report.notes.join("; "))
                };
                println!("{status:<5} {}{notes}", report.name);
                for error in &report.errors {
                    println!("      - {error}");
                }
                failed += usize::from(!report.errors.is_empty());
            }
            println!(
                "{} modes checked, {} passed, {} failed",
                reports.len(),
                reports.len() - failed,
                failed
            );
            Ok(exit_for(failed > 0))
        }
    }
}

fn share_in_unit_range(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a share in 0..1 (e.g. 0.25)")),
    }
}

/// Loads the catalog (honouring --no-builtin-modes), ranks every label and
/// prints the scores.
fn eval(catalog: &CatalogArgs, args: &EvalArgs) -> anyhow::Result<ExitCode> {
    let mut labels = Vec::new();
    for path in &args.labels {
        let file = crate::select::eval::read_labels(path)?;
        labels.push((path.display().to_string(), file));
    }
    let catalog = catalog.load()?;
    if catalog.is_empty() {
        bail!("no modes to rank: --no-builtin-modes needs --catalog FILE or --modes-dir DIR");
    }
    for (path, file) in &labels {
        crate::select::eval::check_labels(file, &catalog, path).map_err(anyhow::Error::msg)?;
    }
    let labels: Vec<crate::select::eval::Label> =
        labels.into_iter().flat_map(|(_, file)| file).collect();
    let (catalog, labels) = match args.hold_out {
        Some(share) => crate::select::eval::hold_out(&catalog, &labels, share),
        None => (catalog, labels),
    };
    let report = if args.ranker == crate::select::Ranker::Full {
        // The fused ranker is what serves: score the select reply itself, so
        // its `next_call` (traps taken) and its latency are the server's.
        let engine = Engine::new(catalog).map_err(anyhow::Error::msg)?;
        let snapshot = engine.index();
        let next_call = |task: &str| {
            let args = select_mode::SelectArgs {
                task_description: Some(task.to_owned()),
                ..Default::default()
            };
            let outcome = select_mode::run(&engine, &args);
            outcome
                .body
                .pointer("/next_call/arguments/mode")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        crate::select::eval::evaluate_with(
            snapshot.index(),
            snapshot.catalog(),
            &labels,
            Some(&next_call),
        )
    } else {
        let index = crate::select::Index::build_with(&catalog, args.ranker);
        crate::select::eval::evaluate(&index, &catalog, &labels)
    };
    if args.json {
        println!("{}", crate::select::eval::to_json(&report));
    } else {
        print!("{}", crate::select::eval::to_table(&report, args.misses));
    }
    let below_floor = args
        .min_top1
        .is_some_and(|floor| report.overall.top1 < floor);
    if below_floor {
        let _ = writeln!(
            std::io::stderr(),
            "zenmode: top-1 {:.3} is below --min-top1 {}",
            report.overall.top1,
            args.min_top1.unwrap_or_default()
        );
    }
    Ok(exit_for(below_floor))
}

/// A select reply for people: the pick, why, its fields and the call to make.
fn render_selection(reply: &Value) -> String {
    if reply.get("error").is_some() {
        return format!("{}\n", reply["message"].as_str().unwrap_or("error"));
    }
    let mut out = format!(
        "{}  (confidence {}{})\n  {}\n  {}\n",
        reply["mode"].as_str().unwrap_or_default(),
        reply["confidence"],
        if reply.get("low_confidence").is_some() {
            ", low"
        } else {
            ""
        },
        reply["summary"].as_str().unwrap_or_default(),
        reply["reason"].as_str().unwrap_or_default(),
    );
    for group in ["required", "optional"] {
        if let Some(fields) = reply[group].as_object() {
            out.push_str(&format!("  {group}:\n"));
            for (name, summary) in fields {
                let summary = summary.as_str().unwrap_or_default();
                out.push_str(&format!("    {name:<24} {summary}\n"));
            }
        }
    }
    out.push_str(&format!("  next: {}\n", reply["next_call"]));
    for alternative in reply["alternatives"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "alt: {}  (confidence {})  {}\n",
            alternative["mode"].as_str().unwrap_or_default(),
            alternative["confidence"],
            alternative["summary"].as_str().unwrap_or_default()
        ));
    }
    out
}
