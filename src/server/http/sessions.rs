//! A cap on legacy HTTP sessions (`Mcp-Session-Id`).
//!
//! Each session holds its own server and worker (some 135 KB) until it is
//! deleted or sits unused for the idle timeout, so a client looping on
//! `initialize` could otherwise grow the server without bound.
//! [`CappedSessions`] wraps rmcp's in-memory [`LocalSessionManager`]: it
//! counts the sessions, notes when each was last used, and when a new one
//! would pass the cap it first ends the least recently used session that
//! has no response streaming. A client whose session was ended that way is
//! told so (see [`CappedSessions::was_evicted`]) and initializes again.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Instant,
};

use futures_util::{Stream, StreamExt};
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::streamable_http_server::session::{
        ServerSseMessage, SessionId, SessionManager,
        local::{LocalSessionManager, LocalSessionManagerError},
    },
};

use crate::server::logging::RateLimit;

/// How many ended sessions are remembered to tell their clients why.
const REMEMBERED_EVICTIONS: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum CappedSessionError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("too many sessions: all {0} are streaming a response; try again soon")]
    AllBusy(usize),
}

/// rmcp's in-memory sessions, at most `max` at once.
pub struct CappedSessions {
    inner: LocalSessionManager,
    max: usize,
    book: Arc<Mutex<Book>>,
    evictions: RateLimit,
}

#[derive(Default)]
struct Book {
    live: HashMap<SessionId, Use>,
    /// Sessions being created: counted against the cap before they have an id.
    pending: usize,
    evicted: HashSet<SessionId>,
    evicted_order: VecDeque<SessionId>,
}

struct Use {
    last: Instant,
    /// Responses streaming from this session right now.
    streams: usize,
}

impl Book {
    fn touch(&mut self, id: &SessionId) {
        if let Some(entry) = self.live.get_mut(id) {
            entry.last = Instant::now();
        }
    }

    /// The least recently used session with nothing streaming.
    fn idlest(&self) -> Option<SessionId> {
        self.live
            .iter()
            .filter(|(_, entry)| entry.streams == 0)
            .min_by_key(|(_, entry)| entry.last)
            .map(|(id, _)| id.clone())
    }

    fn remember_eviction(&mut self, id: SessionId) {
        if self.evicted_order.len() >= REMEMBERED_EVICTIONS
            && let Some(oldest) = self.evicted_order.pop_front()
        {
            self.evicted.remove(&oldest);
        }
        self.evicted.insert(id.clone());
        self.evicted_order.push_back(id);
    }
}

/// Held by a streaming response: the session is busy until it is dropped.
struct Streaming {
    book: Arc<Mutex<Book>>,
    id: SessionId,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let mut book = lock(&self.book);
        if let Some(entry) = book.live.get_mut(&self.id) {
            entry.streams = entry.streams.saturating_sub(1);
            entry.last = Instant::now();
        }
    }
}

fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CappedSessions {
    pub fn new(inner: LocalSessionManager, max: usize) -> Self {
        CappedSessions {
            inner,
            max: max.max(1),
            book: Arc::default(),
            evictions: RateLimit::new(1),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// True when the cap is reached and every session is streaming, so a
    /// new session would be refused.
    pub fn all_busy(&self) -> bool {
        let book = lock(&self.book);
        book.live.len() + book.pending >= self.max && book.idlest().is_none()
    }

    /// True when `id` was ended to make room for a newer session.
    pub fn was_evicted(&self, id: &str) -> bool {
        lock(&self.book).evicted.contains(id)
    }

    fn touch(&self, id: &SessionId) {
        lock(&self.book).touch(id);
    }

    /// Wraps a response stream so the session counts as busy while it lasts.
    fn streaming<S>(&self, id: &SessionId, stream: S) -> impl Stream<Item = S::Item> + use<S>
    where
        S: Stream,
    {
        {
            let mut book = lock(&self.book);
            if let Some(entry) = book.live.get_mut(id) {
                entry.streams += 1;
                entry.last = Instant::now();
            }
        }
        let guard = Streaming {
            book: self.book.clone(),
            id: id.clone(),
        };
        stream.map(move |message| {
            let _busy = &guard;
            message
        })
    }
}

impl SessionManager for CappedSessions {
    type Error = CappedSessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Room is reserved under the lock, so concurrent initializations
        // cannot pass the cap together.
        let victim = {
            let mut book = lock(&self.book);
            let victim = if book.live.len() + book.pending >= self.max {
                let Some(victim) = book.idlest() else {
                    return Err(CappedSessionError::AllBusy(self.max));
                };
                book.live.remove(&victim);
                book.remember_eviction(victim.clone());
                Some(victim)
            } else {
                None
            };
            book.pending += 1;
            victim
        };
        if let Some(victim) = victim {
            if let Some(suppressed) = self.evictions.allow() {
                tracing::warn!(
                    max = self.max,
                    suppressed,
                    "session ended to make room for a new one: too many sessions"
                );
            }
            if let Err(error) = self.inner.close_session(&victim).await {
                tracing::debug!(%error, "closing an evicted session");
            }
        }
        let created = self.inner.create_session().await;
        let mut book = lock(&self.book);
        book.pending -= 1;
        let (id, transport) = created?;
        book.live.insert(
            id.clone(),
            Use {
                last: Instant::now(),
                streams: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.touch(id);
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.book).live.remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.streaming(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.streaming(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.streaming(id, stream))
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn used(seconds_ago: u64, streams: usize) -> Use {
        Use {
            last: Instant::now() - Duration::from_secs(seconds_ago),
            streams,
        }
    }

    #[test]
    fn the_idlest_session_is_the_least_recently_used_with_nothing_streaming() {
        let mut book = Book::default();
        book.live.insert("recent".into(), used(1, 0));
        book.live.insert("old".into(), used(50, 0));
        book.live
            .insert("oldest-but-streaming".into(), used(100, 1));
        assert_eq!(book.idlest().as_deref(), Some("old"));
        book.touch(&SessionId::from("old"));
        assert_eq!(book.idlest().as_deref(), Some("recent"));
        book.live
            .retain(|id, _| id.as_ref() == "oldest-but-streaming");
        assert_eq!(book.idlest(), None, "a streaming session is never chosen");
    }

    #[test]
    fn ended_sessions_are_remembered_up_to_a_bound() {
        let mut book = Book::default();
        for index in 0..REMEMBERED_EVICTIONS + 10 {
            book.remember_eviction(SessionId::from(index.to_string()));
        }
        assert_eq!(book.evicted.len(), REMEMBERED_EVICTIONS);
        assert_eq!(book.evicted_order.len(), REMEMBERED_EVICTIONS);
        assert!(!book.evicted.contains("0"));
        assert!(
            book.evicted
                .contains(&*(REMEMBERED_EVICTIONS + 9).to_string())
        );
    }
}
