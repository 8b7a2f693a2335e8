//! One upstream server: started on first use, stopped when idle, restarted
//! with backoff after a crash, and every call bounded by a timeout.
//!
//! A stdio upstream runs in its own process group under a guard
//! ([`super::supervisor`]), so stopping it also stops what it started (`npx`
//! runs node under it), and the whole group dies with zenmode, SIGKILL
//! included. `${VAR}` placeholders in its entry are filled here, once, from
//! zenmode's environment; the filled values are secrets like the others. Its
//! stderr goes to zenmode's log, prefixed with the server name and with the
//! entry's secrets hidden, and (for a serving zenmode) to its own log file;
//! the last lines are kept to explain a crash. A serving zenmode also
//! records each transition and the last call in the server's state file
//! ([`super::status_file`]).

use std::{
    collections::{HashMap, VecDeque},
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient,
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientConfig,
        ClientRequest, DEFAULT_MRTR_MAX_ROUNDS, ElicitRequestParams, ElicitResult, Implementation,
        InputRequiredResult, ProgressNotificationParam, ProgressToken, ServerResult,
    },
    service::{
        NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService, ServiceError,
    },
};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{
    GatewayError, catalog_cache,
    config::{Redactor, Transport, UpstreamConfig},
    dirs::GatewayDirs,
    flowback::{self, Callers, RootsResult, SamplingParams, SamplingResult},
    pins::{self, Pins, Verdict},
    reply_guard, request_state,
    status_file::{StateFile, StderrLog},
};
use crate::call::{CallContext, ProgressSink};

/// Lines of an upstream's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 12;
/// Characters of one stderr line that reach the log.
const STDERR_LINE_CHARS: usize = 400;
/// Bytes of one stderr line held while reading it: a line without an end
/// keeps only its last bytes, so a flood costs this much at most.
const STDERR_LINE_KEPT_BYTES: usize = 16 * 1024;
/// The longest wait before restarting a server that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest error message relayed to the caller, in characters.
const MAX_ERROR_CHARS: usize = 2_000;
/// How long a start (spawn, initialize, list tools) may take at most.
const MAX_START: Duration = Duration::from_secs(60);
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

/// Routes an upstream's progress notifications to the call that asked.
type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, Arc<dyn ProgressSink>>>>;

/// zenmode as a client of one upstream.
struct ClientSide {
    server: String,
    routes: ProgressRoutes,
    /// The calls in flight, whose clients answer what the server asks.
    callers: Callers,
    /// Where resource and prompt notifications go (see [`super::resources`]).
    events: Option<super::resources::EventSender>,
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            flowback::upstream_capabilities(),
            Implementation::new("zenmode-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = self
            .routes
            .lock()
            .ok()
            .and_then(|routes| routes.get(&params.progress_token).cloned());
        if let Some(sink) = sink {
            sink.report_detail(params.progress, params.total, params.message)
                .await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relay(super::resources::UpstreamEvent::ResourceUpdated {
            server: self.server.clone(),
            uri: params.uri,
        });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay(super::resources::UpstreamEvent::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay(super::resources::UpstreamEvent::PromptsChanged);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.callers.elicit(&self.server, request).await
    }

    async fn create_message(
        &self,
        params: SamplingParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<SamplingResult, ErrorData> {
        self.callers.create_message(&self.server, params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<RootsResult, ErrorData> {
        self.callers.list_roots(&self.server).await
    }
}

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

impl ClientSide {
    fn relay(&self, event: super::resources::UpstreamEvent) {
        if let Some(events) = &self.events {
            // No session listening is not an error.
            let _ = events.send(event);
        }
    }
}

/// A started upstream.
struct Connection {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientSide>>>,
    peer: Peer<RoleClient>,
    /// The tool definitions the running server lists, by name.
    live: HashMap<String, Value>,
    /// The capabilities it declared in its `initialize` answer.
    capabilities: Value,
    /// Process group of a stdio server (its leader's pid).
    group: Option<u32>,
    /// A stdio server's process, killed if the connection is dropped.
    _child: Option<tokio::process::Child>,
    started: Instant,
    last_used: Mutex<Instant>,
    in_flight: AtomicUsize,
}

impl Connection {
    fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    fn touch(&self) {
        if let Ok(mut last) = self.last_used.lock() {
            *last = Instant::now();
        }
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .map(|last| last.elapsed())
            .unwrap_or_default()
    }

    /// Closes the session, then makes sure the process group is gone.
    async fn stop(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_millis(500)).await;
        }
        signal_group(self.group, Signal::Terminate);
        tokio::time::sleep(Duration::from_millis(50)).await;
        signal_group(self.group, Signal::Kill);
    }
}

impl Drop for Connection {
    /// Whatever path drops a connection (shutdown, a crash, a panic), its
    /// process group does not outlive it.
    fn drop(&mut self) {
        signal_group(self.group, Signal::Kill);
    }
}

/// The command that runs `command` under zenmode's guard (see
/// [`super::supervisor`]); the command itself where there is no guard.
fn guarded_command(command: &str, args: &[String]) -> tokio::process::Command {
    #[cfg(unix)]
    if let Ok(own) = super::supervisor::own_binary() {
        let mut guarded = tokio::process::Command::new(own);
        guarded
            .arg(super::supervisor::SUBCOMMAND)
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

enum Signal {
    Terminate,
    Kill,
}

fn signal_group(group: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pgid) = group.and_then(|g| libc::pid_t::try_from(g).ok()) {
        let signal = match signal {
            Signal::Terminate => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: killpg has no memory effects; a group that is gone gives ESRCH.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
    #[cfg(not(unix))]
    let _ = (group, signal);
}

enum Slot {
    Stopped,
    Running(Arc<Connection>),
    /// The last start failed or the server crashed; `failures` in a row.
    Failed {
        at: Instant,
        failures: u32,
        message: String,
    },
}

/// One configured upstream and its process, if running.
pub struct Upstream {
    pub config: UpstreamConfig,
    /// How to reach it, placeholders filled; why not, when one is unset.
    launch: Result<Transport, String>,
    redactor: Redactor,
    dirs: GatewayDirs,
    slot: tokio::sync::Mutex<Slot>,
    pins: Mutex<Option<Pins>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    routes: ProgressRoutes,
    callers: Callers,
    /// An oversized reply the guard could not match to a call.
    oversize_note: reply_guard::OversizeNote,
    /// Failures in a row (reset by a successful call).
    failures: Mutex<u32>,
    /// Its state file and stderr log, for a serving zenmode (the one-shot
    /// CLI commands leave the serving processes' view alone).
    recorder: Option<Recorder>,
    /// Where its resource and prompt notifications go, when anyone listens.
    events: Option<super::resources::EventSender>,
    /// Resource subscriptions held: no idle shutdown while any is.
    holds: Arc<AtomicUsize>,
    /// Successful starts so far (a later one is a restart).
    starts: AtomicUsize,
}

/// Where a serving zenmode records a server's state and stderr.
struct Recorder {
    state: Arc<StateFile>,
    log: Arc<std::sync::OnceLock<Option<StderrLog>>>,
}

/// What a start learned, for the caller that wanted the catalog.
pub struct Started {
    pub tools: Vec<Value>,
}

impl Upstream {
    pub fn new(config: UpstreamConfig, dirs: GatewayDirs, pins: Option<Pins>) -> Self {
        let expanded = config.expanded();
        // The filled values are the secrets (a placeholder is not one).
        let redactor = expanded
            .as_ref()
            .map_or_else(|_| config.redactor(), UpstreamConfig::redactor);
        crate::platform::redact::register(&redactor);
        Upstream {
            launch: expanded
                .map(|filled| filled.transport)
                .map_err(|problem| format!("server {:?}: {problem}", config.name)),
            redactor,
            config,
            dirs,
            slot: tokio::sync::Mutex::new(Slot::Stopped),
            pins: Mutex::new(pins),
            stderr_tail: Arc::default(),
            routes: Arc::default(),
            callers: Callers::default(),
            oversize_note: Arc::default(),
            failures: Mutex::new(0),
            recorder: None,
            events: None,
            holds: Arc::default(),
            starts: AtomicUsize::new(0),
        }
    }

    /// Takes (`true`) or gives back one resource subscription's hold on
    /// the running server: a server that sends updates is not idle.
    pub fn hold(&self, take: bool) {
        if take {
            self.holds.fetch_add(1, Ordering::SeqCst);
        } else {
            let _ = self
                .holds
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        }
    }

    /// Relays the server's resource and prompt notifications to `events`.
    pub fn with_events(mut self, events: super::resources::EventSender) -> Self {
        self.events = Some(events);
        self
    }

    /// The capabilities of the running server, without starting it.
    pub fn live_capabilities(&self) -> Option<Value> {
        match &*self.slot.try_lock().ok()? {
            Slot::Running(connection) if !connection.is_closed() => {
                Some(connection.capabilities.clone())
            }
            _ => None,
        }
    }

    /// Starts the server if needed and returns the capabilities it declared.
    pub async fn capabilities(&self) -> Result<Value, GatewayError> {
        Ok(self.connection().await?.capabilities.clone())
    }

    /// Sends one request other than `tools/call` (resources, prompts,
    /// completion) and returns the upstream's result as JSON, secrets hidden.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, GatewayError> {
        let request = super::resources::client_request(method, params)
            .map_err(|e| self.error("invalid_request", format!("{method}: {e}")))?;
        let connection = self.connection().await?;
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        connection.touch();
        let options = PeerRequestOptions::with_timeout(self.config.timeout);
        let answer = match connection
            .peer
            .send_request_with_option(request, options)
            .await
        {
            Ok(handle) => handle.await_response().await,
            Err(error) => Err(error),
        };
        connection.in_flight.fetch_sub(1, Ordering::SeqCst);
        connection.touch();
        let answer = answer.map_err(|e| self.service_error(e));
        if let Err(error) = &answer
            && error.kind == "upstream_crashed"
        {
            self.note_crash(&connection, &error.message).await;
        }
        let mut result = serde_json::to_value(answer?)
            .map_err(|e| self.error("upstream_error", format!("unreadable result: {e}")))?;
        hide_secrets(&mut result, &self.redactor);
        Ok(result)
    }

    /// Keeps the server's state file and stderr log in the state directory.
    pub fn recording_state(mut self) -> Self {
        self.recorder = Some(Recorder {
            state: Arc::new(StateFile::new(self.dirs.clone(), &self.config.name)),
            log: Arc::default(),
        });
        self
    }

    fn record(&self, change: impl FnOnce(&mut super::status_file::ServerState)) {
        if let Some(recorder) = &self.recorder {
            recorder.state.update(change);
        }
    }

    fn record_failure(&self, message: &str) {
        let tail: Vec<String> = self
            .stderr_tail
            .lock()
            .map(|tail| tail.iter().cloned().collect())
            .unwrap_or_default();
        let message = self.redactor.redact(message);
        let needs_sign_in = message == super::oauth::needs_sign_in_message(self.name());
        self.record(|state| {
            state.state = if needs_sign_in {
                super::oauth::NEEDS_SIGN_IN
            } else {
                "failed"
            }
            .into();
            state.pid = None;
            state.last_error = Some(message);
            state.stderr_tail = tail;
        });
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Passes the client's `roots/list_changed` on, if the server runs.
    pub(super) async fn notify_roots_changed(&self) {
        // Waits out a start in progress: the server may have asked for
        // roots before the client that has them connected.
        let peer = match &*self.slot.lock().await {
            Slot::Running(connection) if !connection.is_closed() => connection.peer.clone(),
            _ => return,
        };
        if let Err(error) = peer.notify_roots_list_changed().await {
            tracing::debug!(server = self.name(), %error, "could not pass on roots/list_changed");
        }
    }

    pub fn is_running(&self) -> bool {
        self.slot
            .try_lock()
            .map(|slot| matches!(&*slot, Slot::Running(c) if !c.is_closed()))
            .unwrap_or(true)
    }

    /// Why the last start failed or the server crashed, while that is its
    /// state (`None` while it runs, is stopped, or is being started).
    pub fn last_failure(&self) -> Option<String> {
        match &*self.slot.try_lock().ok()? {
            Slot::Failed { message, .. } => Some(message.clone()),
            _ => None,
        }
    }

    pub fn set_pins(&self, pins: Pins) {
        if let Ok(mut slot) = self.pins.lock() {
            *slot = Some(pins);
        }
    }

    /// Starts the server if needed and returns what it lists now.
    pub async fn tools(&self) -> Result<Vec<Value>, GatewayError> {
        let connection = self.connection().await?;
        Ok(connection.live.values().cloned().collect())
    }

    /// Forwards one `tools/call` and returns the upstream's result as JSON,
    /// unchanged (content blocks, `structuredContent`, `isError`).
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        let started = Instant::now();
        let outcome = self.call_started(tool, arguments, call).await;
        let result = match &outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => "error",
            Ok(_) => "ok",
            Err(error) => error.kind,
        };
        self.record(|state| {
            state.last_call = Some(super::status_file::LastCall {
                tool: tool.to_owned(),
                at_ms: super::status_file::now_ms(),
                duration_ms: started.elapsed().as_millis() as u64,
                outcome: result.to_owned(),
            });
        });
        outcome
    }

    async fn call_started(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        // From here on (a start included: a server asks for roots as it
        // starts), what the server asks goes to this call's client.
        let _caller = self.callers.enter(call.client.as_ref());
        let connection = self.connection().await?;
        self.check_approved(&connection, tool)?;
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        connection.touch();
        let outcome = self.forward(&connection, tool, arguments, call).await;
        connection.in_flight.fetch_sub(1, Ordering::SeqCst);
        connection.touch();
        match &outcome {
            Ok(_) => *self.failures.lock().unwrap_or_else(|p| p.into_inner()) = 0,
            Err(error) if error.kind == "upstream_crashed" => {
                self.note_crash(&connection, &error.message).await;
            }
            Err(_) => {}
        }
        outcome
    }

    /// Refuses a tool whose live definition is not the approved one.
    fn check_approved(&self, connection: &Connection, tool: &str) -> Result<(), GatewayError> {
        let Some(definition) = connection.live.get(tool) else {
            return Err(self.error(
                "upstream_tool_missing",
                format!("server {:?} no longer lists the tool {tool:?}; run `zenmode upstream refresh {}`", self.name(), self.name()),
            ));
        };
        let pins = self.pins.lock().unwrap_or_else(|p| p.into_inner());
        let verdict = pins
            .as_ref()
            .map_or(Verdict::New, |pins| pins.verdict(definition));
        if verdict == Verdict::Approved {
            return Ok(());
        }
        Err(self.error(
            "quarantined",
            pins::quarantine_message(self.name(), tool, verdict.reason()),
        ))
    }

    /// Sends the call; a 2026-07-28 server's input-required result goes to
    /// a 2026-07-28 client with the state sealed ([`request_state`]), or,
    /// for a session opened with `initialize`, is answered by asking its
    /// client ([`flowback`]) and sent again, round by round.
    async fn forward(
        &self,
        connection: &Connection,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        let mut params =
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        if let Some(resume) = &call.resume {
            params.input_responses = resume.input_responses.clone();
            if let Some(sealed) = &resume.request_state {
                params.request_state = self.unseal(tool, sealed)?;
            }
        }
        let mut rounds = 0;
        loop {
            let result = match self.send_call(connection, params, call).await? {
                ServerResult::CallToolResult(result) => serde_json::to_value(result),
                ServerResult::InputRequiredResult(asked) if call.takes_input_required => {
                    let sealed = request_state::seal(self.name(), tool, asked.request_state);
                    let mut result = InputRequiredResult::new(asked.input_requests, Some(sealed));
                    result.meta = asked.meta;
                    serde_json::to_value(result)
                }
                ServerResult::InputRequiredResult(asked) => {
                    rounds += 1;
                    if rounds > DEFAULT_MRTR_MAX_ROUNDS {
                        return Err(self.error("upstream_error", format!("server {:?} still asked for input after {DEFAULT_MRTR_MAX_ROUNDS} rounds", self.name())));
                    }
                    let responses = self
                        .callers
                        .fulfil(self.name(), asked.input_requests.unwrap_or_default())
                        .await
                        .map_err(|e| self.error("input_refused", e.message.into_owned()))?;
                    params = CallToolRequestParams::new(tool.to_owned())
                        .with_arguments(arguments.clone());
                    params.input_responses = Some(responses);
                    params.request_state = asked.request_state;
                    continue;
                }
                _ => {
                    return Err(self.error(
                        "upstream_error",
                        format!(
                            "server {:?} answered with something other than a tool result (tasks are not supported through the gateway)",
                            self.name()
                        ),
                    ));
                }
            };
            let mut result = result
                .map_err(|e| self.error("upstream_error", format!("unreadable result: {e}")))?;
            // An upstream that echoes its own credentials (an error
            // quoting the request, a tool printing its environment)
            // does not hand them to the client.
            hide_secrets(&mut result, &self.redactor);
            return Ok(result);
        }
    }

    /// The upstream's own state from zenmode's sealed one, if it is intact,
    /// unused and this server's.
    fn unseal(&self, tool: &str, sealed: &str) -> Result<Option<String>, GatewayError> {
        let wrapped = request_state::open(sealed)
            .map_err(|message| self.error("invalid_request_state", message))?;
        if wrapped.server != self.name() || wrapped.tool != tool {
            return Err(self.error(
                "invalid_request_state",
                format!(
                    "the requestState is refused: it belongs to tool {:?} of server {:?}, not to this call of {tool:?} on {:?}",
                    wrapped.tool,
                    wrapped.server,
                    self.name()
                ),
            ));
        }
        Ok(wrapped.state)
    }

    /// One `tools/call` round, with progress and cancellation forwarded.
    async fn send_call(
        &self,
        connection: &Connection,
        params: CallToolRequestParams,
        call: &CallContext,
    ) -> Result<ServerResult, GatewayError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(self.config.timeout);
        let handle = connection
            .peer
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| self.service_error(e))?;
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        if let Some(sink) = &call.progress
            && let Ok(mut routes) = self.routes.lock()
        {
            routes.insert(token.clone(), sink.clone());
        }
        let answer = tokio::select! {
            answer = handle.await_response() => Some(answer),
            _ = call.cancel.cancelled() => None,
        };
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(&token);
        }
        let Some(answer) = answer else {
            let cancel = CancelledNotificationParam::new(
                Some(id),
                Some("the client cancelled the call".to_owned()),
            );
            let _ = connection.peer.notify_cancelled(cancel).await;
            return Err(self.error("cancelled", "the call was cancelled".to_owned()));
        };
        answer.map_err(|e| self.service_error(e))
    }

    /// The running connection, starting the server when needed.
    async fn connection(&self) -> Result<Arc<Connection>, GatewayError> {
        let mut slot = self.slot.lock().await;
        if let Slot::Running(connection) = &*slot {
            if !connection.is_closed() {
                return Ok(connection.clone());
            }
            let message = format!("server {:?} exited{}", self.name(), self.stderr_note());
            let failures = self.bump_failures();
            *slot = Slot::Failed {
                at: Instant::now(),
                failures,
                message,
            };
        }
        if let Slot::Failed {
            at,
            failures,
            message,
        } = &*slot
        {
            let wait = backoff(*failures);
            let waited = at.elapsed();
            if waited < wait {
                return Err(self.error(
                    "upstream_unavailable",
                    format!(
                        "{message}; zenmode retries it in {:.1}s",
                        (wait - waited).as_secs_f64()
                    ),
                ));
            }
        }
        self.record(|state| {
            state.state = "starting".into();
            state.pid = None;
        });
        match tokio::time::timeout(self.config.timeout.min(MAX_START), self.start()).await {
            Ok(Ok(connection)) => {
                let connection = Arc::new(connection);
                *slot = Slot::Running(connection.clone());
                drop(slot);
                self.record(|state| {
                    state.state = "running".into();
                    state.pid = connection.group;
                    state.tools = Some(connection.live.len());
                    state.last_error = None;
                    state.stderr_tail.clear();
                });
                self.watch_idle(&connection);
                if self.starts.fetch_add(1, Ordering::SeqCst) > 0
                    && let Some(events) = &self.events
                {
                    // Its subscriptions are sent again (see `resources`).
                    let _ = events.send(super::resources::UpstreamEvent::Restarted {
                        server: self.name().to_owned(),
                    });
                }
                Ok(connection)
            }
            outcome => {
                let message = match outcome {
                    Ok(Err(message)) => message,
                    _ => format!(
                        "server {:?} did not finish starting within {}s{}",
                        self.name(),
                        self.config.timeout.min(MAX_START).as_secs(),
                        self.stderr_note()
                    ),
                };
                let failures = self.bump_failures();
                *slot = Slot::Failed {
                    at: Instant::now(),
                    failures,
                    message: message.clone(),
                };
                self.record_failure(&message);
                Err(self.error("upstream_unavailable", message))
            }
        }
    }

    fn bump_failures(&self) -> u32 {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        *failures += 1;
        *failures
    }

    async fn note_crash(&self, crashed: &Arc<Connection>, message: &str) {
        let mut slot = self.slot.lock().await;
        if matches!(&*slot, Slot::Running(current) if Arc::ptr_eq(current, crashed)) {
            let failures = self.bump_failures();
            *slot = Slot::Failed {
                at: Instant::now(),
                failures,
                message: message.to_owned(),
            };
            self.record_failure(message);
        }
    }

    /// Spawns (or connects), initializes, and reads the tool list.
    async fn start(&self) -> Result<Connection, String> {
        let handler = ClientSide {
            server: self.name().to_owned(),
            routes: self.routes.clone(),
            callers: self.callers.clone(),
            events: self.events.clone(),
        };
        let (service, group, child) = match self.launch.as_ref().map_err(Clone::clone)? {
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
                let mut child = command_line.spawn().map_err(|e| {
                    format!(
                        "server {:?} could not be started ({}): {e}",
                        self.name(),
                        self.config.describe()
                    )
                })?;
                let group = child.id();
                if let Some(stderr) = child.stderr.take() {
                    self.drain_stderr(stderr);
                }
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    signal_group(group, Signal::Kill);
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
                let transport = AsyncRwTransport::<RoleClient, _, _>::new(from_guard, stdin)
                    .with_max_line_length(limit);
                let service = handler
                    .serve_with_lifecycle(transport, lifecycle(&self.config))
                    .await
                    .map_err(|e| {
                        signal_group(group, Signal::Kill);
                        format!(
                            "server {:?} did not complete the MCP handshake: {}{}",
                            self.name(),
                            self.redactor.redact(&e.to_string()),
                            self.stderr_note()
                        )
                    })?;
                (service, group, Some(child))
            }
            Transport::Http { url, headers } => {
                super::install_tls_provider();
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
                    super::oauth::keeper::for_upstream(self.name(), url, self.config.oauth.as_ref())
                });
                let served = match &keeper {
                    Some(keeper) => {
                        let client = super::oauth::keeper::OAuthHttp::new(
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
                        return super::oauth::needs_sign_in_message(self.name());
                    }
                    format!(
                        "server {:?} ({}): {}",
                        self.name(),
                        self.config.describe(),
                        self.redactor
                            .redact(&super::http_errors::explain_handshake(&e))
                    )
                })?;
                (service, None, None)
            }
        };
        let tools = match service.peer().list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                signal_group(group, Signal::Kill);
                return Err(format!(
                    "server {:?} started but its tools/list failed: {}{}",
                    self.name(),
                    self.service_error(e).message,
                    self.stderr_note()
                ));
            }
        };
        let tools: Vec<Value> = tools
            .into_iter()
            .filter_map(|tool| serde_json::to_value(tool).ok())
            .collect();
        self.refresh_cache(&tools);
        let capabilities = service
            .peer()
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or_default();
        super::resources::remember_capabilities(&self.dirs, &self.config, &capabilities);
        let live = tools
            .iter()
            .filter_map(|tool| Some((pins::tool_name(tool)?.to_owned(), tool.clone())))
            .collect();
        tracing::info!(
            server = self.name(),
            tools = tools.len(),
            "upstream started"
        );
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

    /// Logs the server's stderr line by line until it closes. Reads bytes,
    /// never text: invalid UTF-8 is replaced, not a reason to stop (a pipe
    /// left unread would block the server, a closed one would kill it). A
    /// line without an end keeps only its last [`STDERR_LINE_KEPT_BYTES`].
    fn drain_stderr(&self, stderr: tokio::process::ChildStderr) {
        let tail = self.stderr_tail.clone();
        let redactor = self.redactor.clone();
        let server = self.name().to_owned();
        let log = self.recorder.as_ref().map(|recorder| {
            let dirs = self.dirs.clone();
            let name = server.clone();
            recorder.log.get_or_init(|| StderrLog::open(&dirs, &name));
            recorder.log.clone()
        });
        let sink = move |line: &str| {
            if let Some(Some(log)) = log.as_ref().and_then(|log| log.get()) {
                log.line(line);
            }
        };
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = BoundedLine::default();
            let mut pace = StderrPace::default();
            loop {
                let (consumed, ended) = match reader.fill_buf().await {
                    Ok([]) | Err(_) => break,
                    Ok(bytes) => match bytes.iter().position(|&b| b == b'\n') {
                        Some(at) => {
                            line.push(&bytes[..at]);
                            (at + 1, true)
                        }
                        None => {
                            line.push(bytes);
                            (bytes.len(), false)
                        }
                    },
                };
                reader.consume(consumed);
                if !ended {
                    continue;
                }
                // A flood of short lines costs a log event each: past the
                // pace they are only counted, and the count is logged.
                match pace.allow(Instant::now()) {
                    Some(left_out) => {
                        if left_out > 0 {
                            sink(&log_stderr_line(
                                &server,
                                &redactor,
                                &tail,
                                left_out_note(left_out),
                            ));
                        }
                        sink(&log_stderr_line(&server, &redactor, &tail, line.take()));
                    }
                    None => line.discard(),
                }
            }
            if !line.is_empty() && pace.allow(Instant::now()).is_some() {
                sink(&log_stderr_line(&server, &redactor, &tail, line.take()));
            }
            if pace.left_out > 0 {
                sink(&log_stderr_line(
                    &server,
                    &redactor,
                    &tail,
                    left_out_note(pace.left_out),
                ));
            }
        });
    }

    /// The end of the server's stderr, for error messages.
    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("; its stderr ended with: {}", lines.join(" | "))
        }
    }

    /// Stops the server once it has been unused for `idle_shutdown`.
    fn watch_idle(&self, connection: &Arc<Connection>) {
        let Some(idle_limit) = self.config.idle_shutdown else {
            return;
        };
        let watched = Arc::downgrade(connection);
        let server = self.name().to_owned();
        let state = self.recorder.as_ref().map(|r| r.state.clone());
        let holds = self.holds.clone();
        let check_every =
            (idle_limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(check_every).await;
                let Some(connection) = watched.upgrade() else {
                    return;
                };
                if connection.is_closed() {
                    return;
                }
                if connection.in_flight.load(Ordering::SeqCst) == 0
                    && holds.load(Ordering::SeqCst) == 0
                    && connection.idle_for() >= idle_limit
                {
                    tracing::info!(server, "stopping idle upstream");
                    connection.stop().await;
                    if let Some(state) = &state {
                        state.update(|state| {
                            state.state = "idle".into();
                            state.pid = None;
                        });
                    }
                    return;
                }
            }
        });
    }

    /// Stops the server (zenmode's shutdown, or `upstream refresh`).
    pub async fn stop(&self) {
        let mut slot = self.slot.lock().await;
        if let Slot::Running(connection) = std::mem::replace(&mut *slot, Slot::Stopped) {
            connection.stop().await;
            self.record(|state| {
                state.state = "stopped".into();
                state.pid = None;
            });
        }
    }

    /// Seconds the current process has been up, if running.
    pub fn uptime(&self) -> Option<Duration> {
        match &*self.slot.try_lock().ok()? {
            Slot::Running(connection) if !connection.is_closed() => {
                Some(connection.started.elapsed())
            }
            _ => None,
        }
    }

    fn service_error(&self, error: ServiceError) -> GatewayError {
        match error {
            ServiceError::Timeout { timeout } => {
                let oversize = self
                    .oversize_note
                    .lock()
                    .ok()
                    .and_then(|mut note| note.take())
                    .map(|note| format!(" (earlier: {note})"))
                    .unwrap_or_default();
                self.error(
                    "upstream_timeout",
                    format!(
                        "server {:?} did not answer within {}s; the call was cancelled upstream{oversize}",
                        self.name(),
                        timeout.as_secs_f64()
                    ),
                )
            }
            ServiceError::McpError(data) if data.code.0 == reply_guard::TOO_LARGE_CODE => {
                self.error("upstream_reply_too_large", data.message.into_owned())
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => self.error(
                "upstream_crashed",
                format!(
                    "server {:?} stopped during the call{}; the next call restarts it",
                    self.name(),
                    self.stderr_note()
                ),
            ),
            ServiceError::McpError(data) => self.error(
                "upstream_error",
                format!(
                    "server {:?} refused the call: {} (code {})",
                    self.name(),
                    data.message,
                    data.code.0
                ),
            ),
            other => self.error(
                "upstream_error",
                format!(
                    "server {:?}: {}",
                    self.name(),
                    super::http_errors::explain_error(&other)
                ),
            ),
        }
    }

    /// An error for the caller: secrets hidden, and at most
    /// [`MAX_ERROR_CHARS`] of the message (an upstream's own error text can
    /// be any size).
    fn error(&self, kind: &'static str, message: String) -> GatewayError {
        GatewayError {
            kind,
            server: self.name().to_owned(),
            message: capped(&self.redactor.redact(&message), MAX_ERROR_CHARS),
        }
    }
}

/// Every string in `value` with the redactor's secrets hidden.
fn hide_secrets(value: &mut Value, redactor: &Redactor) {
    if redactor.is_empty() {
        return;
    }
    match value {
        Value::String(text) if redactor.finds_in(text) => *text = redactor.redact(text),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| hide_secrets(item, redactor)),
        Value::Object(members) => members
            .values_mut()
            .for_each(|member| hide_secrets(member, redactor)),
        _ => {}
    }
}

/// `text` cut to `max` characters, saying how many were left out.
fn capped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => {
            let left_out = text[at..].chars().count();
            format!("{}… ({left_out} more characters cut)", &text[..at])
        }
    }
}

/// One stderr line being read: at most [`STDERR_LINE_KEPT_BYTES`] of it,
/// its end, and how many bytes before that were dropped.
#[derive(Default)]
struct BoundedLine {
    kept: Vec<u8>,
    dropped: u64,
}

impl BoundedLine {
    fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= STDERR_LINE_KEPT_BYTES {
            self.dropped += (self.kept.len() + bytes.len() - STDERR_LINE_KEPT_BYTES) as u64;
            self.kept.clear();
            self.kept
                .extend_from_slice(&bytes[bytes.len() - STDERR_LINE_KEPT_BYTES..]);
            return;
        }
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > STDERR_LINE_KEPT_BYTES {
            let excess = self.kept.len() - STDERR_LINE_KEPT_BYTES;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped == 0
    }

    /// Forgets the line without reading it as text.
    fn discard(&mut self) {
        self.kept.clear();
        self.dropped = 0;
    }

    /// The line as text (invalid UTF-8 replaced), with a note of what was
    /// cut; starts over.
    fn take(&mut self) -> String {
        let dropped = std::mem::take(&mut self.dropped);
        let kept = std::mem::take(&mut self.kept);
        let text = String::from_utf8_lossy(&kept);
        let text = text.trim_end_matches('\r');
        if dropped == 0 {
            return text.to_owned();
        }
        // The cut may split a secret: start the kept part at a word boundary.
        let start = text
            .char_indices()
            .take(256)
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8());
        let cut = dropped + start as u64;
        format!("[{cut} bytes cut] {}", &text[start..])
    }
}

/// Logs one stderr line and keeps it in the tail; returns it as logged
/// (secrets hidden, cut to [`STDERR_LINE_CHARS`]) for the log file.
/// How many stderr lines of one server are logged each second; the rest
/// are counted and the count logged with the next line let through.
const STDERR_LINES_PER_SECOND: u32 = 100;

/// The pace of one server's stderr lines in the log.
#[derive(Default)]
struct StderrPace {
    window: Option<Instant>,
    used: u32,
    left_out: u64,
}

impl StderrPace {
    /// `Some(left out before this line)` when the line may be logged.
    fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .window
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1))
        {
            self.window = Some(now);
            self.used = 0;
        }
        if self.used < STDERR_LINES_PER_SECOND {
            self.used += 1;
            Some(std::mem::take(&mut self.left_out))
        } else {
            self.left_out += 1;
            None
        }
    }
}

fn left_out_note(count: u64) -> String {
    format!(
        "[{count} stderr lines left out: the server wrote more than {STDERR_LINES_PER_SECOND} a second]"
    )
}

fn log_stderr_line(
    server: &str,
    redactor: &Redactor,
    tail: &Mutex<VecDeque<String>>,
    line: String,
) -> String {
    let line: String = redactor
        .redact(&line)
        .chars()
        .take(STDERR_LINE_CHARS)
        .collect();
    tracing::info!(target: "zenmode::upstream::stderr", server, "[{server}] {line}");
    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
    if tail.len() == STDERR_TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(line.clone());
    line
}

/// The wait before the next start after `failures` failures in a row: none
/// after the first (a crash is retried at once), then doubling to 30 s.
fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let secs = 1u64 << (failures - 2).min(5);
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stderr_flood_is_paced_and_counted() {
        let mut pace = StderrPace::default();
        let start = Instant::now();
        let allowed = (0..250).filter(|_| pace.allow(start).is_some()).count();
        assert_eq!(allowed, STDERR_LINES_PER_SECOND as usize);
        assert_eq!(pace.allow(start + Duration::from_secs(1)), Some(150));
    }

    #[test]
    fn backoff_retries_at_once_then_doubles_up_to_a_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
