//! What the gateway has learnt about resources, shared by every session
//! ([`Hub`]): which server owns each listed URI and template ([`Route`]),
//! the upstream subscriptions and how many sessions hold each, and the
//! channel of upstream events.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
};

use tokio::sync::broadcast;

use super::events::EventSender;

/// Events kept for a session that is slow to take them.
const EVENT_BACKLOG: usize = 256;

/// A resource's place: the server that owns it and the URI it knows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    pub server: String,
    pub uri: String,
}

/// What the gateway has learnt about resources, shared by every session.
pub struct Hub {
    pub(super) events: EventSender,
    /// URI as listed to clients -> where it lives.
    pub(super) owners: Mutex<HashMap<String, Route>>,
    /// Template as listed to clients -> where it lives.
    pub(super) templates: Mutex<BTreeMap<String, Route>>,
    /// Upstream subscriptions and how many sessions hold each.
    pub(super) subscriptions: Mutex<HashMap<Route, usize>>,
    /// Whether the task that renews subscriptions after a restart runs.
    pub(super) renewing: std::sync::atomic::AtomicBool,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            events: broadcast::channel(EVENT_BACKLOG).0,
            owners: Mutex::default(),
            templates: Mutex::default(),
            subscriptions: Mutex::default(),
            renewing: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Hub {
    pub fn sender(&self) -> EventSender {
        self.events.clone()
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
