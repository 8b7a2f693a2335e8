//! MCP over Streamable HTTP, at `/mcp`.
//!
//! rmcp's service speaks the protocol: POST for requests, SSE when a
//! response streams (progress), legacy sessions (`Mcp-Session-Id`) and the
//! stateless 2026-07-28 requests, the `Mcp-Method` / `Mcp-Name` headers and
//! the `Origin` and `Host` checks. In front of it sits what a server on a
//! network needs besides: bearer tokens, a health endpoint for load
//! balancers, and bounds on what each client can hold: connections (in all
//! and per IP address), time to send a request's headers and then its
//! body, body size, requests in flight, idle connections, and legacy
//! sessions (see [`sessions`]). hyper serves HTTP/1.1 underneath.

mod service;
mod sessions;
mod shared_routes;

pub use service::HttpOptions;
use service::{McpService, mcp_service};

pub use shared_routes::{MakeProfileServer, ProfileRoutes, SharedServing};
use shared_routes::{Occupancy, stop_when_idle};

use std::{
    collections::HashMap,
    convert::Infallible,
    io,
    net::{IpAddr, Ipv6Addr, SocketAddr},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::Incoming,
    header::{self, HeaderValue},
    server::conn::http1,
    service::service_fn,
};
use hyper_util::rt::{TokioIo, TokioTimer};
use sessions::CappedSessions;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::{io::AsyncWriteExt, net::TcpListener, sync::Semaphore};
use tokio_util::sync::CancellationToken;
use tower_service::Service;

use crate::{
    server::ZenServer, server::dashboard::DASHBOARD_PATH, server::logging::RateLimit,
    server::result_handles::HttpPrincipal,
};

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// Where a shared instance serves each profile's MCP endpoint:
/// `/p/NAME/mcp`.
pub const PROFILE_PREFIX: &str = "/p/";
/// The health endpoint's path (no token needed: load balancers poll it).
pub const HEALTH_PATH: &str = "/healthz";

type Body = BoxBody<Bytes, Infallible>;

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
    mcp: McpService,
    sessions: Arc<CappedSessions>,
    /// SHA-256 of the expected token: comparing digests takes the same
    /// time whatever the length or content of what a client sends.
    token_digest: Option<[u8; 32]>,
    in_flight: Semaphore,
    max_body_bytes: usize,
    body_timeout: Duration,
    refusals: RateLimit,
    occupancy: Arc<Occupancy>,
    shared: Option<SharedServing>,
}

/// Open connections per client address.
type PerAddress = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// What a client address is counted as: itself for IPv4 (an IPv4-mapped
/// IPv6 address too), its /64 network for IPv6, since one host commonly
/// holds a whole /64.
fn address_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
    }
}

/// One connection counted against its address; uncounted when dropped.
struct AddressSlot {
    counts: PerAddress,
    address: IpAddr,
}

impl AddressSlot {
    /// Counts a connection from `address`, unless it already has `max`.
    fn take(counts: &PerAddress, address: IpAddr, max: usize) -> Option<Self> {
        let mut map = counts.lock().unwrap_or_else(PoisonError::into_inner);
        let count = map.entry(address).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            counts: counts.clone(),
            address,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut map = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = map.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                map.remove(&self.address);
            }
        }
    }
}

/// Serves HTTP on `listener` until `shutdown` fires; open connections are
/// then closed after their current request.
pub async fn serve_http(
    server: ZenServer,
    listener: TcpListener,
    options: HttpOptions,
    shared: Option<SharedServing>,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let address = listener.local_addr()?;
    let (mcp, sessions) = mcp_service(server, &options, &shutdown);
    let front = Arc::new(Front {
        mcp,
        sessions,
        token_digest: options
            .auth_token
            .as_deref()
            .map(|token| Sha256::digest(token.as_bytes()).into()),
        in_flight: Semaphore::new(options.max_requests_in_flight.max(1)),
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.body_timeout,
        refusals: RateLimit::new(10),
        occupancy: Arc::default(),
        shared,
    });
    if let Some(idle_stop) = front.shared.as_ref().map(|shared| shared.idle_stop) {
        tokio::spawn(stop_when_idle(
            front.occupancy.clone(),
            idle_stop,
            shutdown.clone(),
        ));
    }
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let per_address = PerAddress::default();
    // hyper's header timer also runs while a kept-alive connection waits
    // for its next request, so it bounds idling too.
    let header_timeout = options.header_timeout.min(options.idle_timeout);
    // Tests and scripts read this line to find an ephemeral port.
    crate::server::logging::print(&format!("zenmode: listening on {address}"));
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
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(%error, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(address_slot) = AddressSlot::take(
            &per_address,
            address_key(peer.ip()),
            options.max_connections_per_ip.max(1),
        ) else {
            if let Some(suppressed) = front.refusals.allow() {
                tracing::warn!(
                    address = %peer.ip(),
                    max = options.max_connections_per_ip,
                    suppressed,
                    "connection refused: too many open from one address"
                );
            }
            refuse(stream, TOO_MANY_FROM_ADDRESS);
            continue;
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            if let Some(suppressed) = front.refusals.allow() {
                tracing::warn!(
                    max = options.max_connections,
                    suppressed,
                    "connection refused: too many open"
                );
            }
            refuse(stream, TOO_MANY_CONNECTIONS);
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
        front.occupancy.opened();
        tokio::spawn(async move {
            let counted = front.clone();
            let service = service_fn(move |request| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(handle(&front, request).await) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
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
            drop(address_slot);
            counted.occupancy.closed();
        });
    }
    Ok(())
}

/// Writes a canned 503 on a connection zenmode will not serve, then closes
/// it, off the accept loop.
fn refuse(mut stream: tokio::net::TcpStream, response: &'static [u8]) {
    tokio::spawn(async move {
        let _ = stream.write_all(response).await;
        let _ = stream.shutdown().await;
    });
}

/// What `/` serves: what this is, and where to read on (no data of the
/// server's, so it needs no token).
const ROOT_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>zenmode</title></head>\n<body>\n<h1>zenmode</h1>\n<p>This is a zenmode MCP server. MCP clients connect to <code>/mcp</code> (Streamable HTTP); <code>/healthz</code> answers health checks.</p>\n<p>To connect a client, see <code>docs/clients.md</code> and <code>docs/http-and-stores.md</code> in zenmode's repository, or run <code>zenmode --help</code>.</p>\n</body></html>\n";

const TOO_MANY_CONNECTIONS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: text/plain\r\ncontent-length: 37\r\n\r\nToo many connections; try again soon\n";
const TOO_MANY_FROM_ADDRESS: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-type: text/plain\r\ncontent-length: 55\r\n\r\nToo many connections from your address; try again soon\n";

async fn handle(front: &Front, request: Request<Incoming>) -> Response<Body> {
    match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, HEALTH_PATH) => {
            json_response(StatusCode::OK, r#"{"status":"ok"}"#)
        }
        // Someone who opens the address in a browser learns what it is.
        (&Method::GET | &Method::HEAD, "/") => respond(
            StatusCode::OK,
            "text/html; charset=utf-8",
            ROOT_PAGE.to_owned(),
        ),
        (_, MCP_PATH) => serve_mcp(front, &front.mcp, &front.sessions, request).await,
        (_, path) if front.shared.is_some() && path.starts_with(PROFILE_PREFIX) => {
            let shared = front.shared.as_ref().expect("checked");
            let Some(name) = path
                .strip_prefix(PROFILE_PREFIX)
                .and_then(|rest| rest.strip_suffix(MCP_PATH))
            else {
                return text_response(
                    StatusCode::NOT_FOUND,
                    "Not found: a profile's MCP endpoint is /p/NAME/mcp\n",
                );
            };
            // Before the lookup: without the token, no answer tells which
            // profiles exist (serve_mcp checks again, as for /mcp).
            if !authorized(front, &request) {
                return unauthorized(front);
            }
            match shared.profiles.service(name) {
                Ok((mcp, sessions)) => serve_mcp(front, &mcp, &sessions, request).await,
                Err(problem) => respond(
                    StatusCode::NOT_FOUND,
                    "text/plain; charset=utf-8",
                    format!("Not found: {problem}\n"),
                ),
            }
        }
        (_, path) if front.shared.is_some() && path.starts_with(DASHBOARD_PATH) => {
            let shared = front.shared.as_ref().expect("checked");
            let bearer = authorized(front, &request) && front.token_digest.is_some();
            shared.dashboard.handle(request, bearer).await
        }
        _ => text_response(
            StatusCode::NOT_FOUND,
            "Not found: MCP is served at /mcp, health at /healthz\n",
        ),
    }
}

/// The 401 for a request without the right bearer token.
fn unauthorized(front: &Front) -> Response<Body> {
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
    response
}

/// One request to an MCP endpoint: the token checked, the request bounded,
/// then handed to `mcp`.
async fn serve_mcp(
    front: &Front,
    mcp: &McpService,
    sessions: &CappedSessions,
    mut request: Request<Incoming>,
) -> Response<Body> {
    if !authorized(front, &request) {
        return unauthorized(front);
    }
    // The token has done its job; nothing below should see (or log)
    // it. What it leaves is whose result handles the call may read.
    let session_id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok());
    let principal = match (&front.shared, session_id) {
        (Some(_), Some(session)) => HttpPrincipal::of_session(session),
        _ => HttpPrincipal::of_bearer(
            request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(bearer_token)
                .filter(|_| front.token_digest.is_some()),
        ),
    };
    request.extensions_mut().insert(principal);
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
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let (parts, body) = request.into_parts();
    let body = match read_body(front, body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if session.is_none()
        && sessions.all_busy()
        && let Some(response) = refuse_initialize(front, sessions, &body)
    {
        return response;
    }
    let request = Request::from_parts(parts, Full::new(body));
    let mut mcp = mcp.clone();
    let mut response = match mcp.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    // A session ended to make room for newer ones: say so, so the
    // client knows to initialize again.
    if response.status() == StatusCode::NOT_FOUND
        && session
            .as_deref()
            .is_some_and(|id| sessions.was_evicted(id))
    {
        return respond(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            format!(
                "Not Found: this session was ended to make room for newer ones (the server keeps at most {} sessions); initialize a new session\n",
                sessions.max()
            ),
        );
    }
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

/// The whole request body, read within the body timeout and size limit.
/// The error is the response to send: 408 for a body too slow to arrive,
/// 413 for one too large, 400 for one malformed (a broken chunked
/// encoding, say).
async fn read_body(front: &Front, body: Incoming) -> Result<Bytes, Response<Body>> {
    let reading = Limited::new(body, front.max_body_bytes).collect();
    let error = match tokio::time::timeout(front.body_timeout, reading).await {
        Ok(Ok(collected)) => return Ok(collected.to_bytes()),
        Ok(Err(error)) => error,
        Err(_) => {
            if let Some(suppressed) = front.refusals.allow() {
                tracing::warn!(
                    timeout_secs = front.body_timeout.as_secs_f64(),
                    suppressed,
                    "HTTP request refused: its body did not arrive in time"
                );
            }
            let mut response = respond(
                StatusCode::REQUEST_TIMEOUT,
                "text/plain; charset=utf-8",
                format!(
                    "Request Timeout: the request body did not arrive within {} s\n",
                    front.body_timeout.as_secs_f64()
                ),
            );
            // The rest of the body may still be on its way: this connection
            // cannot carry another request.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(response);
        }
    };
    if error.downcast_ref::<LengthLimitError>().is_some() {
        return Err(respond(
            StatusCode::PAYLOAD_TOO_LARGE,
            "text/plain; charset=utf-8",
            format!(
                "Payload Too Large: request body exceeds {} bytes\n",
                front.max_body_bytes
            ),
        ));
    }
    let mut detail = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        detail = format!("{detail}: {inner}");
        cause = inner.source();
    }
    if let Some(suppressed) = front.refusals.allow() {
        tracing::warn!(error = %detail, suppressed, "HTTP request refused: malformed body");
    }
    Err(respond(
        StatusCode::BAD_REQUEST,
        "text/plain; charset=utf-8",
        format!("Bad Request: the request body could not be read: {detail}\n"),
    ))
}

/// When `body` is an `initialize` request, the 503 that refuses it: every
/// session is streaming a response, so none can be ended to make room.
fn refuse_initialize(
    front: &Front,
    sessions: &CappedSessions,
    body: &[u8],
) -> Option<Response<Body>> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "initialize" {
        return None;
    }
    if let Some(suppressed) = front.refusals.allow() {
        tracing::warn!(
            max = sessions.max(),
            suppressed,
            "session refused: every session is streaming a response"
        );
    }
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": message.get("id").cloned().unwrap_or(serde_json::Value::Null),
        "error": {
            "code": -32000,
            "message": format!(
                "Too many sessions: all {} are in use; try again soon",
                sessions.max()
            ),
        },
    });
    let mut response = respond(
        StatusCode::SERVICE_UNAVAILABLE,
        "application/json",
        reply.to_string(),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    Some(response)
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

fn respond(
    status: StatusCode,
    content_type: &'static str,
    text: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(text.into()).boxed());
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
        assert!(
            no_token.contains(crate::platform::settings::AUTH_TOKEN),
            "{no_token}"
        );
        assert!(check_http_address(any, true, true).is_ok());
    }

    #[test]
    fn connections_are_counted_per_address_and_per_ipv6_network() {
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(address_key(v4), v4);
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), v4);
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let elsewhere: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(one), address_key(other));
        assert_ne!(address_key(one), address_key(elsewhere));

        let counts = PerAddress::default();
        let first = AddressSlot::take(&counts, v4, 2).unwrap();
        let second = AddressSlot::take(&counts, v4, 2).unwrap();
        assert!(AddressSlot::take(&counts, v4, 2).is_none());
        assert!(AddressSlot::take(&counts, address_key(one), 2).is_some());
        drop(first);
        let third = AddressSlot::take(&counts, v4, 2).unwrap();
        drop((second, third));
        assert!(
            counts.lock().unwrap().is_empty(),
            "an address with no connection is forgotten"
        );
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
