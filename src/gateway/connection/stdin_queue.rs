//! What zenmode writes to a stdio upstream's stdin goes through a queue
//! that a task of its own drains, so that writing never waits on the
//! server.
//!
//! rmcp's stream transport answers a well-formed line that is not a
//! JSON-RPC message with an error written from inside its read path, and
//! its sends share one lock with that write. A server that stops reading
//! its stdin while it writes to stdout (the chaos upstream of the fuzz
//! campaign: a notification flood, a long reply) then blocks zenmode's
//! read of its stdout, zenmode's write blocks the server's, and neither
//! moves again: every later call to it waited forever, past its timeout,
//! since the cancel sent at the timeout queued behind the blocked write.
//! Behind the queue a write returns at once, the server's stdout is always
//! read, and a server that leaves more than [`MAX_QUEUED_BYTES`] unread
//! fails the writes that follow instead of holding them.

use std::{
    io,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use bytes::BytesMut;
use tokio::{
    io::{AsyncWrite, AsyncWriteExt},
    sync::Notify,
};

/// Bytes a server may leave unread before writes to it fail. Far more than
/// a server that reads its input ever leaves (a request is at most the
/// session's message limit, 4 MiB by default), small enough to bound what
/// a server that never reads costs.
pub(super) const MAX_QUEUED_BYTES: usize = 32 * 1024 * 1024;

#[derive(Default)]
struct State {
    queued: BytesMut,
    /// The writer has nothing more to send after `queued`.
    closed: bool,
    /// The server's stdin failed (it exited or closed it).
    broken: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Notify,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The write side handed to rmcp: it queues and returns.
pub(super) struct QueuedStdin {
    shared: Arc<Shared>,
    server: String,
}

/// Starts the task that writes the queue into `stdin`; returns the side
/// rmcp writes to.
pub(super) fn queued_stdin(
    mut stdin: impl AsyncWrite + Unpin + Send + 'static,
    server: String,
) -> QueuedStdin {
    let shared = Arc::new(Shared::default());
    let drained = shared.clone();
    tokio::spawn(async move {
        loop {
            let (chunk, closed) = {
                let mut state = drained.state();
                (state.queued.split().freeze(), state.closed)
            };
            if chunk.is_empty() {
                if closed {
                    let _ = stdin.shutdown().await;
                    return;
                }
                drained.wake.notified().await;
                continue;
            }
            let written = stdin.write_all(&chunk).await;
            let written = match written {
                Ok(()) => stdin.flush().await,
                Err(error) => Err(error),
            };
            if written.is_err() {
                let mut state = drained.state();
                state.broken = true;
                state.queued = BytesMut::new();
                return;
            }
        }
    });
    QueuedStdin { shared, server }
}

impl AsyncWrite for QueuedStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut state = self.shared.state();
        if state.broken || state.closed {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("server {:?} no longer reads its input", self.server),
            )));
        }
        if state.queued.len().saturating_add(buf.len()) > MAX_QUEUED_BYTES {
            return Poll::Ready(Err(io::Error::other(format!(
                "server {:?} left {} bytes of its input unread; zenmode does not queue more",
                self.server,
                state.queued.len()
            ))));
        }
        state.queued.extend_from_slice(buf);
        drop(state);
        // A stored permit when the writer is busy: it looks again.
        self.shared.wake.notify_one();
        Poll::Ready(Ok(buf.len()))
    }

    /// Done as far as the caller can wait for: waiting for the server to
    /// read is what this queue is there to avoid.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shared.state().closed = true;
        self.shared.wake.notify_one();
        Poll::Ready(Ok(()))
    }
}

impl Drop for QueuedStdin {
    fn drop(&mut self) {
        self.shared.state().closed = true;
        self.shared.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn writes_return_while_the_reader_waits_and_arrive_in_order() {
        let (writer, mut reader) = tokio::io::duplex(16);
        let mut queued = queued_stdin(writer, "s".into());
        // Far more than the pipe holds, and nobody reads yet.
        for n in 0..100u8 {
            queued.write_all(&[n; 100]).await.unwrap();
        }
        queued.shutdown().await.unwrap();
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        assert_eq!(all.len(), 10_000);
        assert!(all.chunks(100).enumerate().all(|(n, c)| c[0] == n as u8));
    }

    #[tokio::test]
    async fn a_server_that_never_reads_fails_writes_past_the_cap() {
        let (writer, _reader) = tokio::io::duplex(16);
        let mut queued = queued_stdin(writer, "deaf".into());
        let chunk = vec![b'x'; 1024 * 1024];
        let mut failed = None;
        for _ in 0..=MAX_QUEUED_BYTES / chunk.len() + 1 {
            if let Err(error) = queued.write_all(&chunk).await {
                failed = Some(error);
                break;
            }
        }
        let error = failed.expect("a write past the cap fails");
        assert!(error.to_string().contains("unread"), "{error}");
    }
}
