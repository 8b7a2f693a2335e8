//! Where sessions come from: stdin/stdout, or a TCP listener with one
//! independent session per connection.

use std::{io::Write, net::SocketAddr};

use rmcp::service::serve_server_with_ct;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpListener,
};
use tokio_util::sync::CancellationToken;

use crate::{server::ZenServer, transport::LineTransport};

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
    let transport = LineTransport::new(reader, writer, max_message_bytes);
    match serve_server_with_ct(server, transport, shutdown.child_token()).await {
        Ok(running) => {
            if let Err(error) = running.waiting().await {
                tracing::warn!(%error, "session task failed");
            }
        }
        // A client that leaves before its first request is not an error worth shouting about.
        Err(error) => tracing::info!(%error, "session ended before it started"),
    }
}

/// Serves MCP on stdin/stdout; returns when stdin closes or on shutdown.
pub async fn serve_stdio(server: ZenServer, max_message_bytes: usize, shutdown: CancellationToken) {
    tracing::info!("serving MCP on stdio");
    serve_session(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        max_message_bytes,
        shutdown,
    )
    .await;
}

/// Refuses a non-loopback address unless remote access was asked for explicitly.
pub fn check_listen_address(address: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if address.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {address}: it is reachable from other machines and the server has no authentication; use a loopback address (127.0.0.1) or pass --allow-remote"
        ))
    }
}

/// Accepts connections until shutdown; each gets its own session task.
pub async fn serve_tcp(
    server: ZenServer,
    listener: TcpListener,
    max_message_bytes: usize,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    // Tests and scripts read this line to find an ephemeral port.
    // Not eprintln!: a closed stderr must not end the server.
    let _ = writeln!(std::io::stderr(), "zenmode: listening on {local}");
    tracing::info!(%local, "serving MCP over TCP");
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Running out of file descriptors and similar are transient.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return Ok(()),
        };
        let _ = stream.set_nodelay(true);
        let (reader, writer) = stream.into_split();
        let session = server.new_session();
        let token = shutdown.clone();
        tokio::spawn(async move {
            tracing::debug!(%peer, "connection opened");
            serve_session(session, reader, writer, max_message_bytes, token).await;
            tracing::debug!(%peer, "connection closed");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed_and_remote_needs_the_flag() {
        let local: SocketAddr = "127.0.0.1:7400".parse().unwrap();
        let v6_local: SocketAddr = "[::1]:7400".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7400".parse().unwrap();
        assert!(check_listen_address(local, false).is_ok());
        assert!(check_listen_address(v6_local, false).is_ok());
        let err = check_listen_address(any, false).unwrap_err();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_listen_address(any, true).is_ok());
    }
}
