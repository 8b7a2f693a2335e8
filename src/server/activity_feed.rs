//! The recent calls a shared instance's dashboard shows, per client, and the
//! stream that brings each new one to an open dashboard.
//!
//! Only what the activity log line holds is kept (tool, mode, server,
//! duration, outcome, size), never arguments or results, plus the client's
//! name and profile and what the client did not have to carry: the bytes of
//! the full tool list against those of the list the session has.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};

use serde::Serialize;
use tokio::sync::broadcast;

/// How many calls are kept.
pub const KEPT_CALLS: usize = 200;

/// One tool call, as the dashboard shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Milliseconds since the epoch, when it ended.
    pub at_ms: u64,
    /// The client's name from `initialize` (`-` before it).
    pub client: String,
    /// The session's profile (`-`: all servers).
    pub profile: String,
    pub tool: String,
    pub mode: String,
    pub server: String,
    pub ms: u64,
    pub outcome: String,
    pub bytes: usize,
    /// Tokens of the full tool list this session was not sent, estimated
    /// at four bytes a token.
    pub tokens_saved: usize,
}

/// The recent calls, shared by every session of a process.
#[derive(Debug)]
pub struct ActivityFeed {
    recent: Mutex<VecDeque<CallRecord>>,
    live: broadcast::Sender<CallRecord>,
}

impl Default for ActivityFeed {
    fn default() -> Self {
        ActivityFeed {
            recent: Mutex::new(VecDeque::with_capacity(KEPT_CALLS)),
            live: broadcast::channel(64).0,
        }
    }
}

impl ActivityFeed {
    pub fn shared() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Keeps `call` (the oldest goes past [`KEPT_CALLS`]) and sends it to
    /// every open dashboard; never waits.
    pub fn push(&self, call: CallRecord) {
        {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            if recent.len() >= KEPT_CALLS {
                recent.pop_front();
            }
            recent.push_back(call.clone());
        }
        let _ = self.live.send(call);
    }

    /// The kept calls, newest first.
    pub fn recent(&self) -> Vec<CallRecord> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.iter().rev().cloned().collect()
    }

    /// New calls as they happen (a slow reader misses some, never blocks).
    pub fn subscribe(&self) -> broadcast::Receiver<CallRecord> {
        self.live.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: usize) -> CallRecord {
        CallRecord {
            at_ms: n as u64,
            client: "c".into(),
            profile: "-".into(),
            tool: "zen_execute".into(),
            mode: format!("m{n}"),
            server: "-".into(),
            ms: 1,
            outcome: "ok".into(),
            bytes: 2,
            tokens_saved: 3,
        }
    }

    #[test]
    fn the_feed_keeps_the_newest_calls_and_sends_each_live() {
        let feed = ActivityFeed::default();
        let mut live = feed.subscribe();
        for n in 0..KEPT_CALLS + 5 {
            feed.push(call(n));
        }
        let recent = feed.recent();
        assert_eq!(recent.len(), KEPT_CALLS);
        assert_eq!(recent[0].mode, format!("m{}", KEPT_CALLS + 4));
        assert_eq!(recent.last().unwrap().mode, "m5");
        // The channel holds 64: a slow reader is told it lagged, then reads on.
        assert!(matches!(
            live.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        assert!(live.try_recv().is_ok());
    }
}
