//! Helpers for tests that talk to `zenmode serve --transport http`.

use super::{REPLY_TIMEOUT, STATELESS_VERSION, TcpServer, zenmode};

/// What an MCP client accepts from `/mcp`.
pub const ACCEPT: &str = "application/json, text/event-stream";

/// `zenmode serve --transport http` on an ephemeral loopback port.
pub fn http_server(extra: &[&str]) -> TcpServer {
    let mut args = vec!["serve", "--transport", "http", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    TcpServer::spawn(zenmode(&args))
}

/// A one-thread runtime for the async client.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An HTTP client that gives up after [`REPLY_TIMEOUT`].
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(REPLY_TIMEOUT)
        .build()
        .unwrap()
}

/// A stateless 2026-07-28 POST to `/mcp` with the headers a client sends
/// (`Mcp-Name` when the request names a tool or resource); the caller adds
/// the body and any token.
pub fn stateless_post(
    client: &reqwest::Client,
    server: &TcpServer,
    method: &str,
    name: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = client
        .post(format!("http://{}/mcp", server.address))
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("mcp-protocol-version", STATELESS_VERSION)
        .header("mcp-method", method);
    match name {
        Some(name) => request.header("mcp-name", name),
        None => request,
    }
}
