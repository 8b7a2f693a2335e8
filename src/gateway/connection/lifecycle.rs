//! An upstream's life: started on first use (one start at a time), a
//! failed start or a crash remembered and retried after a growing backoff,
//! stopped once idle (unless a resource subscription holds it), and
//! stopped for good at shutdown.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use super::{
    running::Connection,
    upstream::{Slot, Upstream},
};
use crate::gateway::error::FailureKind;
use crate::gateway::{error::GatewayError, events::UpstreamEvent};

/// The longest wait before restarting a server that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long a start (spawn, initialize, list tools) may take at most.
const MAX_START: Duration = Duration::from_secs(60);

impl Upstream {
    /// Passes the client's `roots/list_changed` on, if the server runs.
    pub(in crate::gateway) async fn notify_roots_changed(&self) {
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

    /// The running connection, starting the server when needed.
    pub(super) async fn connection(&self) -> Result<Arc<Connection>, GatewayError> {
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
                    FailureKind::UpstreamUnavailable,
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
                    let _ = events.send(UpstreamEvent::Restarted {
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
                Err(self.error(FailureKind::UpstreamUnavailable, message))
            }
        }
    }

    fn bump_failures(&self) -> u32 {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        *failures += 1;
        *failures
    }

    pub(super) async fn note_crash(&self, crashed: &Arc<Connection>, message: &str) {
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
    fn backoff_retries_at_once_then_doubles_up_to_a_cap() {
        assert_eq!(backoff(1), Duration::ZERO);
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(2));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
