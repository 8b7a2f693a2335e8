//! `zenmode serve`: the server over stdio, TCP or Streamable HTTP, with the
//! upstreams file watched for changes.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

use crate::platform::settings;
use crate::{
    cli::args::{AccessArgs, CatalogArgs, CatalogFlags},
    cli::runtime::{runtime, serving_engine},
    conversation::HandleSettings,
    gateway::Gateway,
    server::ZenServer,
    server::http,
    server::listener,
    server::shutdown,
    server::transport::DEFAULT_MAX_MESSAGE_BYTES,
    surface::{self, StrategyKind, SurfaceOptions, ToolLoading},
};

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
    #[arg(long, value_enum, env = settings::STRATEGY)]
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
        env = settings::TOOL_PREFIX,
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
        env = settings::PINNED_MODES,
        value_delimiter = ','
    )]
    pub pin: Vec<String>,
    /// How clients reach this server
    #[arg(long, value_enum, default_value = "stdio")]
    pub transport: TransportKind,
    /// Run as the user's shared instance, which `zenmode connect` starts: Streamable HTTP on a free loopback port, its address and token in the state directory, each profile at /p/NAME/mcp, the dashboard at /dashboard
    #[arg(long, conflicts_with_all = ["transport", "listen", "auth_token_file", "allow_remote"])]
    pub shared: bool,
    /// --shared: stop after this many seconds with no client connected
    #[arg(long, env = settings::SHARED_IDLE_STOP_SECS, default_value_t = crate::cli::shared::DEFAULT_IDLE_STOP_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_stop_secs: u64,
    /// Address for --transport tcp or http (port 0 picks a free port)
    #[arg(long, default_value = "127.0.0.1:7400")]
    pub listen: SocketAddr,
    /// Allow --listen on a non-loopback address (http also needs a token)
    #[arg(long)]
    pub allow_remote: bool,
    /// Put each call's arguments in its activity log line (by default the line has the tool, mode, server, duration, outcome and size only)
    #[arg(long)]
    pub log_arguments: bool,
    /// Whether a `script` may call tools that change things (deny: read-only tools only; call the others directly)
    #[arg(long, value_enum, env = settings::SCRIPT_WRITES, default_value = "deny", ignore_case = true)]
    pub script_writes: ScriptWritesArg,
    /// The longest a `script` may run, in milliseconds (a request's timeout_ms above it is cut to it)
    #[arg(long, env = settings::SCRIPT_MAX_MS, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..=30_000))]
    pub script_max_ms: u64,
    /// zen: when a select is followed by a successful call of an upstream tool, keep the task as that tool's example on this machine (`zenmode examples` lists and forgets them)
    #[arg(long, value_enum, env = settings::LEARN_EXAMPLES, default_value = "on", ignore_case = true)]
    pub learn_examples: OnOff,
    /// Keep a result larger than --result-handle-bytes as a handle (a preview and a resource link in the reply) instead of returning it whole
    #[arg(long, value_enum, env = settings::RESULT_HANDLES, default_value = "on", ignore_case = true)]
    pub result_handles: OnOff,
    /// The size (bytes of the result's JSON) above which a result becomes a handle
    #[arg(long, env = settings::RESULT_HANDLE_BYTES, default_value_t = HandleSettings::DEFAULT_THRESHOLD_BYTES as u64, value_parser = clap::value_parser!(u64).range(1024..))]
    pub result_handle_bytes: u64,
    /// How long a result handle can be read, in seconds (it also ends when the conversation store drops it)
    #[arg(long, env = settings::RESULT_HANDLE_TTL_SECS, default_value_t = HandleSettings::DEFAULT_TTL_SECS, value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 3600))]
    pub result_handle_ttl_secs: u64,
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
    #[arg(long, env = settings::MAX_SESSIONS, default_value_t = http::HttpOptions::DEFAULT_MAX_SESSIONS, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// http: most connections from one IP address at once; one more is refused with 503
    #[arg(long, env = settings::MAX_CONNECTIONS_PER_IP, default_value_t = http::HttpOptions::DEFAULT_MAX_CONNECTIONS_PER_IP, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_ip: u64,
    /// http: seconds a client has to send a request's headers (also how long a kept-alive connection may wait for its next request)
    #[arg(long, env = settings::HEADER_TIMEOUT_SECS, default_value_t = http::HttpOptions::DEFAULT_HEADER_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,
    /// http: seconds a client has to send a whole request body; a slower one gets 408
    #[arg(long, env = settings::BODY_TIMEOUT_SECS, default_value_t = http::HttpOptions::DEFAULT_BODY_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
}

impl ServeArgs {
    /// The HTTP listener's options; the token comes from --auth-token-file,
    /// else from `ZEN_AUTH_TOKEN`.
    fn http_options(&self) -> anyhow::Result<http::HttpOptions> {
        let auth_token = match &self.auth_token_file {
            Some(path) => Some(http::read_token_file(path).map_err(anyhow::Error::msg)?),
            None => std::env::var(settings::AUTH_TOKEN)
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

    fn handle_settings(&self) -> HandleSettings {
        HandleSettings {
            enabled: self.result_handles == OnOff::On,
            threshold_bytes: usize::try_from(self.result_handle_bytes).unwrap_or(usize::MAX),
            ttl: std::time::Duration::from_secs(self.result_handle_ttl_secs),
            ..HandleSettings::default()
        }
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
        let optimization_disabled = match env(settings::TOKEN_OPTIMIZATION).as_deref() {
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
            learn_examples: self.learn_examples == OnOff::On,
        }
    }
}

pub fn serve(
    catalog: &CatalogArgs,
    access: &AccessArgs,
    args: ServeArgs,
) -> anyhow::Result<ExitCode> {
    if args.max_message_bytes < 1024 {
        bail!("--max-message-bytes must be at least 1024");
    }
    let strategy_kind = args.strategy()?;
    // The instance lock first: a second shared instance stops here,
    // before it starts any upstream server.
    let claim = if args.shared {
        Some(crate::cli::shared::claim_instance()?)
    } else {
        None
    };
    let transport = if args.shared {
        TransportKind::Http
    } else {
        args.transport
    };
    if transport == TransportKind::Stdio {
        terminal_hint();
    }
    let runtime = runtime(transport != TransportKind::Stdio)?;
    // Strategies with a fixed list answer at once and take upstream modes
    // as they arrive; `lazy` and `groups` build their lists from the catalog
    // at start-up, so they wait for uncached upstreams (bounded).
    let settle = matches!(strategy_kind, StrategyKind::Lazy | StrategyKind::Groups);
    let engine = Arc::new(
        serving_engine(catalog, access, &runtime, settle, args.handle_settings())?
            .build_model_later(),
    );
    let gateway = engine.services().gateway.clone();
    let watched = catalog
        .upstreams
        .clone()
        .unwrap_or_else(crate::platform::dirs::upstreams_file);
    gateway.record_loads(&watched);
    let strategy = surface::build(strategy_kind, &engine, &args.surface_options())
        .map_err(anyhow::Error::msg)?;
    let feed = crate::server::activity_feed::ActivityFeed::shared();
    let server = ZenServer::new(engine.clone(), strategy)
        .context("cannot build the tool list")?
        .with_log_arguments(args.log_arguments)
        .with_scripts(
            args.script_writes.into(),
            std::time::Duration::from_millis(args.script_max_ms),
        );
    let server = if claim.is_some() {
        server.with_feed(feed.clone(), None)
    } else {
        server
    };
    let result = runtime.block_on(async {
        let shutdown = shutdown::on_signal();
        tokio::spawn(engine.clone().follow_gateway());
        // The SIGHUP handler is in place before the first reply.
        #[cfg(unix)]
        let hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        #[cfg(not(unix))]
        let hangup: Option<Hangup> = None;
        tokio::spawn(watch_upstreams(gateway.clone(), watched.clone(), hangup));
        match transport {
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
                let mut options = args.http_options()?;
                let listen = match &claim {
                    Some(claim) => {
                        options.auth_token = Some(claim.token.clone());
                        SocketAddr::from(([127, 0, 0, 1], 0))
                    }
                    None => args.listen,
                };
                http::check_http_address(listen, args.allow_remote, options.auth_token.is_some())
                    .map_err(anyhow::Error::msg)?;
                let tcp = listener::bind(listen, listener::TcpLimits::DEFAULT_BACKLOG)
                    .await
                    .with_context(|| format!("cannot listen on {listen}"))?;
                let shared = match &claim {
                    None => None,
                    Some(claim) => {
                        let port = tcp.local_addr()?.port();
                        let maker = crate::cli::shared::ProfileServerMaker {
                            engine: engine.clone(),
                            strategy: strategy_kind,
                            surface: args.surface_options(),
                            log_arguments: args.log_arguments,
                            script_writes: args.script_writes.into(),
                            script_max: std::time::Duration::from_millis(args.script_max_ms),
                            feed: feed.clone(),
                        };
                        let serving = crate::cli::shared::serving(
                            maker,
                            watched.clone(),
                            port,
                            &options,
                            std::time::Duration::from_secs(args.idle_stop_secs),
                            shutdown.clone(),
                        );
                        claim
                            .dir
                            .write_record(&crate::cli::shared::record(port, &watched))
                            .context("cannot write the shared instance's record")?;
                        Some(serving)
                    }
                };
                let served = http::serve_http(server, tcp, options, shared, shutdown).await;
                if let Some(claim) = &claim {
                    claim.dir.remove_record_of(std::process::id());
                }
                served?;
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
pub fn terminal_hint() {
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
pub async fn watch_upstreams(
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
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(250);

/// A switch flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// `--script-writes`: tools that change things, from a script.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ScriptWritesArg {
    Deny,
    Allow,
}

impl From<ScriptWritesArg> for surface::zen::ScriptWrites {
    fn from(arg: ScriptWritesArg) -> Self {
        match arg {
            ScriptWritesArg::Deny => surface::zen::ScriptWrites::Deny,
            ScriptWritesArg::Allow => surface::zen::ScriptWrites::Allow,
        }
    }
}
