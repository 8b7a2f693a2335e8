//! One server's MCP service with the listener's limits (rmcp's Streamable
//! HTTP service over capped sessions), and the listener's options: shared
//! by `/mcp` and each profile's endpoint of a shared instance.

use std::{sync::Arc, time::Duration};

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

use super::sessions::CappedSessions;
use crate::server::ZenServer;

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
    /// A legacy session unused for this long is ended; a connection waiting
    /// for its next request is closed after this or `header_timeout`,
    /// whichever is shorter.
    pub idle_timeout: Duration,
    /// Legacy sessions held at once; a new one past this ends the least
    /// recently used session that has no response streaming (or gets 503
    /// when every session is streaming).
    pub max_sessions: usize,
    /// Connections from one IP address at once; one more gets 503 and is
    /// closed, so one address cannot take every connection.
    pub max_connections_per_ip: usize,
    /// A connection must send a request's headers within this long from
    /// when the server starts waiting for them (hyper's one timer covers
    /// both a slow client and a kept-alive connection waiting for its next
    /// request); otherwise it is closed.
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this long; otherwise the
    /// request gets 408 and its slot in flight is freed.
    pub body_timeout: Duration,
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
    pub const DEFAULT_MAX_SESSIONS: u64 = 256;
    pub const DEFAULT_MAX_CONNECTIONS_PER_IP: u64 = 64;
    pub const DEFAULT_HEADER_TIMEOUT_SECS: u64 = 10;
    pub const DEFAULT_BODY_TIMEOUT_SECS: u64 = 30;
}

/// rmcp's Streamable HTTP service over one server's sessions.
pub(super) type McpService = StreamableHttpService<ZenServer, CappedSessions>;

/// The MCP service for `server`'s sessions, with the listener's limits.
pub(super) fn mcp_service(
    server: ZenServer,
    options: &HttpOptions,
    shutdown: &CancellationToken,
) -> (McpService, Arc<CappedSessions>) {
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
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = Some(options.idle_timeout);
    let sessions = Arc::new(CappedSessions::new(local, options.max_sessions));
    let mcp =
        StreamableHttpService::new(move || Ok(server.new_session()), sessions.clone(), config);
    (mcp, sessions)
}
