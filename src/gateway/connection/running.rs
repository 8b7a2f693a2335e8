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

/// Signals a stdio server's process group and every descendant of its
/// leader, the guard: helpers that left the group (`setsid`, a double
/// fork) are still the guard's descendants, since it is a subreaper. The
/// descendants go first, while the guard still holds them.
pub(super) fn signal_group(group: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(leader) = group
        && let Ok(pgid) = libc::pid_t::try_from(leader)
    {
        let signal = match signal {
            Signal::Terminate => {
                crate::platform::process::terminate_descendants(leader);
                libc::SIGTERM
            }
            Signal::Kill => {
                crate::platform::process::kill_descendants(leader);
                libc::SIGKILL
            }
        };
        // SAFETY: killpg has no memory effects; a group that is gone gives ESRCH.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
    #[cfg(not(unix))]
    let _ = (group, signal);
}

/// A just-spawned stdio server: its group and descendants are killed when
/// this is dropped before [`Spawned::defuse`], so a start that fails, or
/// times out and is dropped, leaves nothing running (dropping the child
/// alone would kill only the guard and orphan the rest). The group goes
/// before the child's own kill of the guard, while the guard still holds
/// what it started.
pub(super) struct Spawned {
    group: Option<u32>,
    child: Option<tokio::process::Child>,
}

impl Spawned {
    pub(super) fn new(child: tokio::process::Child) -> Self {
        Spawned {
            group: child.id(),
            child: Some(child),
        }
    }

    pub(super) fn child(&mut self) -> Option<&mut tokio::process::Child> {
        self.child.as_mut()
    }

    /// The group and the child, for the connection that now ends them.
    pub(super) fn defuse(mut self) -> (Option<u32>, Option<tokio::process::Child>) {
        (self.group.take(), self.child.take())
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        signal_group(self.group, Signal::Kill);
    }
}
