//! What an upstream tells its client that sessions may care about
//! ([`UpstreamEvent`]): resource updates, changed lists, a restart. A
//! running server sends them on the gateway's broadcast channel
//! ([`EventSender`]); each session, and the task that renews
//! subscriptions after a restart, listens.

use tokio::sync::broadcast;

/// What an upstream told its client, for the sessions that care.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamEvent {
    ResourceUpdated {
        server: String,
        uri: String,
    },
    ResourcesChanged,
    PromptsChanged,
    /// A server started again (after a crash or an idle stop).
    Restarted {
        server: String,
    },
}

pub type EventSender = broadcast::Sender<UpstreamEvent>;
