//! What the gateway has learnt about resources, shared by every session
//! ([`Hub`]): which server owns each listed URI ([`Owners`]) and template
//! ([`Route`]), the upstream subscriptions and how many sessions hold each,
//! and the channel of upstream events.
//!
//! The owners are what the servers list now, not all they ever listed: a
//! server's complete listing drops its URIs that the listing no longer
//! holds, and the table holds at most [`MAX_OWNED_URIS`].

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
    time::Instant,
};

use tokio::sync::broadcast;

use super::events::EventSender;

/// Events kept for a session that is slow to take them.
const EVENT_BACKLOG: usize = 256;

/// Listed URIs whose owner the gateway remembers, at most. A URI listed
/// past it is still listed; a read of it finds its server through the
/// templates or, with one server offering resources, that one.
pub const MAX_OWNED_URIS: usize = 100_000;

/// Which server owns each URI listed under its own name.
#[derive(Default)]
pub struct Owners {
    /// URI -> its server and the number of the listing that named it.
    routes: HashMap<String, (String, u64)>,
    /// Each server's latest listing number.
    listing: HashMap<String, u64>,
}

/// What a listing learnt of one URI.
pub enum Claim {
    /// The server owns it (or it was left out of the table, full).
    Own,
    /// Another server listed it first.
    Taken,
}

impl Owners {
    pub fn get(&self, uri: &str) -> Option<Route> {
        self.routes.get(uri).map(|(server, _)| Route {
            server: server.clone(),
            uri: uri.to_owned(),
        })
    }

    /// A listing of `server` starts from its first page.
    pub fn begin(&mut self, server: &str) {
        *self.listing.entry(server.to_owned()).or_default() += 1;
    }

    /// `server` lists `uri` in its current listing.
    pub fn claim(&mut self, server: &str, uri: &str) -> Claim {
        let listing = self.listing.get(server).copied().unwrap_or_default();
        match self.routes.get_mut(uri) {
            Some((owner, _)) if owner != server => Claim::Taken,
            Some((_, seen)) => {
                *seen = listing;
                Claim::Own
            }
            None => {
                if self.routes.len() < MAX_OWNED_URIS {
                    self.routes
                        .insert(uri.to_owned(), (server.to_owned(), listing));
                }
                Claim::Own
            }
        }
    }

    /// `server`'s listing reached its last page: what it no longer lists
    /// is no longer its.
    pub fn end(&mut self, server: &str) {
        let Some(&listing) = self.listing.get(server) else {
            return;
        };
        self.routes
            .retain(|_, (owner, seen)| owner != server || *seen == listing);
    }

    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

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
    pub(super) owners: Mutex<Owners>,
    /// When every server's listing was last read to find an unknown URI
    /// (one such relearning at a time).
    pub(super) learnt: tokio::sync::Mutex<Option<Instant>>,
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
            learnt: tokio::sync::Mutex::new(None),
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
