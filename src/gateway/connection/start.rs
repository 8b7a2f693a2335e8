//! Starting an upstream: a stdio server spawned in its own process group
//! under zenmode's guard ([`crate::gateway::supervisor`]), with a basic
//! environment and its replies held to their size limit, or a Streamable
//! HTTP session (signed in with OAuth where the server asks for it); then
//! the MCP handshake and the tool list, which also refreshes the cached
//! catalog and capabilities.

use std::{
    collections::HashMap,
    process::Stdio,
    sync::{Mutex, atomic::AtomicUsize},
    time::Instant,
};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, transport::async_rw::AsyncRwTransport,
};
use serde_json::Value;

use super::{
    client::ClientSide,
    running::{Connection, Spawned},
    stdin_queue,
    upstream::Upstream,
};
use crate::gateway::{
    capabilities::remember_capabilities,
    catalog_cache,
    config::{Transport, UpstreamConfig},
    pins, reply_guard,
    tls::install_tls_provider,
};

/// Environment variables a stdio upstream gets from zenmode's own
/// environment (besides its entry's `env`), unless `inherit_env` is set:
/// enough to find programs and a home, never zenmode's provider keys.
const BASIC_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TMPDIR",
    "TZ",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "npm_config_cache",
    "npm_config_prefix",
    "VIRTUAL_ENV",
    "SYSTEMROOT",
    "APPDATA",
];

/// How to open the session: `initialize`, or `server/discover` at
/// 2026-07-28 for an entry that asks for it.
fn lifecycle(config: &UpstreamConfig) -> ClientLifecycleMode {
    if config.modern {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        }
    } else {
        ClientLifecycleMode::Initialize
    }
}

/// The command that runs `command` under zenmode's guard (see
/// [`crate::gateway::supervisor`]); the command itself where there is no guard.
fn guarded_command(command: &str, args: &[String]) -> tokio::process::Command {
    #[cfg(unix)]
    if let Ok(own) = crate::gateway::supervisor::own_binary() {
        let mut guarded = tokio::process::Command::new(own);
        guarded
            .arg(crate::gateway::supervisor::SUBCOMMAND)
            .arg(std::process::id().to_string())
            .arg("--")
            .arg(command)
            .args(args);
        return guarded;
    }
    let mut direct = tokio::process::Command::new(command);
    direct.args(args);
    direct
}

impl Upstream {
    /// Spawns (or connects), initializes, and reads the tool list.
    pub(super) async fn start(&self) -> Result<Connection, String> {
        let handler = ClientSide {
            server: self.name().to_owned(),
            routes: self.routes.clone(),
            callers: self.callers.clone(),
            events: self.events.clone(),
            redactor: self.redactor.clone(),
        };
        let (service, spawned) = match self.launch.as_ref().map_err(Clone::clone)? {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
                inherit_env,
            } => {
                let mut command_line = guarded_command(command, args);
                command_line.kill_on_drop(true);
                if !inherit_env {
                    command_line.env_clear();
                    for name in BASIC_ENV {
                        if let Some(value) = std::env::var_os(name) {
                            command_line.env(name, value);
                        }
                    }
                }
                command_line.envs(env);
                if let Some(cwd) = cwd {
                    command_line.current_dir(cwd);
                }
                // Its own process group (pgid = the guard's pid), set by the
                // spawn itself rather than a pre-exec hook, so the fast spawn
                // path stays.
                #[cfg(unix)]
                command_line.process_group(0);
                command_line
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut spawned = Spawned::new(command_line.spawn().map_err(|e| {
                    format!(
                        "server {:?} could not be started ({}): {e}",
                        self.name(),
                        self.config.describe()
                    )
                })?);
                let Some(child) = spawned.child() else {
                    return Err(format!("server {:?}: no process", self.name()));
                };
                if let Some(stderr) = child.stderr.take() {
                    self.drain_stderr(stderr);
                }
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(format!("server {:?}: no pipes to talk to it", self.name()));
                };
                // Its replies reach rmcp through the size guard, so a reply
                // over the limit fails its call at once.
                let limit = self.config.max_reply_bytes;
                let (guarded, from_guard) = tokio::io::duplex(64 * 1024);
                tokio::spawn(reply_guard::guard_replies(
                    stdout,
                    guarded,
                    limit,
                    self.name().to_owned(),
                    self.oversize_note.clone(),
                ));
                // Its stdin is written through a queue: writing to it never
                // waits on the server, so its stdout is always read.
                let stdin = stdin_queue::queued_stdin(stdin, self.name().to_owned());
                let transport = AsyncRwTransport::<RoleClient, _, _>::new(from_guard, stdin)
                    .with_max_line_length(limit);
                let service = handler
                    .serve_with_lifecycle(transport, lifecycle(&self.config))
                    .await
                    .map_err(|e| {
                        format!(
                            "server {:?} did not complete the MCP handshake: {}{}",
                            self.name(),
                            self.secrets().redact(&e.to_string()),
                            self.stderr_note()
                        )
                    })?;
                (service, Some(spawned))
            }
            Transport::Http { url, headers } => {
                install_tls_provider();
                let mut header_map = HashMap::new();
                for (key, value) in headers {
                    if let (Ok(name), Ok(value)) = (
                        http::HeaderName::from_bytes(key.as_bytes()),
                        http::HeaderValue::from_str(value),
                    ) {
                        header_map.insert(name, value);
                    }
                }
                let mut config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(header_map);
                config.max_sse_event_size = self.config.max_reply_bytes;
                // OAuth unless the entry sends its own Authorization header.
                let keeper = (!headers
                    .keys()
                    .any(|k| k.eq_ignore_ascii_case("authorization")))
                .then(|| {
                    crate::gateway::oauth::keeper::for_upstream(
                        self.name(),
                        url,
                        self.config.oauth.as_ref(),
                    )
                });
                let served = match &keeper {
                    Some(keeper) => {
                        let client = crate::gateway::oauth::keeper::OAuthHttp::new(
                            reqwest::Client::default(),
                            keeper.clone(),
                        );
                        let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                            client, config,
                        );
                        handler
                            .serve_with_lifecycle(transport, lifecycle(&self.config))
                            .await
                    }
                    None => {
                        let transport =
                            rmcp::transport::StreamableHttpClientTransport::from_config(config);
                        handler
                            .serve_with_lifecycle(transport, lifecycle(&self.config))
                            .await
                    }
                };
                let service = served.map_err(|e| {
                    if keeper.as_ref().is_some_and(|k| k.needs_sign_in()) {
                        return crate::gateway::oauth::needs_sign_in_message(self.name());
                    }
                    if keeper.as_ref().is_some_and(|k| k.needs_credential()) {
                        // The URL as the entry gives it, placeholders unfilled.
                        let shown = match &self.config.transport {
                            Transport::Http { url, .. } => url.as_str(),
                            Transport::Stdio { .. } => url.as_str(),
                        };
                        return self.secrets().redact(
                            &crate::gateway::oauth::needs_credential_message(self.name(), shown),
                        );
                    }
                    format!(
                        "server {:?} ({}): {}",
                        self.name(),
                        self.config.describe(),
                        self.secrets()
                            .redact(&crate::gateway::http_errors::explain_handshake(&e))
                    )
                })?;
                (service, None)
            }
        };
        // zenmode behind zenmode would offer its own two tools as modes and
        // nest every call; an entry can hide it (an HTTP URL, a renamed
        // copy), its handshake cannot.
        if let Some(why) = service.peer().peer_info().and_then(|info| {
            let server = info.server_info.as_ref()?;
            crate::gateway::config::answers_as_zenmode(&server.name)
        }) {
            let _ = service.cancel().await;
            return Err(crate::gateway::config::self_skip_message(self.name(), &why));
        }
        let tools = match service.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                return Err(format!(
                    "server {:?} started but its tools/list failed: {}{}",
                    self.name(),
                    self.service_error(e).message,
                    self.stderr_note()
                ));
            }
        };
        let held = crate::gateway::oauth::token_file::held();
        let tools: Vec<Value> = tools
            .into_iter()
            .filter_map(|tool| serde_json::to_value(tool).ok())
            .map(|mut tool| {
                // A definition quoting the request's token reaches neither
                // the cache nor the model.
                held.redact_json(&mut tool);
                tool
            })
            .collect();
        self.refresh_cache(&tools);
        let capabilities = service
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or_default();
        remember_capabilities(&self.dirs, &self.config, &capabilities);
        let live = tools
            .iter()
            .filter_map(|tool| Some((pins::tool_name(tool)?.to_owned(), tool.clone())))
            .collect();
        tracing::info!(
            server = self.name(),
            tools = tools.len(),
            "upstream started"
        );
        let (group, child) = spawned.map(Spawned::defuse).unwrap_or_default();
        Ok(Connection {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            live,
            capabilities,
            group,
            _child: child,
            started: Instant::now(),
            last_used: Mutex::new(Instant::now()),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// Keeps the cached catalog equal to what the server lists now, so the
    /// next process sees a changed server as changed.
    fn refresh_cache(&self, tools: &[Value]) {
        let cached = catalog_cache::load_catalog(&self.dirs, &self.config);
        if cached.as_deref() != Some(tools)
            && let Err(error) = catalog_cache::save_catalog(&self.dirs, &self.config, tools)
        {
            tracing::warn!(server = self.name(), %error, "could not cache the upstream catalog");
        }
    }
}
