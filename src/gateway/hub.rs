//! The gateway itself ([`Gateway`]): every configured upstream of this
//! process, the approved modes of each, what is quarantined and what is
//! unavailable (and why); opened from the upstreams file, reloaded when it
//! changes, and shut down with zenmode. A server without a cached catalog
//! is started in the background to learn its tools, retried with a growing
//! wait after a failure.
//!
//! Near the top of the gateway's files: the files below know nothing of
//! it; only the two that add methods to it for a part of the protocol
//! (`resources.rs`, `prompts.rs`) sit above it.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::{
    approval::{Approved, CatalogSource, ServerReport, approve, report},
    catalog_cache,
    config::{self, UpstreamConfig, UpstreamsFile},
    connection::Upstream,
    disk::GatewayDirs,
    error::GatewayError,
    flowback::ROOT_SESSIONS,
    pins,
    resource_hub::Hub,
    serving,
    unavailable::{Unavailable, failure_in_brief, short},
};
use crate::gateway::error::FailureKind;
use crate::{
    call::{Ask, CallContext, ClientRequests},
    catalog::Mode,
};

/// The first wait before a failed server is started again; it doubles on
/// each failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(10);

const MAX_RETRY: Duration = Duration::from_secs(300);

/// How long a loaded upstreams file may be missing before its servers go:
/// an editor or sync tool that renames the file away and writes it back
/// leaves it missing for a moment, which must not stop every server and
/// the calls they run. An empty file takes effect at once.
pub const MISSING_GRACE: Duration = Duration::from_secs(5);

/// Every configured upstream of this process (none without `--upstreams`).
/// Shared by every session; its set of servers and modes may change while
/// it runs (background start-up, reload).
pub struct Gateway {
    pub(super) dirs: GatewayDirs,
    state: RwLock<State>,
    /// Bumped on every change of modes or availability.
    version: watch::Sender<u64>,
    /// The file last loaded, for the watch and the record in [`super::serving`].
    loaded: Mutex<Option<serving::Stamp>>,
    /// Since when the loaded file has been missing (see [`MISSING_GRACE`]).
    missing_since: Mutex<Option<Instant>>,
    /// Whether loads are recorded for `upstream add|remove` (servers only).
    recording: std::sync::atomic::AtomicBool,
    /// Resource owners, subscriptions and upstream notifications.
    pub(super) hub: Hub,
}

impl Default for Gateway {
    fn default() -> Self {
        Gateway {
            dirs: GatewayDirs::from_env(),
            state: RwLock::default(),
            version: watch::channel(0).0,
            loaded: Mutex::default(),
            missing_since: Mutex::default(),
            recording: std::sync::atomic::AtomicBool::new(false),
            hub: Hub::default(),
        }
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) upstreams: BTreeMap<String, Arc<Upstream>>,
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
        if !self.wait_while_starting(wait).await {
            tracing::warn!(
                "upstreams still starting after {}s; their modes join when they answer",
                wait.as_secs_f64()
            );
        }
    }

    /// Waits (for at most `wait`) while a server whose tools are not known
    /// yet is starting; whether none is left starting. A select waits so,
    /// so that its answer right after start-up includes those tools rather
    /// than a built-in mode and a "still starting" line. A server whose
    /// catalog is cached is not started at all, so this costs nothing then.
    pub async fn wait_while_starting(&self, wait: Duration) -> bool {
        if !self.any_starting() {
            return true;
        }
        let mut changes = self.version.subscribe();
        let settled = changes.wait_for(|_| !self.any_starting());
        tokio::time::timeout(wait, settled).await.is_ok()
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
        if self.missing_for_now(file, stamp.is_none()) {
            return false;
        }
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
                let kept = self.read().upstreams.len();
                if kept == 0 {
                    tracing::warn!("{error}; serving zenmode's own modes only until it is fixed");
                } else {
                    tracing::warn!(
                        "{error}; the {kept} server(s) from before the change keep serving until it is fixed"
                    );
                }
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

    /// Whether `file`, loaded before and `missing` now, went missing less
    /// than [`MISSING_GRACE`] ago, so that nothing changes yet. A file that
    /// was never there is no file at once.
    fn missing_for_now(&self, file: &Path, missing: bool) -> bool {
        let had_file = self
            .loaded
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        let mut since = self.missing_since.lock().unwrap_or_else(|p| p.into_inner());
        if !missing || !had_file {
            *since = None;
            return false;
        }
        let first = *since.get_or_insert_with(|| {
            tracing::info!(
                "{} is missing: its servers stay as they are until it comes back, for at most {}s",
                file.display(),
                MISSING_GRACE.as_secs()
            );
            Instant::now()
        });
        if first.elapsed() < MISSING_GRACE {
            return true;
        }
        tracing::info!(
            "{} has been missing for {}s: its servers are removed",
            file.display(),
            MISSING_GRACE.as_secs()
        );
        *since = None;
        false
    }

    /// From now on, notes each version of `file` this process loads (see
    /// [`super::serving`]), starting with the current one: a serving process does,
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
            // Also when it was missing and came back as it was (renamed back).
            *self.missing_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
            return;
        }
        let now = serving::Stamp::of(file);
        if now.is_some() {
            *self.missing_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
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
        if now.is_some() {
            tracing::info!("{} changed: reloading the upstreams", file.display());
        }
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

    pub(super) fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
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

    /// Whether the entry of `server` lets scripts call its tools that
    /// change things (`"script_writes": "allow"`).
    pub fn script_writes_allowed(&self, server: &str) -> bool {
        self.read()
            .upstreams
            .get(server)
            .is_some_and(|upstream| upstream.config.script_writes)
    }

    /// Every configured server's name, enabled or not, started or not.
    pub fn server_names(&self) -> Vec<String> {
        let state = self.read();
        let mut names: Vec<String> = state
            .upstreams
            .keys()
            .chain(state.reports.keys())
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Where this gateway keeps its files.
    pub fn dirs(&self) -> &GatewayDirs {
        &self.dirs
    }

    /// The entry of `server`, while it is configured and enabled.
    pub fn config_of(&self, server: &str) -> Option<UpstreamConfig> {
        self.read()
            .upstreams
            .get(server)
            .map(|upstream| upstream.config.clone())
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
                kind: FailureKind::UnknownUpstream,
                server: server.to_owned(),
                message: format!("no upstream server named {server:?} is configured"),
            });
        };
        upstream.call(tool, arguments, call).await
    }

    /// Stops `server` and opens it again from `file`, its pins read anew
    /// (after an approval): it starts again on its next call, or at once
    /// when its entry starts eagerly. An error when no such server runs.
    pub async fn restart_server(self: &Arc<Self>, server: &str, file: &Path) -> Result<(), String> {
        let stopped = {
            let mut state = self.write();
            let Some(upstream) = state.upstreams.remove(server) else {
                return Err(format!("no server {server:?} is running in this zenmode"));
            };
            state.modes.remove(server);
            state.reports.remove(server);
            state.quarantined.remove(server);
            if let Some(fetch) = state.fetches.remove(server) {
                fetch.abort();
            }
            upstream
        };
        stopped.stop().await;
        tracing::info!(server, "upstream restarted");
        self.reload(file);
        Ok(())
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

impl Gateway {
    /// A session opened whose client offers roots: its roots are what the
    /// running upstreams see now, so they are told to ask again. The session
    /// keeps `client` alive; the gateway only holds it weakly.
    pub async fn client_connected(&self, client: &Arc<dyn ClientRequests>) {
        if !client.can(Ask::Roots) {
            return;
        }
        if let Ok(mut list) = ROOT_SESSIONS.lock() {
            list.push(Arc::downgrade(client));
        }
        self.roots_changed().await;
    }

    /// Refuses a retry whose (intact) `requestState` names a server this
    /// gateway does not have, before anything is sent.
    pub(super) fn check_state_server(&self, call: &CallContext) -> Result<(), GatewayError> {
        let Some(server) = call
            .resume
            .as_ref()
            .and_then(|resume| resume.request_state.as_deref())
            .and_then(super::request_state::server_of)
        else {
            return Ok(());
        };
        if self.read().upstreams.contains_key(&server) {
            return Ok(());
        }
        Err(GatewayError {
            kind: FailureKind::InvalidRequestState,
            server: server.clone(),
            message: format!(
                "the requestState is refused: it belongs to server {server:?}, which this zenmode does not serve"
            ),
        })
    }

    /// Tells every running upstream that the client's roots changed, each
    /// in its own task (one that is starting is told once it is up).
    pub async fn roots_changed(&self) {
        let upstreams: Vec<_> = self.read().upstreams.values().cloned().collect();
        for upstream in upstreams {
            tokio::spawn(async move { upstream.notify_roots_changed().await });
        }
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
