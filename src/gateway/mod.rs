//! The gateway: the user's other MCP servers ("upstreams"), whose tools
//! become modes behind the same two tools.
//!
//! - [`config`]: the `mcpServers` file and zenmode's per-server options;
//! - [`dirs`]: where the gateway's files live, and how they are written;
//! - [`catalog_cache`]: each server's cached catalog;
//! - [`pins`]: the pins of approved tool definitions;
//! - [`upstream`]: one server's process (or HTTP session), started lazily;
//! - [`flowback`]: what an upstream asks of the client (elicitation,
//!   sampling, roots), passed to the session whose call it serves;
//! - [`serving`]: which version of the upstreams file each serving process loaded;
//! - [`http_errors`]: a remote server's failures explained, with what to do;
//! - [`request_state`]: zenmode's signed `requestState` around an upstream's;
//! - [`reply_guard`]: a stdio server's replies held to its size limit;
//! - [`resources`]: every server's resources, prompts and completion;
//! - [`status_file`]: each server's state file and stderr log, for `zenmode status`;
//! - [`supervisor`]: the guard process that takes a stdio server's whole
//!   process group down with zenmode, even when zenmode is SIGKILLed.
//!
//! Opening the gateway reads cached catalogs and spawns nothing it need
//! not; a server without a cached catalog is started in the background to
//! learn its tools, and its modes join the catalog when it answers
//! ([`Gateway::subscribe`] tells the engine). Until then, and after a
//! failure, the server is *unavailable* with a one-line reason that the
//! surface shows the model ([`Gateway::unavailable`]). A failed start is
//! retried with a growing backoff, one log line per failure.
//!
//! Every tool's definition is compared with the approved pins: a changed or
//! new one is quarantined (offered nowhere, refused if called) until
//! `zenmode upstream approve`. A server never seen before is approved on
//! first use (its pins written).
//!
//! [`Gateway::reload`] applies a changed upstreams file to a running
//! gateway; [`serving`] records which version of the file each running
//! process has loaded.

pub mod catalog_cache;
pub mod config;
pub mod dirs;
pub mod flowback;
pub mod http_errors;
pub mod oauth;
pub mod pins;
pub mod reply_guard;
pub mod request_state;
pub mod resources;
pub mod serving;
pub mod status_file;
pub mod supervisor;
pub mod upstream;

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use serde_json::{Map, Value, json};
use tokio::sync::watch;

pub use catalog_cache::ListedTool;
pub use config::{ConfigError, UpstreamConfig, UpstreamsFile};
pub use dirs::GatewayDirs;
pub use pins::{Pins, Verdict, quarantine_message};
use upstream::Upstream;

use crate::{
    call::CallContext,
    catalog::{self, Mode, gateway_modes::upstream_mode_from_text},
};

/// A failed upstream call; becomes an `isError` result naming the server.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    pub kind: &'static str,
    pub server: String,
    pub message: String,
}

/// The first wait before a failed server is started again; it doubles on
/// each failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(10);
const MAX_RETRY: Duration = Duration::from_secs(300);
/// The longest reason shown to the model for one unavailable server.
const MAX_REASON_CHARS: usize = 160;

/// Every configured upstream of this process (none without `--upstreams`).
/// Shared by every session; its set of servers and modes may change while
/// it runs (background start-up, reload).
pub struct Gateway {
    dirs: GatewayDirs,
    state: RwLock<State>,
    /// Bumped on every change of modes or availability.
    version: watch::Sender<u64>,
    /// The file last loaded, for the watch and the record in [`serving`].
    loaded: Mutex<Option<serving::Stamp>>,
    /// Whether loads are recorded for `upstream add|remove` (servers only).
    recording: std::sync::atomic::AtomicBool,
    /// Resource owners, subscriptions and upstream notifications.
    hub: resources::Hub,
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            dirs: GatewayDirs::from_env(),
            state: RwLock::default(),
            version: watch::channel(0).0,
            loaded: Mutex::default(),
            recording: std::sync::atomic::AtomicBool::new(false),
            hub: resources::Hub::default(),
        }
    }
}

#[derive(Default)]
struct State {
    upstreams: BTreeMap<String, Arc<Upstream>>,
    /// The approved modes of each server whose tools are known.
    modes: BTreeMap<String, Vec<Arc<Mode>>>,
    /// Each server's quarantined tools: mode name -> what a call to it
    /// answers, so it is named quarantined rather than an unknown mode.
    quarantined: BTreeMap<String, BTreeMap<String, String>>,
    /// What offers nothing right now (a server, a bad entry, the file), by key.
    unavailable: BTreeMap<String, Unavailable>,
    reports: BTreeMap<String, ServerReport>,
    /// The background task learning each server's tools, while it runs:
    /// aborted when the server is removed or zenmode stops, which drops a
    /// start under way (and kills the process it spawned).
    fetches: BTreeMap<String, tokio::task::AbortHandle>,
}

/// Something the model cannot reach, and why, in one line.
#[derive(Debug, Clone)]
struct Unavailable {
    /// Mode names of this server start with `<prefix>__`.
    prefix: Option<String>,
    line: String,
    /// Still waiting for the first answer (start-up may wait for these).
    starting: bool,
}

/// What [`approve`] makes of a server's tools.
struct Approved {
    modes: Vec<Arc<Mode>>,
    report: ServerReport,
    /// Mode name -> the quarantine message.
    quarantined: BTreeMap<String, String>,
}

/// How one server's catalog was obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogSource {
    Cache,
    Fetched,
    Disabled,
    /// Not cached and could not be fetched (yet): the server offers no modes.
    Unavailable(String),
}

/// One server as opened: what it offers and what is held back.
#[derive(Debug, Clone)]
pub struct ServerReport {
    pub name: String,
    pub prefix: String,
    /// Command or URL, secrets hidden.
    pub target: String,
    pub source: CatalogSource,
    pub offered: usize,
    /// Tools left out by the entry's allow / deny lists.
    pub filtered: usize,
    /// Tool name and why it is held back.
    pub quarantined: Vec<(String, &'static str)>,
    /// Whether this start approved the server on first use.
    pub first_use: bool,
}

impl Gateway {
    /// A gateway over the servers of `file` (none when `None`). Cached
    /// catalogs are used as they are; servers without one are started in
    /// the background (see [`Gateway::settle`] to wait for them). A file
    /// that cannot be used, and bad entries, are logged once and shown to
    /// the model as unavailable; the rest is served. Needs a Tokio runtime.
    pub fn open(file: Option<&Path>, dirs: GatewayDirs) -> Arc<Gateway> {
        let gateway = Arc::new(Gateway {
            dirs,
            ..Gateway::default()
        });
        if let Some(file) = file {
            gateway.reload(file);
        }
        gateway
    }

    /// Waits until every server started in the background has answered or
    /// failed once, for at most `wait` (one-shot commands and the strategies
    /// whose list follows the catalog).
    pub async fn settle(&self, wait: Duration) {
        let mut changes = self.version.subscribe();
        let settled = changes.wait_for(|_| !self.any_starting());
        if tokio::time::timeout(wait, settled).await.is_err() {
            tracing::warn!(
                "upstreams still starting after {}s; their modes join when they answer",
                wait.as_secs_f64()
            );
        }
    }

    fn any_starting(&self) -> bool {
        self.read().unavailable.values().any(|u| u.starting)
    }

    /// Rereads `file` and applies it: servers added, removed, enabled,
    /// disabled or changed take effect now (a removed or changed server is
    /// stopped; a changed one starts again on next use). Returns whether the
    /// file was read.
    pub fn reload(self: &Arc<Self>, file: &Path) -> bool {
        let stamp = serving::Stamp::of(file);
        if let Some(stamp) = &stamp
            && self.recording.load(std::sync::atomic::Ordering::SeqCst)
        {
            serving::record(&self.dirs, file, stamp);
        }
        *self.loaded.lock().unwrap_or_else(|p| p.into_inner()) = stamp.clone();
        let parsed = match stamp.as_ref().map(|_| config::load_each(file)) {
            // A missing file is an empty one: `upstream add` creates it later.
            None => Ok(UpstreamsFile::default()),
            Some(parsed) => parsed,
        };
        let (servers, bad, file_problem) = match parsed {
            Ok(parsed) => {
                for warning in &parsed.warnings {
                    tracing::warn!("{}: {warning}", file.display());
                }
                (parsed.servers, parsed.bad, None)
            }
            Err(error) => {
                tracing::warn!(
                    "{error}; serving zenmode's own modes and no upstream until it is fixed"
                );
                (Vec::new(), Vec::new(), Some(error.problem))
            }
        };
        let mut stopped = Vec::new();
        let mut fetch = Vec::new();
        {
            let mut state = self.write();
            if let Some(problem) = file_problem {
                // Keep serving what the file gave before it broke.
                state.unavailable.insert(
                    String::new(),
                    Unavailable {
                        prefix: None,
                        line: short(&format!("upstreams file: {problem}")),
                        starting: false,
                    },
                );
                drop(state);
                self.changed();
                return stamp.is_some();
            }
            let wanted: BTreeMap<&str, &UpstreamConfig> = servers
                .iter()
                .filter(|config| config.enabled)
                .map(|config| (config.name.as_str(), config))
                .collect();
            let names: Vec<String> = state.upstreams.keys().cloned().collect();
            for name in names {
                let keep = matches!(
                    (wanted.get(name.as_str()), state.upstreams.get(&name)),
                    (Some(config), Some(running)) if **config == running.config
                );
                if !keep && let Some(upstream) = state.upstreams.remove(&name) {
                    state.modes.remove(&name);
                    state.reports.remove(&name);
                    state.quarantined.remove(&name);
                    if let Some(fetch) = state.fetches.remove(&name) {
                        fetch.abort();
                    }
                    stopped.push(upstream);
                }
            }
            // What the old file said is unavailable goes, except the state
            // of servers kept as they were.
            let kept: Vec<String> = state.upstreams.keys().cloned().collect();
            state.unavailable.retain(|key, _| kept.contains(key));
            for (name, problem) in &bad {
                tracing::warn!("{}: server {name:?} left out: {problem}", file.display());
                state.unavailable.insert(
                    format!("bad entry {name}"),
                    Unavailable {
                        prefix: Some(name.clone()),
                        line: short(&format!("bad entry {name:?}: {problem}")),
                        starting: false,
                    },
                );
            }
            for config in &servers {
                if !config.enabled {
                    state
                        .reports
                        .insert(config.name.clone(), report(config, CatalogSource::Disabled));
                    continue;
                }
                if state.upstreams.contains_key(&config.name) {
                    continue;
                }
                let pins = pins::load_pins(&self.dirs, &config.name);
                let upstream = Arc::new(
                    Upstream::new(config.clone(), self.dirs.clone(), pins.clone())
                        .recording_state()
                        .with_events(self.hub.sender()),
                );
                state
                    .upstreams
                    .insert(config.name.clone(), upstream.clone());
                match catalog_cache::load_listed(&self.dirs, config) {
                    Some(cached) => {
                        let approved =
                            approve(&self.dirs, &upstream, pins, cached, CatalogSource::Cache);
                        state.keep(&config.name, approved);
                    }
                    None => fetch.push(upstream.clone()),
                }
                if config.startup == config::Startup::Eager {
                    eager_start(&upstream);
                }
            }
            // Servers still waiting for their first answer stay so.
            for upstream in &fetch {
                state.unavailable.insert(
                    upstream.name().to_owned(),
                    Unavailable {
                        prefix: Some(upstream.config.prefix.clone()),
                        line: format!("{}: still starting", upstream.name()),
                        starting: true,
                    },
                );
            }
        }
        for upstream in stopped {
            tracing::info!(
                server = upstream.name(),
                "upstream removed or changed: stopped"
            );
            tokio::spawn(async move { upstream.stop().await });
        }
        for upstream in fetch {
            let name = upstream.name().to_owned();
            let task = tokio::spawn(self.clone().fetch(upstream));
            self.write().fetches.insert(name, task.abort_handle());
        }
        self.changed();
        stamp.is_some()
    }

    /// From now on, notes each version of `file` this process loads (see
    /// [`serving`]), starting with the current one: a serving process does,
    /// one-shot commands do not. [`Gateway::shutdown`] removes the note.
    pub fn record_loads(&self, file: &Path) {
        self.recording
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(stamp) = loaded.as_ref() {
            serving::record(&self.dirs, file, stamp);
        }
    }

    /// Rereads `file` when its size, modification time or content differs
    /// from the version last loaded (the once-a-second watch).
    pub fn reload_if_changed(self: &Arc<Self>, file: &Path) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if loaded
            .as_ref()
            .is_some_and(|stamp| stamp.unchanged_on_disk(file))
        {
            return;
        }
        let now = serving::Stamp::of(file);
        match (loaded.as_ref(), &now) {
            (None, None) => return,
            (Some(before), Some(now)) if before.same_file(now) => {
                // Touched, not changed: remember the new time.
                *loaded = Some(now.clone());
                return;
            }
            _ => {}
        }
        drop(loaded);
        tracing::info!("{} changed: reloading the upstreams", file.display());
        self.reload(file);
    }

    /// Learns a server's tools in the background; after a failure, tries
    /// again with a growing wait while the server is still configured.
    async fn fetch(self: Arc<Self>, upstream: Arc<Upstream>) {
        let mut wait = FIRST_RETRY;
        loop {
            let outcome = upstream.tools().await;
            if !self.is_current(&upstream) {
                return;
            }
            let problem = match outcome {
                Ok(tools) => {
                    let pins = pins::load_pins(&self.dirs, upstream.name());
                    let approved = approve(
                        &self.dirs,
                        &upstream,
                        pins,
                        catalog_cache::listed(&tools),
                        CatalogSource::Fetched,
                    );
                    tracing::info!(
                        server = upstream.name(),
                        modes = approved.modes.len(),
                        "upstream answered: its modes are served"
                    );
                    let mut state = self.write();
                    state.fetches.remove(upstream.name());
                    state.unavailable.remove(upstream.name());
                    state.keep(upstream.name(), approved);
                    drop(state);
                    self.changed();
                    return;
                }
                Err(error) => error.message,
            };
            tracing::warn!(
                server = upstream.name(),
                "upstream offers no modes: {problem}; next try in {}s",
                wait.as_secs()
            );
            {
                let mut state = self.write();
                let line = short(&format!(
                    "{}: failed to start ({})",
                    upstream.name(),
                    failure_in_brief(upstream.name(), &problem)
                ));
                state.unavailable.insert(
                    upstream.name().to_owned(),
                    Unavailable {
                        prefix: Some(upstream.config.prefix.clone()),
                        line,
                        starting: false,
                    },
                );
                state.reports.insert(
                    upstream.name().to_owned(),
                    report(&upstream.config, CatalogSource::Unavailable(problem)),
                );
            }
            self.changed();
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_RETRY);
            if !self.is_current(&upstream) {
                return;
            }
        }
    }

    /// Whether `upstream` is still the configured server of its name.
    fn is_current(&self, upstream: &Arc<Upstream>) -> bool {
        self.read()
            .upstreams
            .get(upstream.name())
            .is_some_and(|current| Arc::ptr_eq(current, upstream))
    }

    fn changed(&self) {
        self.version.send_modify(|version| *version += 1);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes to the modes or to what is unavailable: the value is a
    /// version number, bumped on each.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// The current version and every approved mode of every server.
    pub fn modes(&self) -> (u64, Vec<Arc<Mode>>) {
        let state = self.read();
        let version = *self.version.borrow();
        let modes = state.modes.values().flatten().cloned().collect();
        (version, modes)
    }

    /// One short line per thing the model cannot reach now: a server still
    /// starting or failed, a bad entry, a broken upstreams file.
    /// A server whose modes come from its cache but that failed its last
    /// start (or crashed) counts too, until it runs again.
    pub fn unavailable(&self) -> Vec<String> {
        let state = self.read();
        let mut lines: Vec<String> = state.unavailable.values().map(|u| u.line.clone()).collect();
        for (name, upstream) in &state.upstreams {
            if state.unavailable.contains_key(name) {
                continue;
            }
            if let Some(problem) = upstream.last_failure() {
                lines.push(short(&format!(
                    "{name}: failed ({})",
                    failure_in_brief(name, &problem)
                )));
            }
        }
        lines
    }

    /// Why the server a mode name would belong to is unavailable, if it is.
    pub fn unavailable_for_mode(&self, mode: &str) -> Option<String> {
        let (prefix, _) = mode.split_once(crate::catalog::gateway_modes::SEPARATOR)?;
        self.read()
            .unavailable
            .values()
            .find(|u| u.prefix.as_deref() == Some(prefix))
            .map(|u| u.line.clone())
    }

    /// Whether the server a mode name would belong to is still waiting
    /// for its first answer.
    fn starting_for_mode(&self, mode: &str) -> bool {
        let Some((prefix, _)) = mode.split_once(crate::catalog::gateway_modes::SEPARATOR) else {
            return false;
        };
        self.read()
            .unavailable
            .values()
            .any(|u| u.starting && u.prefix.as_deref() == Some(prefix))
    }

    /// When the server `mode` would belong to is still starting, waits
    /// (for at most `wait`) until it has answered or failed.
    pub async fn wait_for_mode(&self, mode: &str, wait: Duration) {
        if !self.starting_for_mode(mode) {
            return;
        }
        let mut changes = self.version.subscribe();
        let answered = changes.wait_for(|_| !self.starting_for_mode(mode));
        let _ = tokio::time::timeout(wait, answered).await;
    }

    /// Why the mode `name` is held back, if it is a quarantined upstream tool.
    pub fn quarantined(&self, name: &str) -> Option<String> {
        self.read()
            .quarantined
            .values()
            .find_map(|tools| tools.get(name).cloned())
    }

    /// How each configured server was opened, by name.
    pub fn reports(&self) -> Vec<ServerReport> {
        self.read().reports.values().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        let state = self.read();
        state.upstreams.is_empty() && state.unavailable.is_empty()
    }

    /// Forwards a call to `tool` of `server`; the result is the upstream's, unchanged.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        self.check_state_server(call)?;
        let upstream = self.read().upstreams.get(server).cloned();
        let Some(upstream) = upstream else {
            return Err(GatewayError {
                kind: "unknown_upstream",
                server: server.to_owned(),
                message: format!("no upstream server named {server:?} is configured"),
            });
        };
        upstream.call(tool, arguments, call).await
    }

    /// Stops every running upstream (and its process group).
    pub async fn shutdown(&self) {
        let upstreams: Vec<Arc<Upstream>> = {
            let mut state = self.write();
            for fetch in std::mem::take(&mut state.fetches).into_values() {
                fetch.abort();
            }
            state.upstreams.values().cloned().collect()
        };
        let stops = upstreams.iter().map(|upstream| upstream.stop());
        futures_util::future::join_all(stops).await;
        serving::forget(&self.dirs);
    }

    /// What `version` may show: names, targets and whether each runs; no secrets.
    pub fn summary(&self) -> Value {
        Value::Array(
            self.read()
                .upstreams
                .values()
                .map(|upstream| {
                    json!({
                        "server": upstream.name(),
                        "prefix": upstream.config.prefix,
                        "target": upstream.config.describe(),
                        "running": upstream.uptime().is_some(),
                    })
                })
                .collect(),
        )
    }
}

impl State {
    /// Keeps what [`approve`] made of server `name`'s tools.
    fn keep(&mut self, name: &str, approved: Approved) {
        self.modes.insert(name.to_owned(), approved.modes);
        self.reports.insert(name.to_owned(), approved.report);
        self.quarantined
            .insert(name.to_owned(), approved.quarantined);
    }
}

/// Checks a server's tools against its pins (approving a server seen for
/// the first time) and makes modes of the approved ones.
fn approve(
    dirs: &GatewayDirs,
    upstream: &Upstream,
    pins: Option<Pins>,
    tools: Vec<ListedTool>,
    source: CatalogSource,
) -> Approved {
    let config = &upstream.config;
    let (pins, first_use) = match pins {
        Some(pins) => (pins, false),
        None => {
            let values: Vec<Value> = tools.iter().map(ListedTool::value).collect();
            let pins = Pins::of(&values);
            if let Err(error) = pins::save_pins(dirs, &config.name, &pins) {
                tracing::warn!(server = config.name, %error, "could not save approvals");
            }
            tracing::info!(
                server = config.name,
                tools = tools.len(),
                "new upstream: its tool definitions are approved as first seen"
            );
            (pins, true)
        }
    };
    let mut modes = Vec::new();
    let mut quarantined = BTreeMap::new();
    let mut server_report = report(config, source);
    server_report.first_use = first_use;
    for tool in tools {
        let ListedTool {
            name,
            hash,
            definition,
        } = tool;
        let name = name.as_str();
        if !config.allows(name) {
            server_report.filtered += 1;
            continue;
        }
        match pins.verdict_of(name, &hash) {
            Verdict::Approved => {
                match upstream_mode_from_text(&config.name, &config.prefix, name, definition) {
                    Ok(mode) => {
                        modes.push(Arc::new(mode));
                        server_report.offered += 1;
                    }
                    Err(problem) => {
                        tracing::warn!(server = config.name, "tool left out: {problem}");
                        server_report.filtered += 1;
                    }
                }
            }
            verdict => {
                tracing::warn!(
                    server = config.name,
                    tool = name,
                    "tool quarantined: {}",
                    verdict.reason()
                );
                quarantined.insert(
                    catalog::gateway_modes::mode_name(&config.prefix, name),
                    quarantine_message(&config.name, name, verdict.reason()),
                );
                server_report
                    .quarantined
                    .push((name.to_owned(), verdict.reason()));
            }
        }
    }
    upstream.set_pins(pins);
    Approved {
        modes,
        report: server_report,
        quarantined,
    }
}

/// Starts an `"startup": "eager"` server in the background.
fn eager_start(upstream: &Arc<Upstream>) {
    if upstream.is_running() {
        return;
    }
    let upstream = upstream.clone();
    tokio::spawn(async move {
        if let Err(error) = upstream.tools().await {
            tracing::warn!(
                server = error.server,
                "eager start failed: {}",
                error.message
            );
        }
    });
}

/// A start failure as the model needs it: the last line the server wrote
/// on stderr when there is one (it usually says what is wrong), else the
/// message without the server's name.
fn failure_in_brief(server: &str, message: &str) -> String {
    const STDERR: &str = "its stderr ended with: ";
    if let Some(at) = message.find(STDERR) {
        let tail = &message[at + STDERR.len()..];
        // The tail's lines are joined with " | ".
        if let Some(last) = tail
            .rsplit(" | ")
            .map(str::trim)
            .find(|line| !line.is_empty())
        {
            return last.to_owned();
        }
    }
    message
        .trim_start_matches(&format!("server {server:?} "))
        .to_owned()
}

/// `line` cut to [`MAX_REASON_CHARS`], on one line.
fn short(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_REASON_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

fn report(config: &UpstreamConfig, source: CatalogSource) -> ServerReport {
    ServerReport {
        name: config.name.clone(),
        prefix: config.prefix.clone(),
        target: config.describe(),
        source,
        offered: 0,
        filtered: 0,
        quarantined: Vec::new(),
        first_use: false,
    }
}

/// rustls needs one process-wide crypto provider; the providers use ring too.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_failure_is_told_by_the_last_stderr_line_or_without_the_name() {
        let with_stderr = "server \"git\" did not complete the MCP handshake: closed; its stderr ended with: Traceback | ModuleNotFoundError: no git";
        assert_eq!(
            failure_in_brief("git", with_stderr),
            "ModuleNotFoundError: no git"
        );
        assert_eq!(
            failure_in_brief("git", "server \"git\" did not finish starting within 30s"),
            "did not finish starting within 30s"
        );
        let long = "x".repeat(500);
        assert_eq!(short(&long).chars().count(), MAX_REASON_CHARS);
        assert_eq!(short("a\n  b"), "a b");
    }
}
