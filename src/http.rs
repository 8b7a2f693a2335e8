//! MCP over Streamable HTTP, at `/mcp`.
//!
//! rmcp's service speaks the protocol: POST for requests, SSE when a
//! response streams (progress), legacy sessions (`Mcp-Session-Id`) and the
//! stateless 2026-07-28 requests, the `Mcp-Method` / `Mcp-Name` headers, the
//! `Origin` and `Host` checks and the body size limit. In front of it sits
//! what a server on a network needs besides: bearer tokens, a health
//! endpoint for load balancers, and bounds on connections, requests in
//! flight and idle connections. hyper serves HTTP/1.1 underneath.

use std::{convert::Infallible, io, net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{self, HeaderValue},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::{io::AsyncWriteExt, net::TcpListener, sync::Semaphore};
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::{logging::RateLimit, server::ZenServer};

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// The health endpoint's path (no token needed: load balancers poll it).
pub const HEALTH_PATH: &str = "/healthz";

type Body = BoxBody<Bytes, Infallible>;

/// Pages served from this machine may always call: a DNS-rebinding page
/// carries its own site's origin, never a loopback one.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// How the HTTP listener is set up.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Largest request body; a larger one gets 413.
    pub max_body_bytes: usize,
    /// Connections served at once; one more gets 503 and is closed.
    pub max_connections: usize,
    /// Requests to `/mcp` in progress at once; one more gets 503.
    pub max_requests_in_flight: usize,
    /// A connection that sends no request for this long is closed; a legacy
    /// session unused for this long is ended.
    pub idle_timeout: Duration,
    /// When set, `/mcp` requires `Authorization: Bearer <token>`.
    pub auth_token: Option<String>,
    /// Browser origins allowed besides the loopback ones: a request with any
    /// other `Origin` gets 403 (requests without `Origin` are not from
    /// browsers).
    pub allowed_origins: Vec<String>,
    /// Host names accepted in `Host`; `None` keeps the loopback names, an
    /// empty list accepts any (for a remote server behind a token).
    pub allowed_hosts: Option<Vec<String>>,
}

impl HttpOptions {
    pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 256;
}

/// Refuses a listen address other machines can reach unless the user both
/// allowed it and set a token: without one, anyone on the network could
/// drive the server.
pub fn check_http_address(
    address: SocketAddr,
    allow_remote: bool,
    has_token: bool,
) -> Result<(), String> {
    if address.ip().to_canonical().is_loopback() {
        return Ok(());
    }
    match (allow_remote, has_token) {
        (true, true) => Ok(()),
        (false, _) => Err(format!(
            "refusing to listen on {address}: it is reachable from other machines; use a loopback address (127.0.0.1), or pass --allow-remote with a token (--auth-token-file or ZEN_AUTH_TOKEN)"
        )),
        (true, false) => Err(format!(
            "refusing to listen on {address} without a token: --allow-remote needs --auth-token-file FILE or ZEN_AUTH_TOKEN"
        )),
    }
}

/// Everything a request handler needs, shared by all connections.
struct Front {
    mcp: StreamableHttpService<ZenServer, LocalSessionManager>,
    /// SHA-256 of the expected token: comparing digests takes the same
    /// time whatever the length or content of what a client sends.
    token_digest: Option<[u8; 32]>,
    in_flight: Semaphore,
    refusals: RateLimit,
}

/// Serves HTTP on `listener` until `shutdown` fires; open connections are
/// then closed after their current request.
pub async fn serve_http(
    server: ZenServer,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let address = listener.local_addr()?;
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(options.max_body_bytes)
        // A reply that is one message goes back as plain JSON (cheaper for
        // both ends); one preceded by progress notifications still streams.
        .with_json_response(true)
        .with_allowed_origins(
            LOOPBACK_ORIGINS
                .iter()
                .map(|origin| origin.to_string())
                .chain(options.allowed_origins.iter().cloned()),
        )
        .enforce_origin_validation();
    match &options.allowed_hosts {
        None => {}
        Some(hosts) if hosts.is_empty() => config = config.disable_allowed_hosts(),
        Some(hosts) => config = config.with_allowed_hosts(hosts.clone()),
    }
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.idle_timeout);
    let mcp =
        StreamableHttpService::new(move || Ok(server.new_session()), Arc::new(sessions), config);
    let front = Arc::new(Front {
        mcp,
        token_digest: options
            .auth_token
            .as_deref()
            .map(|token| Sha256::digest(token.as_bytes()).into()),
        in_flight: Semaphore::new(options.max_requests_in_flight.max(1)),
        refusals: RateLimit::new(10),
    });
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
    // Tests and scripts read this line to find an ephemeral port.
    crate::logging::print(&format!("zenmode: listening on {address}"));
    tracing::info!(
        %address,
        path = MCP_PATH,
        token = front.token_digest.is_some(),
        "serving MCP over Streamable HTTP"
    );
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (mut stream, _) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            if let Some(suppressed) = front.refusals.allow() {
                tracing::warn!(
                    max = options.max_connections,
                    suppressed,
                    "connection refused: too many open"
                );
            }
            tokio::spawn(async move {
                let _ = stream.write_all(TOO_MANY_CONNECTIONS).await;
                let _ = stream.shutdown().await;
            });
            continue;
        };
        // Replies are written in pieces (headers, then SSE events): without
        // this, Nagle's algorithm holds the last piece for the peer's
        // delayed ACK, some 40 ms per request.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let front = front.clone();
        let shutdown = shutdown.clone();
        let idle_timeout = options.idle_timeout;
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(handle(&front, request).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(idle_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "HTTP connection ended with an error");
                    }
                }
                _ = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(permit);
        });
    }
    Ok(())
}

const TOO_MANY_CONNECTIONS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: text/plain\r\ncontent-length: 37\r\n\r\nToo many connections; try again soon\n";

async fn handle(front: &Front, mut request: Request<Incoming>) -> Response<Body> {
    match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, HEALTH_PATH) => {
            json_response(StatusCode::OK, r#"{"status":"ok"}"#)
        }
        (_, MCP_PATH) => {
            if !authorized(front, &request) {
                if let Some(suppressed) = front.refusals.allow() {
                    tracing::warn!(
                        suppressed,
                        "HTTP request refused: missing or wrong bearer token"
                    );
                }
                let mut response = text_response(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer <token>\n",
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
            // The token has done its job; nothing below should see (or log) it.
            request.headers_mut().remove(header::AUTHORIZATION);
            let Ok(_permit) = front.in_flight.try_acquire() else {
                let mut response = text_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Too many requests in progress; try again soon\n",
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return response;
            };
            let ends_session = request.method() == Method::DELETE;
            let sends_json = request.method() == Method::POST
                && request
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|value| value.to_str().ok())
                    .is_some_and(|value| value.trim_start().starts_with("application/json"));
            let mut mcp = front.mcp.clone();
            let mut response = match mcp.call(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            // rmcp answers a JSON body it cannot parse with 415, as if the
            // media type were wrong; JSON-RPC calls it a parse error.
            if sends_json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the request body is not a JSON-RPC message"}}"#,
                );
            }
            // rmcp answers a session's DELETE with 202; clients (the Python
            // SDK) take only 200 as "ended", and nothing is left pending.
            if ends_session && response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::OK;
            }
            response
        }
        _ => text_response(
            StatusCode::NOT_FOUND,
            "Not found: MCP is served at /mcp, health at /healthz\n",
        ),
    }
}

/// True when no token is set, or the request carries it as a bearer token.
fn authorized(front: &Front, request: &Request<Incoming>) -> bool {
    let Some(expected) = &front.token_digest else {
        return true;
    };
    let Some(presented) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token)
    else {
        return false;
    };
    let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    digest.ct_eq(expected).into()
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is
/// case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

fn text_response(status: StatusCode, text: &'static str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", text)
}

fn json_response(status: StatusCode, json: &'static str) -> Response<Body> {
    respond(status, "application/json", json)
}

fn respond(status: StatusCode, content_type: &'static str, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Reads a token file: the first line, trimmed; an empty one is an error.
pub fn read_token_file(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read the token file {}: {error}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.is_empty() {
        return Err(format!("the token file {} is empty", path.display()));
    }
    Ok(token.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_addresses_need_both_the_flag_and_a_token() {
        let loopback: SocketAddr = "127.0.0.1:7400".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7400".parse().unwrap();
        assert!(check_http_address(loopback, false, false).is_ok());
        assert!(check_http_address("[::1]:7400".parse().unwrap(), false, false).is_ok());
        let no_flag = check_http_address(any, false, true).unwrap_err();
        assert!(no_flag.contains("--allow-remote"), "{no_flag}");
        let no_token = check_http_address(any, true, false).unwrap_err();
        assert!(no_token.contains("ZEN_AUTH_TOKEN"), "{no_token}");
        assert!(check_http_address(any, true, true).is_ok());
    }

    #[test]
    fn bearer_tokens_are_read_from_the_header_value() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer   "), None);
    }

    #[test]
    fn token_files_must_hold_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  s3cret \nignored\n").unwrap();
        assert_eq!(read_token_file(&file).unwrap(), "s3cret");
        std::fs::write(&file, "\n").unwrap();
        assert!(read_token_file(&file).unwrap_err().contains("empty"));
        let missing = read_token_file(&dir.path().join("none")).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
    }
}
