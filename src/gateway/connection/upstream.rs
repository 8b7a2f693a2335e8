//! The [`Upstream`] itself: one configured server, what state it is in
//! (stopped, running, failed with the time and count of its failures), and
//! what it holds for the rest of its life: its entry with the placeholders
//! filled, its secrets, its pins, its callers and its event sender. The
//! other files of this folder add what it does (start, calls, lifecycle,
//! stderr).

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use serde_json::Value;

use super::{progress::ProgressRoutes, running::Connection};
use crate::gateway::{
    config::{Redactor, Transport, UpstreamConfig},
    disk::GatewayDirs,
    events::EventSender,
    flowback::Callers,
    pins::Pins,
    reply_guard,
    status_file::{StateFile, StderrLog},
};

pub(super) enum Slot {
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
    pub(super) launch: Result<Transport, String>,
    pub(super) redactor: Redactor,
    pub(super) dirs: GatewayDirs,
    pub(super) slot: tokio::sync::Mutex<Slot>,
    pub(super) pins: Mutex<Option<Pins>>,
    pub(super) stderr_tail: Arc<Mutex<VecDeque<String>>>,
    pub(super) routes: ProgressRoutes,
    pub(super) callers: Callers,
    /// An oversized reply the guard could not match to a call.
    pub(super) oversize_note: reply_guard::OversizeNote,
    /// Failures in a row (reset by a successful call).
    pub(super) failures: Mutex<u32>,
    /// Its state file and stderr log, for a serving zenmode (the one-shot
    /// CLI commands leave the serving processes' view alone).
    pub(super) recorder: Option<Recorder>,
    /// Where its resource and prompt notifications go, when anyone listens.
    pub(super) events: Option<EventSender>,
    /// Resource subscriptions held: no idle shutdown while any is.
    pub(super) holds: Arc<AtomicUsize>,
    /// Successful starts so far (a later one is a restart).
    pub(super) starts: AtomicUsize,
}

/// Where a serving zenmode records a server's state and stderr.
pub(super) struct Recorder {
    pub(super) state: Arc<StateFile>,
    pub(super) log: Arc<std::sync::OnceLock<Option<StderrLog>>>,
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
        let window = config.timeout;
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
            routes: ProgressRoutes::default(),
            callers: Callers::new(window),
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
    pub fn with_events(mut self, events: EventSender) -> Self {
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

    /// Keeps the server's state file and stderr log in the state directory.
    pub fn recording_state(mut self) -> Self {
        self.recorder = Some(Recorder {
            state: Arc::new(StateFile::new(
                self.dirs.clone(),
                &self.config.name,
                self.config.fingerprint(),
            )),
            log: Arc::default(),
        });
        self
    }

    pub(super) fn record(
        &self,
        change: impl FnOnce(&mut crate::gateway::status_file::ServerState),
    ) {
        if let Some(recorder) = &self.recorder {
            recorder.state.update(change);
        }
    }

    pub(super) fn record_failure(&self, message: &str) {
        let tail: Vec<String> = self
            .stderr_tail
            .lock()
            .map(|tail| tail.iter().cloned().collect())
            .unwrap_or_default();
        let message = self.secrets().redact(message);
        let failed_as = crate::gateway::oauth::failure_state(self.name(), &message);
        self.record(|state| {
            state.state = failed_as.into();
            state.pid = None;
            state.last_error = Some(message);
            state.stderr_tail = tail;
        });
    }

    /// What is hidden in everything relayed from this server (results,
    /// errors, progress): its entry's secrets and every OAuth token, refresh
    /// token and client secret this process holds, whichever server they
    /// belong to.
    pub(super) fn secrets(&self) -> Redactor {
        crate::gateway::oauth::token_file::with_held(&self.redactor)
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn set_pins(&self, pins: Pins) {
        if let Ok(mut slot) = self.pins.lock() {
            *slot = Some(pins);
        }
    }
}
