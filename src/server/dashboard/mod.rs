//! The shared instance's dashboard, at `/dashboard` on its loopback port:
//! servers with their state, last error and log tail (restart, enable,
//! disable); tools per server, the quarantined ones to approve or reject;
//! profiles; recent calls per client, arriving live.
//!
//! Who may see it: whoever holds a session cookie, which only a one-time
//! sign-in link gives; `zenmode dashboard` gets that link with the
//! instance's bearer token (only the user can read it). Every request must
//! name the instance itself in `Host` (no DNS rebinding); a request that
//! changes something must also come from the dashboard's own origin, carry
//! the dashboard's header and the session cookie (no cross-site request).
//! The instance's own command line (`status`, `upstream approve`) reaches
//! the same JSON endpoints with the bearer token instead.
//! Nothing shown holds a secret: server targets, errors and logs are the
//! redacted ones the rest of zenmode keeps, passed once more through the
//! log redaction.
//!
//! Server-rendered HTML (minijinja templates in `templates/`), and one small
//! script for the buttons and the live updates (server-sent events).

mod pages;

use std::{
    collections::HashMap,
    convert::Infallible,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::{
    Method, Request, Response, StatusCode,
    body::{Frame, Incoming},
    header::{self, HeaderValue},
};
use tokio_util::sync::CancellationToken;

use super::activity_feed::ActivityFeed;
use crate::engine::Engine;

type Body = BoxBody<Bytes, Infallible>;

/// Where a shared instance serves its dashboard.
pub const DASHBOARD_PATH: &str = "/dashboard";
/// The session cookie's name.
const COOKIE: &str = "zenmode_dashboard";
/// How long a sign-in link can be used (once).
const CODE_LIFETIME: Duration = Duration::from_secs(120);
/// How long a signed-in browser stays signed in.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The header every change must carry: a cross-site form cannot send it,
/// and a cross-site script that tries is stopped by the browser's preflight.
pub const ACTION_HEADER: &str = "x-zenmode-dashboard";
/// Most sign-in links and sessions held at once.
const MAX_HELD: usize = 64;

/// What the dashboard's buttons do; the command line (which owns the
/// upstreams file's edits) implements it.
#[async_trait]
pub trait DashboardActions: Send + Sync {
    async fn set_enabled(&self, server: &str, enabled: bool) -> Result<String, String>;
    async fn restart(&self, server: &str) -> Result<String, String>;
    /// Ends the quarantine of `tool` by approving its current definition.
    async fn approve(&self, server: &str, tool: &str) -> Result<String, String>;
    /// Keeps `tool` out for good (the entry's `deny_tools`).
    async fn reject(&self, server: &str, tool: &str) -> Result<String, String>;
}

/// The dashboard of one shared instance.
pub struct Dashboard {
    engine: Arc<Engine>,
    feed: Arc<ActivityFeed>,
    actions: Arc<dyn DashboardActions>,
    profiles_file: PathBuf,
    port: u16,
    codes: Mutex<HashMap<String, Instant>>,
    sessions: Mutex<HashMap<String, Instant>>,
    shutdown: CancellationToken,
    templates: minijinja::Environment<'static>,
}

impl Dashboard {
    pub fn new(
        engine: Arc<Engine>,
        feed: Arc<ActivityFeed>,
        actions: Arc<dyn DashboardActions>,
        profiles_file: PathBuf,
        port: u16,
        shutdown: CancellationToken,
    ) -> Self {
        Dashboard {
            engine,
            feed,
            actions,
            profiles_file,
            port,
            codes: Mutex::default(),
            sessions: Mutex::default(),
            shutdown,
            templates: pages::templates(),
        }
    }

    /// Answers a request under `/dashboard`; `bearer` says whether it
    /// carried the instance's token (only the sign-in link's minting needs it).
    pub async fn handle(&self, request: Request<Incoming>, bearer: bool) -> Response<Body> {
        if !self.host_is_mine(&request) {
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: the dashboard answers only to its own loopback address\n".into(),
            );
        }
        let path = request.uri().path().to_owned();
        let route = path.trim_start_matches(DASHBOARD_PATH);
        if (request.method(), route) == (&Method::POST, "/api/sign-in-code") {
            return self.mint_code(bearer);
        }
        if (request.method(), route) == (&Method::GET, "/static/dashboard.js") {
            let mut response = respond(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                pages::SCRIPT.to_owned(),
            );
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return response;
        }
        if (request.method(), route) == (&Method::GET, "/sign-in") {
            return self.sign_in(request.uri().query().unwrap_or_default());
        }
        // The token's holder is the user's own command line (`status`,
        // `upstream approve`): no browser ever holds it.
        if !bearer && !self.signed_in(&request) {
            return self.page_response(
                StatusCode::UNAUTHORIZED,
                pages::message(
                    &self.templates,
                    "Sign in",
                    "Run `zenmode dashboard` on this machine: it prints a sign-in link (and opens it).",
                ),
            );
        }
        match (request.method(), route) {
            (&Method::GET, "" | "/") => self.page_response(
                StatusCode::OK,
                pages::servers(&self.templates, &self.engine),
            ),
            (&Method::GET, "/tools") => {
                self.page_response(StatusCode::OK, pages::tools(&self.templates, &self.engine))
            }
            (&Method::GET, "/profiles") => self.page_response(
                StatusCode::OK,
                pages::profiles(&self.templates, &self.profiles_file, &self.engine),
            ),
            (&Method::GET, "/calls") => self.page_response(
                StatusCode::OK,
                pages::calls(&self.templates, &self.feed.recent()),
            ),
            (&Method::GET, "/api/servers") => json(
                StatusCode::OK,
                serde_json::to_string(&pages::server_rows(&self.engine)).unwrap_or_default(),
            ),
            (&Method::GET, "/events") => self.events(),
            (&Method::POST, action) if action.starts_with("/api/") => {
                if !bearer && !self.same_origin_action(&request) {
                    return json(
                        StatusCode::FORBIDDEN,
                        serde_json::json!({"ok": false, "message": "refused: a change must come from the dashboard's own page"}).to_string(),
                    );
                }
                self.act(action).await
            }
            _ => plain(StatusCode::NOT_FOUND, "Not found\n".into()),
        }
    }

    /// Whether `Host` names this instance: a page of another site that
    /// rebinds its name to 127.0.0.1 sends its own name.
    fn host_is_mine(&self, request: &Request<Incoming>) -> bool {
        let Some(host) = request
            .headers()
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        self.own_authorities().iter().any(|own| own == host)
    }

    fn own_authorities(&self) -> [String; 3] {
        [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
            format!("[::1]:{}", self.port),
        ]
    }

    /// A change needs the page's own origin and the dashboard's header.
    fn same_origin_action(&self, request: &Request<Incoming>) -> bool {
        let origin = request
            .headers()
            .get(header::ORIGIN)
            .and_then(|value| value.to_str().ok());
        let origin_ok = origin.is_some_and(|origin| {
            self.own_authorities()
                .iter()
                .any(|own| origin == format!("http://{own}"))
        });
        origin_ok && request.headers().contains_key(ACTION_HEADER)
    }

    /// A one-time sign-in link, for the holder of the instance's token.
    fn mint_code(&self, bearer: bool) -> Response<Body> {
        if !bearer {
            return plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: run `zenmode dashboard` to get a sign-in link\n".into(),
            );
        }
        let Ok(code) = crate::server::shared::random_hex(24) else {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the system's random generator failed\n".into(),
            );
        };
        hold(&self.codes, code.clone(), CODE_LIFETIME);
        let url = format!(
            "http://127.0.0.1:{}{}/sign-in?code={code}",
            self.port, DASHBOARD_PATH
        );
        json(
            StatusCode::OK,
            serde_json::json!({"url": url, "expires_in_secs": CODE_LIFETIME.as_secs()}).to_string(),
        )
    }

    /// Trades a sign-in code (once) for a session cookie.
    fn sign_in(&self, query: &str) -> Response<Body> {
        let code = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("code="))
            .unwrap_or_default();
        if code.is_empty() || !take(&self.codes, code) {
            return self.page_response(
                StatusCode::FORBIDDEN,
                pages::message(
                    &self.templates,
                    "This sign-in link does not work",
                    "It was used already or has expired. Run `zenmode dashboard` again for a new one.",
                ),
            );
        }
        let Ok(session) = crate::server::shared::random_hex(32) else {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the system's random generator failed\n".into(),
            );
        };
        hold(&self.sessions, session.clone(), SESSION_LIFETIME);
        let mut response = plain(StatusCode::SEE_OTHER, "Signed in\n".into());
        let headers = response.headers_mut();
        headers.insert(header::LOCATION, HeaderValue::from_static("/dashboard/"));
        if let Ok(cookie) = HeaderValue::from_str(&format!(
            "{COOKIE}={session}; HttpOnly; SameSite=Strict; Path={}; Max-Age={}",
            DASHBOARD_PATH,
            SESSION_LIFETIME.as_secs()
        )) {
            headers.insert(header::SET_COOKIE, cookie);
        }
        response
    }

    fn signed_in(&self, request: &Request<Incoming>) -> bool {
        let session = request
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .find_map(|pair| {
                pair.trim()
                    .strip_prefix(&format!("{COOKIE}="))
                    .map(str::to_owned)
            });
        session.is_some_and(|session| held(&self.sessions, &session))
    }

    async fn act(&self, action: &str) -> Response<Body> {
        let parts: Vec<&str> = action.trim_start_matches("/api/").split('/').collect();
        let decoded: Vec<String> = parts.iter().map(|part| percent_decode(part)).collect();
        let outcome = match decoded.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["servers", server, "restart"] => self.actions.restart(server).await,
            ["servers", server, "enable"] => self.actions.set_enabled(server, true).await,
            ["servers", server, "disable"] => self.actions.set_enabled(server, false).await,
            ["tools", server, tool, "approve"] => self.actions.approve(server, tool).await,
            ["tools", server, tool, "reject"] => self.actions.reject(server, tool).await,
            _ => Err(format!("no such action: {action}")),
        };
        match outcome {
            Ok(message) => json(
                StatusCode::OK,
                serde_json::json!({"ok": true, "message": message}).to_string(),
            ),
            Err(message) => json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({"ok": false, "message": message}).to_string(),
            ),
        }
    }

    /// Server-sent events: `call` for each call as it ends, `servers` when
    /// the gateway's servers change; a comment every 15 s keeps the stream
    /// open. The stream ends with the instance.
    fn events(&self) -> Response<Body> {
        let state = (
            self.feed.subscribe(),
            self.engine.services().gateway.subscribe(),
            self.shutdown.clone(),
        );
        let stream = futures_util::stream::unfold(
            state,
            |(mut calls, mut servers, shutdown)| async move {
                let text = tokio::select! {
                    _ = shutdown.cancelled() => None,
                    call = calls.recv() => match call {
                        Ok(call) => Some(format!(
                            "event: call\ndata: {}\n\n",
                            serde_json::to_string(&call).unwrap_or_default()
                        )),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            Some(": some calls were skipped\n\n".to_owned())
                        }
                        Err(_) => None,
                    },
                    changed = servers.changed() => match changed {
                        Ok(()) => Some("event: servers\ndata: {}\n\n".to_owned()),
                        Err(_) => None,
                    },
                    _ = tokio::time::sleep(Duration::from_secs(15)) => Some(": keep-alive\n\n".to_owned()),
                }?;
                Some((
                    Ok::<_, Infallible>(Frame::data(Bytes::from(text))),
                    (calls, servers, shutdown),
                ))
            },
        );
        let mut response = Response::new(StreamBody::new(Box::pin(stream)).boxed());
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    fn page_response(&self, status: StatusCode, page: Result<String, String>) -> Response<Body> {
        match page {
            Ok(html) => {
                let mut response = respond(status, "text/html; charset=utf-8", html);
                let headers = response.headers_mut();
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                // No page of another site may frame the dashboard's buttons.
                headers.insert(
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static(
                        "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
                    ),
                );
                headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
                response
            }
            Err(problem) => {
                tracing::warn!(%problem, "a dashboard page could not be rendered");
                plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("The page could not be rendered: {problem}\n"),
                )
            }
        }
    }
}

/// Keeps `key` until `lifetime` passes; the oldest goes past [`MAX_HELD`].
fn hold(map: &Mutex<HashMap<String, Instant>>, key: String, lifetime: Duration) {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    map.retain(|_, until| *until > now);
    if map.len() >= MAX_HELD
        && let Some(oldest) = map
            .iter()
            .min_by_key(|(_, until)| **until)
            .map(|(key, _)| key.clone())
    {
        map.remove(&oldest);
    }
    map.insert(key, now + lifetime);
}

/// Whether `key` is held and unexpired; it is then removed (used once).
fn take(map: &Mutex<HashMap<String, Instant>>, key: &str) -> bool {
    let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
    map.remove(key).is_some_and(|until| until > Instant::now())
}

/// Whether `key` is held and unexpired.
fn held(map: &Mutex<HashMap<String, Instant>>, key: &str) -> bool {
    let map = map.lock().unwrap_or_else(PoisonError::into_inner);
    map.get(key).is_some_and(|until| *until > Instant::now())
}

/// `%XX` escapes in a path segment decoded (server and tool names may hold
/// characters a URL escapes); an invalid escape stays as it is.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn respond(status: StatusCode, content_type: &'static str, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", text)
}

fn json(status: StatusCode, text: String) -> Response<Body> {
    let mut response = respond(status, "application/json", text);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_codes_work_once_and_sessions_until_they_expire() {
        let codes = Mutex::default();
        hold(&codes, "a".into(), Duration::from_secs(60));
        assert!(take(&codes, "a"));
        assert!(!take(&codes, "a"), "a code is used once");
        hold(&codes, "b".into(), Duration::ZERO);
        assert!(!take(&codes, "b"), "an expired code does not work");
        let sessions = Mutex::default();
        hold(&sessions, "s".into(), Duration::from_secs(60));
        assert!(held(&sessions, "s") && held(&sessions, "s"));
        for n in 0..MAX_HELD + 3 {
            hold(&sessions, format!("x{n}"), Duration::from_secs(60));
        }
        assert!(sessions.lock().unwrap().len() <= MAX_HELD);
    }

    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("end%2"), "end%2");
        assert_eq!(percent_decode("%é1"), "%é1");
    }
}
