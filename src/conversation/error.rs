//! Why a thread cannot be used ([`MemoryError`]): unknown, expired,
//! evicted, full, an invalid id, a store that is unavailable, a thread too
//! large. Every message tells the agent how to go on.

/// Why a thread cannot be used. Every message tells the agent how to go on:
/// a new thread starts when `continuation_id` is omitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "conversation {id} is unknown (the server may have restarted since it was created); omit continuation_id to start a new conversation"
    )]
    Unknown { id: String },
    #[error(
        "conversation {id} has expired after too long without activity; omit continuation_id to start a new conversation"
    )]
    Expired { id: String },
    /// Dropped while still active to keep memory bounded.
    #[error(
        "conversation {id} was dropped to bound the server's memory (too many or too large conversations); omit continuation_id to start a new conversation"
    )]
    Evicted { id: String },
    #[error(
        "conversation {id} has reached its limit of {max_turns} turns; omit continuation_id to start a new conversation, restating what matters from this one"
    )]
    Full { id: String, max_turns: usize },
    #[error(
        "continuation_id {id:?} is not a valid conversation id (a UUID issued by this server); omit continuation_id to start a new conversation"
    )]
    InvalidId { id: String },
    /// The store could not be reached or failed; nothing was written.
    #[error(
        "the conversation store is unavailable ({reason}); nothing was saved, so the same call can be retried once it is back"
    )]
    Unavailable { reason: String },
    /// A thread that would outgrow the whole memory bound by itself.
    #[error(
        "this turn would make the conversation {bytes} bytes, more than the {max_bytes} bytes conversation memory holds; send less content, or omit continuation_id to start a new conversation"
    )]
    TooLarge { bytes: usize, max_bytes: usize },
}

impl MemoryError {
    /// Longest id echoed back in [`MemoryError::InvalidId`]: the id is
    /// untrusted input and may be huge.
    const SHOWN_ID_CHARS: usize = 64;

    /// An [`MemoryError::InvalidId`] echoing at most the first 64
    /// characters of `id`.
    pub fn invalid_id(id: &str) -> Self {
        let mut shown: String = id.chars().take(Self::SHOWN_ID_CHARS).collect();
        if shown.len() < id.len() {
            shown.push('…');
        }
        Self::InvalidId { id: shown }
    }
}
