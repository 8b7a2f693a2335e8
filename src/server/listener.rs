//! Where sessions come from: stdin/stdout, or a TCP listener with one
//! independent session per connection.

use std::{
    future::Future,
    io::{self, Read, Write},
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Duration,
};

use rmcp::service::serve_server_with_ct;
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf},
    net::{TcpListener, TcpSocket, TcpStream},
    sync::{Semaphore, mpsc, oneshot},
};
use tokio_util::sync::{CancellationToken, PollSender};

use crate::{server::ZenServer, server::logging::RateLimit, server::transport::LineTransport};

/// Serves one session over any byte stream until the peer leaves or `shutdown` fires.
pub async fn serve_session<R, W>(
    server: ZenServer,
    reader: R,
    writer: W,
    max_message_bytes: usize,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = LineTransport::new(reader, writer, max_message_bytes)
        .with_owed_notices(server.owed_notices());
    run_session(server, transport, shutdown).await;
}

async fn run_session<R, W>(
    server: ZenServer,
    transport: LineTransport<R, W>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ended = server.session_end();
    match serve_server_with_ct(server, transport, shutdown.child_token()).await {
        Ok(running) => {
            if let Err(error) = running.waiting().await {
                tracing::warn!(%error, "session task failed");
            }
        }
        // A client that leaves before its first request is not an error worth shouting about.
        Err(error) => tracing::info!(%error, "session ended before it started"),
    }
    ended.await;
}

/// Serves MCP on stdin/stdout; returns when stdin closes or on shutdown.
///
/// stdin and stdout are served by threads of their own rather than tokio's
/// `stdin()`/`stdout()`: those run blocking reads and writes on the
/// runtime's blocking pool, and the runtime waits for them when it shuts
/// down, so a read that never returns (stdin left open) kept the process
/// alive after SIGTERM. A plain thread stuck in `read` does not hold the
/// process up.
pub async fn serve_stdio(server: ZenServer, max_message_bytes: usize, shutdown: CancellationToken) {
    tracing::info!("serving MCP on stdio");
    serve_session(
        server,
        ThreadStdin::spawn(),
        ThreadStdout::spawn(),
        max_message_bytes,
        shutdown,
    )
    .await;
}

/// Bytes from stdin, read on a dedicated thread.
pub struct ThreadStdin {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    chunk: Vec<u8>,
    offset: usize,
    done: bool,
}

impl ThreadStdin {
    pub fn spawn() -> Self {
        let (sender, chunks) = mpsc::channel(4);
        let spawned = std::thread::Builder::new()
            .name("zenmode-stdin".to_owned())
            .spawn(move || {
                let mut stdin = io::stdin().lock();
                loop {
                    let mut buffer = vec![0; 64 * 1024];
                    let result = match stdin.read(&mut buffer) {
                        Ok(0) => return,
                        Ok(read) => {
                            buffer.truncate(read);
                            Ok(buffer)
                        }
                        Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                        Err(error) => Err(error),
                    };
                    let failed = result.is_err();
                    if sender.blocking_send(result).is_err() || failed {
                        return;
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the stdin thread");
        }
        ThreadStdin {
            chunks,
            chunk: Vec::new(),
            offset: 0,
            done: false,
        }
    }
}

impl AsyncRead for ThreadStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while this.offset >= this.chunk.len() {
            if this.done {
                return Poll::Ready(Ok(()));
            }
            match ready!(this.chunks.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.chunk = chunk;
                    this.offset = 0;
                }
                Some(Err(error)) => {
                    this.done = true;
                    return Poll::Ready(Err(error));
                }
                None => {
                    this.done = true;
                    return Poll::Ready(Ok(()));
                }
            }
        }
        let count = buf.remaining().min(this.chunk.len() - this.offset);
        buf.put_slice(&this.chunk[this.offset..this.offset + count]);
        this.offset += count;
        Poll::Ready(Ok(()))
    }
}

enum Output {
    Bytes(Vec<u8>),
    /// Answered once everything before it was written and flushed.
    Flush(oneshot::Sender<()>),
}

/// Bytes to stdout, written on a dedicated thread. A flush completes once
/// the thread has written and flushed everything before it; after a write
/// error (stdout closed) every later write fails with `BrokenPipe`.
pub struct ThreadStdout {
    sender: PollSender<Output>,
    flushing: Option<oneshot::Receiver<()>>,
}

impl ThreadStdout {
    pub fn spawn() -> Self {
        let (sender, mut receiver) = mpsc::channel::<Output>(16);
        let spawned = std::thread::Builder::new()
            .name("zenmode-stdout".to_owned())
            .spawn(move || {
                let mut stdout = io::stdout().lock();
                while let Some(output) = receiver.blocking_recv() {
                    match output {
                        Output::Bytes(bytes) => {
                            if stdout.write_all(&bytes).is_err() {
                                return;
                            }
                        }
                        Output::Flush(done) => {
                            if stdout.flush().is_err() {
                                return;
                            }
                            let _ = done.send(());
                        }
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the stdout thread");
        }
        ThreadStdout {
            sender: PollSender::new(sender),
            flushing: None,
        }
    }

    fn closed() -> io::Error {
        io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed")
    }
}

impl AsyncWrite for ThreadStdout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if ready!(self.sender.poll_reserve(cx)).is_err() {
            return Poll::Ready(Err(Self::closed()));
        }
        self.sender
            .send_item(Output::Bytes(buf.to_vec()))
            .map_err(|_| Self::closed())?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.flushing.is_none() {
            if ready!(self.sender.poll_reserve(cx)).is_err() {
                return Poll::Ready(Err(Self::closed()));
            }
            let (done, acknowledged) = oneshot::channel();
            self.sender
                .send_item(Output::Flush(done))
                .map_err(|_| Self::closed())?;
            self.flushing = Some(acknowledged);
        }
        let Some(acknowledged) = self.flushing.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let result = ready!(Pin::new(acknowledged).poll(cx));
        self.flushing = None;
        Poll::Ready(result.map_err(|_| Self::closed()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// Refuses a non-loopback address unless remote access was asked for
/// explicitly. An IPv4-mapped IPv6 loopback (`[::ffff:127.0.0.1]`) is
/// loopback.
pub fn check_listen_address(address: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if address.ip().to_canonical().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {address}: it is reachable from other machines and the server has no authentication; use a loopback address (127.0.0.1) or pass --allow-remote"
        ))
    }
}

/// Limits of the TCP listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLimits {
    /// A connection that sends nothing for this long while none of its
    /// requests is in progress is closed, so abandoned connections do not
    /// pile up.
    pub idle_timeout: Duration,
    /// Connections served at once. One more gets a JSON-RPC error line and
    /// is closed.
    pub max_connections: usize,
    /// Connections the kernel queues before they are accepted.
    pub backlog: u32,
}

impl TcpLimits {
    pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 300;
    pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
    pub const DEFAULT_BACKLOG: u32 = 1024;
}

impl Default for TcpLimits {
    fn default() -> Self {
        TcpLimits {
            idle_timeout: Duration::from_secs(Self::DEFAULT_IDLE_TIMEOUT_SECS),
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            backlog: Self::DEFAULT_BACKLOG,
        }
    }
}

/// Binds a listener with a backlog of `backlog` connections (the standard
/// library's default of 128 drops connections under bursts).
pub async fn bind(address: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(backlog)
}

/// Accepts connections until shutdown, with the default [`TcpLimits`].
pub async fn serve_tcp(
    server: ZenServer,
    listener: TcpListener,
    max_message_bytes: usize,
    shutdown: CancellationToken,
) -> io::Result<()> {
    serve_tcp_with(
        server,
        listener,
        max_message_bytes,
        TcpLimits::default(),
        shutdown,
    )
    .await
}

/// Accepts connections until shutdown; each gets its own session task, up
/// to `limits.max_connections` at once.
pub async fn serve_tcp_with(
    server: ZenServer,
    listener: TcpListener,
    max_message_bytes: usize,
    limits: TcpLimits,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    // Tests and scripts read this line to find an ephemeral port.
    crate::server::logging::print(&format!("zenmode: listening on {local}"));
    tracing::info!(%local, ?limits, "serving MCP over TCP");
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Running out of file descriptors and similar are transient.
                    static ACCEPT_FAILED: RateLimit = RateLimit::new(1);
                    if let Some(suppressed) = ACCEPT_FAILED.allow() {
                        tracing::warn!(%error, suppressed, "accept failed");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, limits.max_connections));
            continue;
        };
        let session = server.new_session();
        let token = shutdown.clone();
        tokio::spawn(async move {
            tracing::debug!(%peer, "connection opened");
            let (reader, writer) = stream.into_split();
            let transport = LineTransport::new(reader, writer, max_message_bytes)
                .with_idle_timeout(Some(limits.idle_timeout))
                .with_owed_notices(session.owed_notices())
                .holding_until_close(slot);
            run_session(session, transport, token).await;
            tracing::debug!(%peer, "connection closed");
        });
    }
}

/// Tells a connection over the cap why it is closed, then closes it. The
/// write has a short deadline so a peer that reads nothing costs nothing.
async fn refuse(mut stream: TcpStream, max_connections: usize) {
    static REFUSED: RateLimit = RateLimit::new(1);
    if let Some(suppressed) = REFUSED.allow() {
        tracing::warn!(
            max_connections,
            suppressed,
            "refused a connection: too many open"
        );
    }
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32000,
        "message": format!("Server busy: it already serves {max_connections} connections, its limit; try again later"),
    }});
    let mut line = body.to_string().into_bytes();
    line.push(b'\n');
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(&line).await?;
        stream.shutdown().await
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed_and_remote_needs_the_flag() {
        let local: SocketAddr = "127.0.0.1:7400".parse().unwrap();
        let v6_local: SocketAddr = "[::1]:7400".parse().unwrap();
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:7400".parse().unwrap();
        let mapped_remote: SocketAddr = "[::ffff:10.0.0.1]:7400".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7400".parse().unwrap();
        assert!(check_listen_address(local, false).is_ok());
        assert!(check_listen_address(v6_local, false).is_ok());
        assert!(check_listen_address(mapped, false).is_ok());
        assert!(check_listen_address(mapped_remote, false).is_err());
        let err = check_listen_address(any, false).unwrap_err();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_listen_address(any, true).is_ok());
    }
}
