//! The storage of conversation threads behind one trait
//! ([`ConversationStore`]), so a shared store (SQLite, Redis) can replace
//! the in-memory one without touching the modes.

use super::{
    error::MemoryError,
    thread::{Thread, Turn},
};

/// Storage of conversation threads. Implementations are shared by every
/// session, so they must be safe to call concurrently.
#[async_trait::async_trait]
pub trait ConversationStore: Send + Sync {
    /// Starts a thread with its first turn and returns its new id (a UUID
    /// v4).
    async fn create(&self, first: Turn) -> Result<String, MemoryError>;

    /// The thread with this id, if it exists and has not expired.
    async fn get(&self, id: &str) -> Result<Thread, MemoryError>;

    /// Adds a turn and returns the thread's turn count after it.
    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError>;

    /// Deletes a thread now, before its expiry (an ended session's result
    /// handles). A store that cannot keeps it until it expires: Redis
    /// deletes its keys at their expiry itself.
    async fn delete(&self, id: &str) -> Result<(), MemoryError> {
        let _ = id;
        Ok(())
    }
}
