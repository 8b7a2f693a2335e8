//! A started upstream ([`Connection`]): its MCP session, the tools it
//! lists, the capabilities it declared, its process group (for a stdio
//! server) and when it was last used. However a connection is dropped, its
//! process group does not outlive it.

use std::{
    collections::HashMap,
    sync::{Mutex, atomic::AtomicUsize},
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient,
    service::{Peer, RunningService},
};
use serde_json::Value;

use super::client::ClientSide;

/// A started upstream.
pub(super) struct Connection {
    pub(super) service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientSide>>>,
    pub(super) peer: Peer<RoleClient>,
    /// The tool definitions the running server lists, by name.
    pub(super) live: HashMap<String, Value>,
    /// The capabilities it declared in its `initialize` answer.
    pub(super) capabilities: Value,
    /// Process group of a stdio server (its leader's pid).
    pub(super) group: Option<u32>,
    /// A stdio server's process, killed if the connection is dropped.
    pub(super) _child: Option<tokio::process::Child>,
    pub(super) started: Instant,
    pub(super) last_used: Mutex<Instant>,
    pub(super) in_flight: AtomicUsize,
}

impl Connection {
    pub(super) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    pub(super) fn touch(&self) {
        if let Ok(mut last) = self.last_used.lock() {
            *last = Instant::now();
        }
    }

    pub(super) fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .map(|last| last.elapsed())
            .unwrap_or_default()
    }

    /// Closes the session, then makes sure the process group is gone.
    pub(super) async fn stop(&self) {
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

pub(super) enum Signal {
    Terminate,
    Kill,
}

pub(super) fn signal_group(group: Option<u32>, signal: Signal) {
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
