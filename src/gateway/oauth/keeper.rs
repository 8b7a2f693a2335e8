//! One server's token while zenmode talks to it, and the HTTP client that
//! carries it.
//!
//! A token is renewed before it ages out (a quarter of its life, at most
//! 30 s, before expiry), and once when the server answers 401 to it. All
//! renewals and sign-ins of a server go through one lock: a call that finds
//! the token stale waits for the renewal already under way and then uses
//! its token, so many concurrent calls cause one refresh; when that renewal
//! failed, the calls that waited for it fail with its error instead of each
//! trying again in turn. Across processes, the lock file beside the token
//! file does the same ([`TokenFile::lock_renewal`]), and the file is read
//! again under it: another process may have renewed (and, with rotating
//! refresh tokens, replaced the refresh token this one holds). A 403 with
//! `insufficient_scope` signs in again with the named scope, at most
//! [`MAX_STEP_UPS`] times per request.

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::{
    model::{ClientJsonRpcMessage, ClientRequest},
    transport::{
        auth::{AuthError, AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig},
        streamable_http_client::{
            SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        },
    },
};

use super::token_file::{TokenFile, token_fields};
use crate::gateway::config::OAuthSettings;

/// Sign-ins with a bigger scope for one request after `insufficient_scope`.
pub const MAX_STEP_UPS: u32 = 2;
/// The longest a token is renewed before it expires.
const MAX_MARGIN: Duration = Duration::from_secs(30);
/// The longest one refresh or sign-in may take: the lock is held for it,
/// and every call of the server (in every process) waits on that lock.
const MAX_RENEWAL: Duration = Duration::from_secs(30);
/// The longest a process waits for another's renewal (one renewal, and
/// a margin for reading and writing the file).
const MAX_LOCK_WAIT: Duration = Duration::from_secs(40);

/// What the keeper may do when it has no usable token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// Only use (and refresh) stored tokens: a person signs in with
    /// `zenmode upstream login`.
    Stored,
    /// Client credentials from the entry.
    Machine,
    /// The authorization-code flow without a browser: the authorization URL
    /// is fetched and its redirect taken as the callback (for test servers
    /// that approve at once, as the conformance suite's do).
    Headless,
}

struct Current {
    token: String,
    has_refresh: bool,
    /// When to renew; `None`: the token's life is unknown.
    renew_at: Option<Instant>,
}

/// One server's token, its renewal and its sign-in.
pub struct Keeper {
    server: String,
    url: String,
    settings: Option<OAuthSettings>,
    file: TokenFile,
    sign_in: SignIn,
    current: Mutex<Option<Current>>,
    /// The manager once one exists; its lock is the one renewal lock.
    manager: tokio::sync::Mutex<Option<AuthorizationManager>>,
    needs_sign_in: AtomicBool,
    /// It answered 401 but offers no sign-in (see [`super::offers_sign_in`]).
    needs_credential: AtomicBool,
    renewals: AtomicU64,
    /// Renewals and sign-ins tried (under the lock), and how the last one
    /// failed, if it did: a call that waited for the lock learns whether
    /// the attempt it waited for failed.
    attempts: AtomicU64,
    last_failure: Mutex<Option<Failure>>,
}

/// A failed renewal, kept for the calls that waited for it.
#[derive(Clone)]
enum Failure {
    /// The authorization server refused the refresh token: only a new
    /// sign-in helps.
    Rejected(String),
    Failed(String),
    SignInNeeded,
}

impl Failure {
    fn of(error: &AuthError) -> Failure {
        match error {
            AuthError::TokenRefreshRejected(why) => Failure::Rejected(why.clone()),
            AuthError::AuthorizationRequired => Failure::SignInNeeded,
            other => Failure::Failed(super::explain(other)),
        }
    }

    fn error(&self) -> AuthError {
        match self {
            Failure::Rejected(why) => AuthError::TokenRefreshRejected(why.clone()),
            Failure::Failed(why) => AuthError::TokenRefreshFailed(why.clone()),
            Failure::SignInNeeded => AuthError::AuthorizationRequired,
        }
    }
}

impl Keeper {
    pub fn new(
        server: &str,
        url: &str,
        settings: Option<OAuthSettings>,
        file: TokenFile,
        sign_in: SignIn,
    ) -> Self {
        Keeper {
            server: server.to_owned(),
            url: url.to_owned(),
            settings,
            file,
            sign_in,
            current: Mutex::new(None),
            manager: tokio::sync::Mutex::new(None),
            needs_sign_in: AtomicBool::new(false),
            needs_credential: AtomicBool::new(false),
            renewals: AtomicU64::new(0),
            attempts: AtomicU64::new(0),
            last_failure: Mutex::new(None),
        }
    }

    /// The failure of an attempt that ended after `queued` (the attempt
    /// count when the caller started waiting for the lock), if it failed.
    fn failed_since(&self, queued: u64) -> Option<AuthError> {
        if self.attempts.load(Ordering::SeqCst) == queued {
            return None;
        }
        let failure = self.last_failure.lock().unwrap_or_else(|p| p.into_inner());
        failure.as_ref().map(Failure::error)
    }

    /// Records how an attempt under the lock ended.
    fn note_attempt<T>(&self, outcome: &Result<T, AuthError>) {
        let failure = outcome.as_ref().err().map(Failure::of);
        if matches!(failure, Some(Failure::Rejected(_) | Failure::SignInNeeded)) {
            self.needs_sign_in.store(true, Ordering::Relaxed);
        }
        *self.last_failure.lock().unwrap_or_else(|p| p.into_inner()) = failure;
        self.attempts.fetch_add(1, Ordering::SeqCst);
    }

    /// Takes the lock shared with other processes.
    async fn lock_file(&self) -> Result<std::fs::File, AuthError> {
        self.file
            .lock_renewal(MAX_LOCK_WAIT)
            .await
            .map_err(AuthError::CredentialStoreError)
    }

    /// Whether the server asked for sign-in that only a person can give.
    pub fn needs_sign_in(&self) -> bool {
        self.needs_sign_in.load(Ordering::Relaxed)
    }

    /// Whether the server asked for credentials but offers no OAuth sign-in:
    /// a person gives it a token in a header instead.
    pub fn needs_credential(&self) -> bool {
        self.needs_credential.load(Ordering::Relaxed)
    }

    /// Tokens obtained by refresh or re-sign-in since start.
    pub fn renewals(&self) -> u64 {
        self.renewals.load(Ordering::Relaxed)
    }

    fn fresh(&self) -> Option<String> {
        let current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        current
            .as_ref()
            .filter(|c| c.renew_at.is_none_or(|at| Instant::now() < at))
            .map(|c| c.token.clone())
    }

    /// Takes the token in the file as current.
    fn adopt_file(&self) -> bool {
        let Some(saved) = self.file.read() else {
            return false;
        };
        let Some(fields) = saved.credentials.as_ref().and_then(token_fields) else {
            return false;
        };
        self.file.adopt(&saved);
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(same) = current.as_mut().filter(|c| c.token == fields.access) {
            same.has_refresh = fields.refresh.is_some();
            // The file is read again before every renewal; the token's
            // renewal time stays the one set when it was first seen (the
            // file counts its age in whole seconds, too coarse to recount
            // it late in a short life).
            return true;
        }
        let renew_at = fields.expires_in.map(|life| {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            let age = fields.received_at.map_or(0, |at| now.saturating_sub(at));
            let life = Duration::from_secs(life);
            let left = life.saturating_sub(Duration::from_secs(age));
            Instant::now() + left.saturating_sub(MAX_MARGIN.min(life / 4))
        });
        *current = Some(Current {
            token: fields.access,
            has_refresh: fields.refresh.is_some(),
            renew_at,
        });
        true
    }

    /// The token to send, renewed first when it is due; `None` when there
    /// is none (the request goes out without one and the server's challenge
    /// decides).
    pub async fn token(&self) -> Result<Option<String>, AuthError> {
        if let Some(token) = self.fresh() {
            return Ok(Some(token));
        }
        self.renew(None).await
    }

    /// Renews the token (`stale` is the one the server refused, if any);
    /// waits for a renewal under way instead of starting a second one, and
    /// fails with it when it failed.
    pub async fn renew(&self, stale: Option<&str>) -> Result<Option<String>, AuthError> {
        let queued = self.attempts.load(Ordering::SeqCst);
        let mut guard = self.manager.lock().await;
        if let Some(token) = self.fresh()
            && Some(token.as_str()) != stale
        {
            return Ok(Some(token));
        }
        if let Some(failure) = self.failed_since(queued) {
            return Err(failure);
        }
        if !self.has_token_or_file() && !self.file.path().exists() {
            // Nothing to renew (a server that has not asked for sign-in):
            // no lock, no file.
            return Ok(None);
        }
        let _shared = self.lock_file().await?;
        // Another process (or a new `upstream login`) may have renewed
        // while this one waited.
        if self.adopt_file()
            && let Some(token) = self.fresh()
            && Some(token.as_str()) != stale
        {
            self.needs_sign_in.store(false, Ordering::Relaxed);
            return Ok(Some(token));
        }
        let outcome = self.renew_locked(&mut guard).await;
        if !matches!(outcome, Ok(None)) {
            self.note_attempt(&outcome);
        }
        if matches!(outcome, Ok(Some(_))) {
            self.needs_sign_in.store(false, Ordering::Relaxed);
        }
        outcome
    }

    /// One renewal, under both locks: a refresh, else (for a machine
    /// client) client credentials again, else a full sign-in.
    async fn renew_locked(
        &self,
        guard: &mut Option<AuthorizationManager>,
    ) -> Result<Option<String>, AuthError> {
        let has_refresh = self
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|c| c.has_refresh);
        let mut refresh_failure = None;
        if has_refresh {
            // A person's sign-in is rebuilt from the file each time: a new
            // `upstream login` may have registered another client.
            if guard.is_none() || self.sign_in == SignIn::Stored {
                *guard = self.restore_manager().await;
            }
            if let Some(manager) = guard.as_ref() {
                let refreshed = tokio::time::timeout(MAX_RENEWAL, manager.refresh_token())
                    .await
                    .unwrap_or_else(|_| {
                        Err(AuthError::TokenRefreshFailed(format!(
                            "the authorization server did not answer within {}s",
                            MAX_RENEWAL.as_secs()
                        )))
                    });
                match refreshed {
                    Ok(_) => {
                        self.renewals.fetch_add(1, Ordering::Relaxed);
                        self.adopt_file();
                        tracing::debug!(server = %self.server, "access token refreshed");
                        return Ok(self.fresh());
                    }
                    Err(error) => {
                        tracing::info!(
                            server = %self.server,
                            error = %super::explain(&error),
                            "token refresh failed; signing in again where possible"
                        );
                        refresh_failure = Some(error);
                    }
                }
            }
        }
        if self.sign_in == SignIn::Machine
            && let (Some(manager), Some(settings)) = (guard.as_ref(), self.settings.as_ref())
            && let (Some(client_id), Some(client_secret)) =
                (&settings.client_id, &settings.client_secret)
        {
            // The same client again, without a second discovery.
            let mut scopes = settings.scopes.clone();
            if scopes.is_empty() {
                scopes = manager.get_current_scopes().await;
            }
            let config = ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                scopes,
                resource: Some(self.url.clone()),
            };
            let exchanged =
                tokio::time::timeout(MAX_RENEWAL, manager.exchange_client_credentials(&config))
                    .await;
            if matches!(exchanged, Ok(Ok(_))) {
                self.renewals.fetch_add(1, Ordering::Relaxed);
                self.adopt_file();
                return Ok(self.fresh());
            }
        }
        if self.sign_in == SignIn::Machine && self.has_token_or_file() {
            self.sign_in_locked(guard, None, None).await?;
            self.renewals.fetch_add(1, Ordering::Relaxed);
            return Ok(self.fresh());
        }
        match refresh_failure {
            // The server's challenge decides what a call without a token gets.
            None => Ok(None),
            Some(error) => Err(error),
        }
    }

    fn has_token_or_file(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// A manager able to refresh the file's tokens, in a process that did
    /// not sign in itself.
    async fn restore_manager(&self) -> Option<AuthorizationManager> {
        let saved = self.file.read()?;
        let mut manager = super::manager_for(&self.url, &self.file).await.ok()?;
        match saved.metadata {
            Some(metadata) => manager.set_metadata(metadata),
            None => {
                let resolution = manager.resolve_metadata().await.ok()?;
                manager.set_metadata(resolution.metadata);
            }
        }
        let mut config = OAuthClientConfig::new(
            saved.client_id?,
            saved
                .redirect_uri
                .unwrap_or_else(|| "http://127.0.0.1/".into()),
        );
        if let Some(secret) = saved.client_secret {
            config = config.with_client_secret(secret);
        }
        manager.configure_client(config).ok()?;
        Some(manager)
    }

    /// Signs in after the server's `challenge` (401, or 403 with
    /// `extra_scope`), unless another call already did since `stale` was
    /// sent; fails at once when the sign-in this call waited for failed.
    pub async fn sign_in(
        &self,
        challenge: Option<&str>,
        extra_scope: Option<&str>,
        stale: Option<&str>,
    ) -> Result<(), AuthError> {
        let queued = self.attempts.load(Ordering::SeqCst);
        let mut guard = self.manager.lock().await;
        if extra_scope.is_none()
            && let Some(token) = self.fresh()
            && Some(token.as_str()) != stale
        {
            return Ok(());
        }
        if self.sign_in == SignIn::Stored {
            // Sign-in is offered only where there is somewhere to sign in.
            let flag = match super::offers_sign_in(&self.url, challenge).await {
                Ok(()) => &self.needs_sign_in,
                Err(why) => {
                    tracing::debug!(server = %self.server, "no OAuth sign-in offered: {why}");
                    &self.needs_credential
                }
            };
            flag.store(true, Ordering::Relaxed);
            return Err(AuthError::AuthorizationRequired);
        }
        if let Some(failure) = self.failed_since(queued) {
            return Err(failure);
        }
        let _shared = self.lock_file().await?;
        let outcome = self
            .sign_in_locked(&mut guard, challenge, extra_scope)
            .await;
        self.note_attempt(&outcome);
        outcome
    }

    /// One sign-in, under both locks.
    async fn sign_in_locked(
        &self,
        guard: &mut Option<AuthorizationManager>,
        challenge: Option<&str>,
        extra_scope: Option<&str>,
    ) -> Result<(), AuthError> {
        let signing = async {
            match self.sign_in {
                SignIn::Stored => Err("only `zenmode upstream login` signs in".to_owned()),
                SignIn::Machine => match &self.settings {
                    Some(settings) => {
                        super::sign_in_as_machine(
                            &self.url,
                            settings,
                            &self.file,
                            challenge,
                            extra_scope,
                        )
                        .await
                    }
                    None => Err("no client credentials in the entry".into()),
                },
                SignIn::Headless => {
                    super::sign_in_with_code(
                        &self.url,
                        self.settings.as_ref(),
                        &self.file,
                        challenge,
                        extra_scope,
                        HEADLESS_REDIRECT,
                        follow_without_browser,
                    )
                    .await
                }
            }
        };
        let signed = tokio::time::timeout(MAX_RENEWAL * 2, signing)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "sign-in did not finish within {}s",
                    (MAX_RENEWAL * 2).as_secs()
                ))
            });
        match signed {
            Ok(manager) => {
                *guard = Some(manager);
                self.adopt_file();
                Ok(())
            }
            Err(message) => {
                tracing::warn!(server = %self.server, "sign-in failed: {message}");
                Err(AuthError::AuthorizationFailed(message))
            }
        }
    }
}

/// The keeper of a gateway upstream: client credentials when the entry
/// gives them, else the tokens `zenmode upstream login` stored.
pub fn for_upstream(server: &str, url: &str, settings: Option<&OAuthSettings>) -> Arc<Keeper> {
    let sign_in = if settings.is_some_and(|s| s.client_credentials) {
        SignIn::Machine
    } else {
        SignIn::Stored
    };
    Arc::new(Keeper::new(
        server,
        url,
        settings.cloned(),
        super::token_file(server, url),
        sign_in,
    ))
}

/// Where the headless flow says it listens; nothing does: the redirect is
/// read from the authorization server's answer, never followed.
const HEADLESS_REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// Fetches the authorization URL without following redirects and returns
/// where the authorization server sends the browser back to.
async fn follow_without_browser(authorization_url: String) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .get(&authorization_url)
        .send()
        .await
        .map_err(|e| format!("opening the authorization URL: {e}"))?;
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            format!(
                "the authorization server answered {} without sending the browser back; sign in with a browser instead",
                response.status()
            )
        })?;
    if !location.starts_with(HEADLESS_REDIRECT) {
        return Err(
            "the authorization server redirected somewhere else than zenmode's callback".into(),
        );
    }
    Ok(location.to_owned())
}

/// Streamable HTTP with the keeper's token on every request.
#[derive(Clone)]
pub struct OAuthHttp {
    inner: reqwest::Client,
    keeper: Arc<Keeper>,
    standing_stream: Option<Arc<tokio::sync::Notify>>,
}

impl OAuthHttp {
    pub fn new(inner: reqwest::Client, keeper: Arc<Keeper>) -> Self {
        OAuthHttp {
            inner,
            keeper,
            standing_stream: None,
        }
    }

    /// Signals `ready` once the first attempt at the standing GET stream
    /// has an answer, whatever it is. rmcp opens that stream in the
    /// background after the handshake, and a server may send requests not
    /// tied to a call (an elicitation from `server.request`) only there: a
    /// caller that must not lose them waits for this before its first call.
    pub fn signal_standing_stream(mut self, ready: Arc<tokio::sync::Notify>) -> Self {
        self.standing_stream = Some(ready);
        self
    }

    fn note_stream_answered(&self, last_event_id: Option<&str>) {
        if let (Some(ready), None) = (&self.standing_stream, last_event_id) {
            ready.notify_one();
        }
    }

    /// rmcp opens the standing stream only within a session: when the
    /// server's answer to `initialize` names none, no stream is coming and
    /// a waiting caller is released at once.
    fn note_handshake(
        &self,
        message: &ClientJsonRpcMessage,
        answer: &Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
    ) {
        let Some(ready) = &self.standing_stream else {
            return;
        };
        let initialize = matches!(message, ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_)));
        let sessionless = matches!(
            answer,
            Ok(StreamableHttpPostResponse::Json(_, None)
                | StreamableHttpPostResponse::Sse(_, None))
        );
        if initialize && sessionless {
            ready.notify_one();
        }
    }

    /// Runs `call` with the current token; after a 401 renews (or signs in)
    /// once and retries, after `insufficient_scope` signs in with the named
    /// scope, at most [`MAX_STEP_UPS`] times.
    async fn with_token<T, F, Fut>(&self, call: F) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let keeper = &self.keeper;
        let mut token = keeper.token().await?;
        let (mut renewed, mut signed_in, mut step_ups) = (false, false, 0);
        loop {
            match call(token.clone()).await {
                Err(StreamableHttpError::AuthRequired(challenge)) => {
                    if token.is_some() && !renewed {
                        renewed = true;
                        if let Some(fresh) = keeper.renew(token.as_deref()).await?
                            && Some(&fresh) != token.as_ref()
                        {
                            token = Some(fresh);
                            continue;
                        }
                    }
                    if signed_in {
                        return Err(StreamableHttpError::AuthRequired(challenge));
                    }
                    signed_in = true;
                    let header = challenge.www_authenticate_header.clone();
                    keeper
                        .sign_in(
                            Some(&header).filter(|h| !h.is_empty()).map(|h| h.as_str()),
                            None,
                            token.as_deref(),
                        )
                        .await?;
                    token = keeper.token().await?;
                }
                Err(StreamableHttpError::InsufficientScope(needed)) if step_ups < MAX_STEP_UPS => {
                    step_ups += 1;
                    keeper
                        .sign_in(
                            Some(&needed.www_authenticate_header),
                            Some(needed.required_scope.as_deref().unwrap_or_default())
                                .filter(|s| !s.is_empty()),
                            token.as_deref(),
                        )
                        .await?;
                    token = keeper.token().await?;
                }
                other => return other,
            }
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let answer = self
            .with_token(|token| {
                self.inner.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                )
            })
            .await;
        self.note_handshake(&message, &answer);
        answer
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let answer = self
            .with_token(|token| {
                self.inner.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.note_handshake(&message, &answer);
        answer
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.with_token(|token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        let outcome = self
            .with_token(|token| {
                self.inner.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    custom_headers.clone(),
                )
            })
            .await;
        self.note_stream_answered(last_event_id.as_deref());
        outcome
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<
        BoxStream<'static, Result<sse_stream::Sse, SseError>>,
        StreamableHttpError<Self::Error>,
    > {
        let outcome = self
            .with_token(|token| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        self.note_stream_answered(last_event_id.as_deref());
        outcome
    }
}
