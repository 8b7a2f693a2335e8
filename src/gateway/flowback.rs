//! Requests that flow back: an upstream's `elicitation/create`,
//! `sampling/createMessage` and `roots/list`, passed to zenmode's own client.
//!
//! Upstream processes are shared by every session of the process, and a
//! request may carry one call's data (a sampling prompt, an elicitation
//! message), so it may reach only the session of the call it belongs to:
//! - from a Streamable HTTP upstream, a request that comes on the response
//!   stream of one of zenmode's requests belongs to that request's call:
//!   it goes to that call's session, and is refused once the call has
//!   ended; one on the server's own stream belongs to no call;
//! - from a stdio upstream nothing ties a request to a call, so it goes to
//!   the one session whose calls are in flight, and is refused when calls
//!   of several sessions are in flight, or when a call of another session
//!   ended (returned, failed or was cancelled) while one of these was in
//!   flight: the server may still be working for the call that ended.
//!
//! Roots belong to the session rather than a call: with no call in flight,
//! a `roots/list` goes to the one open session that offers roots. Anything
//! else is refused at once with an error that says why: never a hang.
//!
//! Each request is bounded: it waits for the client at most until its call
//! ends (a request outside any call, [`OUTSIDE_CALL_WAIT`]); a call may have
//! [`CALL_WAITING`] waiting and make [`CALL_TOTAL`] in all; a session may
//! have [`SESSION_WAITING`] waiting and be sent [`SESSION_PER_MINUTE`] a
//! minute. Past a bound the server gets an error saying which.
//!
//! The gateway knows nothing of the server layer: the session hands its
//! [`ClientRequests`] down in the call's [`crate::call::CallContext`].

// Sampling and roots are deprecated for 2026-07-28, not for the sessions
// opened with `initialize` that this serves.
#![allow(deprecated)]

use std::{
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData,
    model::{
        ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ErrorCode, Extensions, InputRequest, InputRequests, InputResponses,
        ListRootsResult, RequestId,
    },
    service::InboundStreamOrigin,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::call::{Ask, ClientRequests};

/// The sampling and roots types, named once here where their deprecation
/// (for 2026-07-28 only) is allowed.
pub type SamplingParams = CreateMessageRequestParams;
pub type SamplingResult = CreateMessageResult;
pub type RootsResult = ListRootsResult;

/// What zenmode declares to every upstream: it can pass all three on.
/// Upstreams are shared and often start before any client connects, so the
/// declaration cannot follow one client's; a request the calling client
/// cannot answer is refused when it comes.
pub fn upstream_capabilities() -> ClientCapabilities {
    serde_json::from_value(json!({
        "roots": {"listChanged": true},
        "sampling": {},
        "elicitation": {"form": {}},
    }))
    .unwrap_or_default()
}

/// Flow-back requests of one call that may wait on the client at once.
pub const CALL_WAITING: usize = 8;
/// Flow-back requests one call may make in all.
pub const CALL_TOTAL: usize = 100;
/// Flow-back requests that may wait on one session's client at once (all
/// its calls, on every upstream).
pub const SESSION_WAITING: usize = 32;
/// Flow-back requests one session's client may be sent in a minute.
pub const SESSION_PER_MINUTE: usize = 600;
/// How long a request tied to an id no call holds waits, at most, for the
/// calls' sends still untied ([`CallerGuard::sending`]): the gap is the
/// few instructions between rmcp's send and the tie, so only a stalled
/// machine comes near it.
const UNTIED_WAIT: Duration = Duration::from_secs(5);

/// How long a request that belongs to no call (a `roots/list` between
/// calls) waits for the client; one that belongs to a call waits at most
/// until the call ends, which its timeout bounds.
pub const OUTSIDE_CALL_WAIT: Duration = Duration::from_secs(30);

/// Where an upstream's request came from, as far as its transport tells.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// On the response stream of one of zenmode's requests (Streamable
    /// HTTP): it belongs to that request's call.
    Call(RequestId),
    /// On the server's own stream (Streamable HTTP): it belongs to no call.
    Outside,
    /// Nothing says (stdio).
    Unknown,
    /// Asked for the call with this id by zenmode itself (a 2026-07-28
    /// server's input requests, passed on during the call).
    Own(u64),
}

impl Origin {
    /// What rmcp's transport noted on the request.
    pub fn of(extensions: &Extensions) -> Origin {
        match extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Origin::Call(id.clone()),
            Some(InboundStreamOrigin::Unassociated) => Origin::Outside,
            None => Origin::Unknown,
        }
    }
}

/// A call in flight on one upstream.
struct Caller {
    id: u64,
    /// Its session's client; `None` for a session that cannot be asked (a
    /// 2026-07-28 one) or no session (the CLI). Such a call still counts:
    /// a request during it may be its own.
    client: Option<Arc<dyn ClientRequests>>,
    /// A call of another session ended while this one was in progress: a
    /// late request for that call can no longer be told from this one's.
    after_another_ended: bool,
    /// zenmode's requests to the server for this call (Streamable HTTP
    /// ties the server's requests to them).
    upstream_ids: Vec<RequestId>,
    /// Cancelled when the call ends: its requests stop waiting.
    ended: CancellationToken,
    /// The server answered it ([`CallerGuard::answered`]).
    answered: bool,
    /// Its requests sent or being sent whose id it has not noted yet.
    untied_sends: usize,
    waiting: usize,
    asked: usize,
}

impl Caller {
    /// Its session: the client's, or one of its own when it has none.
    fn session(&self) -> Session {
        match &self.client {
            Some(client) => Session::Client(client.session()),
            None => Session::Unaskable(self.id),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Session {
    Client(usize),
    Unaskable(u64),
}

/// The calls in flight on one upstream, each with its session's client.
#[derive(Clone, Default)]
pub struct Callers {
    calls: Arc<Mutex<Vec<Caller>>>,
    /// Sessions whose call ended without the server's answer (cancelled,
    /// timed out, dropped), each with when the server must have stopped
    /// working for it: until then a request nothing ties to a call may be
    /// that call's, and goes to no other session.
    unfinished: Arc<Mutex<Vec<(Session, Instant)>>>,
    /// How long a call may run on this server (its entry's timeout): how
    /// long an unanswered call may go on there.
    window: Duration,
}

/// Removes its call from [`Callers`] when the call ends, however it ends.
pub struct CallerGuard {
    callers: Callers,
    id: u64,
}

impl CallerGuard {
    /// Notes that the server answered this call: it no longer works for it.
    pub fn answered(&self) {
        self.change_mine(|caller| caller.answered = true);
    }

    /// Notes that one of zenmode's requests for this call is about to be
    /// sent: until the returned send is tied to its id (or dropped), a
    /// request the server ties to an id no call holds waits for it.
    pub fn sending(&self) -> UntiedSend<'_> {
        self.change_mine(|caller| caller.untied_sends += 1);
        UntiedSend { guard: self }
    }

    fn change_mine(&self, change: impl FnOnce(&mut Caller)) {
        let mut calls = self.callers.calls();
        if let Some(caller) = calls.iter_mut().find(|caller| caller.id == self.id) {
            change(caller);
        }
    }
}

/// One of a call's requests to the server, between its send and its id.
pub struct UntiedSend<'a> {
    guard: &'a CallerGuard,
}

impl UntiedSend<'_> {
    /// Notes the sent request's id as this call's (the send stops
    /// counting as untied when it is dropped, here).
    pub fn tie(self, upstream_id: RequestId) {
        self.guard
            .change_mine(|caller| caller.upstream_ids.push(upstream_id));
    }
}

impl Drop for UntiedSend<'_> {
    fn drop(&mut self) {
        self.guard
            .change_mine(|caller| caller.untied_sends = caller.untied_sends.saturating_sub(1));
    }
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        let mut calls = self.callers.calls();
        let Some(at) = calls.iter().position(|caller| caller.id == self.id) else {
            return;
        };
        let ended = calls.remove(at);
        ended.ended.cancel();
        let session = ended.session();
        if !ended.answered && !self.callers.window.is_zero() {
            let until = Instant::now() + self.callers.window;
            self.callers.unfinished().push((session, until));
        }
        for other in calls.iter_mut() {
            if other.session() != session {
                other.after_another_ended = true;
            }
        }
    }
}

/// Who answers one request, and the calls it is counted against (and
/// whose end ends its wait).
struct Picked {
    client: Arc<dyn ClientRequests>,
    calls: Vec<(u64, CancellationToken)>,
}

/// Gives back what one request took of its calls' and session's bounds.
struct Charge {
    callers: Callers,
    calls: Vec<u64>,
    client: Arc<dyn ClientRequests>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        for caller in self.callers.calls().iter_mut() {
            if self.calls.contains(&caller.id) {
                caller.waiting = caller.waiting.saturating_sub(1);
            }
        }
        self.client.load().give_back();
    }
}

impl Callers {
    /// The calls of a server whose calls may run for `window` (its
    /// entry's timeout).
    pub fn new(window: Duration) -> Self {
        Callers {
            window,
            ..Callers::default()
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<Caller>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The unanswered calls whose window is still open.
    fn unfinished(&self) -> std::sync::MutexGuard<'_, Vec<(Session, Instant)>> {
        let mut unfinished = self.unfinished.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        unfinished.retain(|(_, until)| *until > now);
        unfinished
    }

    /// Notes a call in flight; `None` is a call whose session cannot be
    /// asked (or none: a CLI call, a test).
    pub fn enter(&self, client: Option<&Arc<dyn ClientRequests>>) -> CallerGuard {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        self.calls().push(Caller {
            id,
            client: client.cloned(),
            after_another_ended: false,
            upstream_ids: Vec::new(),
            ended: CancellationToken::new(),
            answered: false,
            untied_sends: 0,
            waiting: 0,
            asked: 0,
        });
        CallerGuard {
            callers: self.clone(),
            id,
        }
    }

    /// The client that should answer `ask` from `server`, or the refusal.
    async fn route(&self, server: &str, ask: Ask, origin: &Origin) -> Result<Picked, ErrorData> {
        let picked = match origin {
            Origin::Call(upstream_id) => {
                self.route_to_call(server, ask, |caller| {
                    caller.upstream_ids.contains(upstream_id)
                })
                .await?
            }
            Origin::Own(id) => {
                self.route_to_call(server, ask, |caller| caller.id == *id)
                    .await?
            }
            Origin::Outside if ask != Ask::Roots => {
                return Err(refusal(
                    server,
                    ask,
                    "the server sent it outside any call (on its own stream), so zenmode cannot tell which client it is for",
                ));
            }
            Origin::Outside | Origin::Unknown => self.route_by_calls(server, ask)?,
        };
        if !picked.client.can(ask) {
            return Err(refusal(
                server,
                ask,
                &format!(
                    "zenmode's client did not declare the {} capability",
                    ask.capability()
                ),
            ));
        }
        Ok(picked)
    }

    /// A request tied to one of zenmode's requests goes to that call's
    /// session, or nowhere once the call has ended.
    async fn route_to_call(
        &self,
        server: &str,
        ask: Ask,
        is_it: impl Fn(&Caller) -> bool,
    ) -> Result<Picked, ErrorData> {
        // A call learns its request's id only once rmcp has sent the
        // request, so a server quick enough to ask first waits for the
        // sends still untied (a moment, unless the machine is loaded).
        let waiting_since = Instant::now();
        loop {
            let (found, untied) = {
                let calls = self.calls();
                let found = calls
                    .iter()
                    .find(|caller| is_it(caller))
                    .map(|caller| (caller.client.clone(), caller.id, caller.ended.clone()));
                (found, calls.iter().any(|caller| caller.untied_sends > 0))
            };
            match found {
                Some((Some(client), id, ended)) => {
                    let client = if ask == Ask::Roots {
                        roots_client_of(client)
                    } else {
                        client
                    };
                    return Ok(Picked {
                        client,
                        calls: vec![(id, ended)],
                    });
                }
                Some((None, ..)) => {
                    return Err(refusal(
                        server,
                        ask,
                        "the call it belongs to comes from a session that cannot be asked",
                    ));
                }
                None if untied && waiting_since.elapsed() < UNTIED_WAIT => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                None => return Err(refusal(server, ask, "the call it belongs to has ended")),
            }
        }
    }

    /// A request nothing ties to a call goes to the one session whose
    /// calls are in flight, and only when it cannot be another session's.
    fn route_by_calls(&self, server: &str, ask: Ask) -> Result<Picked, ErrorData> {
        let calls = self.calls();
        let open: Vec<&Caller> = calls
            .iter()
            .filter(|caller| caller.client.as_ref().is_none_or(|c| !c.is_closed()))
            .collect();
        let Some(first) = open.first() else {
            drop(calls);
            if ask != Ask::Roots {
                return Err(refusal(
                    server,
                    ask,
                    "no call from a session that can be asked (one opened with initialize) was in progress on this server",
                ));
            }
            return match one_session(&sessions_with_roots()) {
                Pick::One(client) => Ok(Picked {
                    client,
                    calls: Vec::new(),
                }),
                Pick::None => Err(refusal(server, ask, "no connected client offers roots")),
                Pick::Many => Err(refusal(
                    server,
                    ask,
                    "no call is in progress and several connected clients offer roots",
                )),
            };
        };
        let session = first.session();
        if open.iter().any(|caller| caller.session() != session) {
            return Err(refusal(
                server,
                ask,
                "calls from several client sessions are in progress on this server, so zenmode cannot tell which client the request is for",
            ));
        }
        let Some(client) = first.client.clone() else {
            return Err(refusal(
                server,
                ask,
                "the call in progress comes from a session that cannot be asked",
            ));
        };
        // Roots belong to the session, not to the call in flight: a server
        // asks for them after `list_changed`, whatever call runs then, and
        // its answer must not be dropped when that call ends first. They
        // carry nothing of another call either.
        if ask == Ask::Roots {
            return Ok(Picked {
                client: roots_client_of(client),
                calls: Vec::new(),
            });
        }
        if open.iter().any(|caller| caller.after_another_ended) {
            return Err(refusal(
                server,
                ask,
                "a call of another client session on this server ended while this session's call was in progress, and the request may be a late one for it",
            ));
        }
        if self.unfinished().iter().any(|(other, _)| *other != session) {
            return Err(refusal(
                server,
                ask,
                &format!(
                    "a call of another client session on this server ended without its answer (cancelled or timed out) less than {:.1} s (its timeout) ago, and the server may still be working for it; such requests are refused until that call's timeout has passed",
                    self.window.as_secs_f64()
                ),
            ));
        }
        Ok(Picked {
            client,
            calls: open
                .iter()
                .map(|caller| (caller.id, caller.ended.clone()))
                .collect(),
        })
    }

    /// Counts one request against its calls and its session, or refuses it
    /// when one of them has reached its bound.
    fn charge(&self, server: &str, ask: Ask, picked: &Picked) -> Result<Charge, ErrorData> {
        let mut calls = self.calls();
        let charged: Vec<u64> = picked.calls.iter().map(|(id, _)| *id).collect();
        for caller in calls.iter().filter(|caller| charged.contains(&caller.id)) {
            if caller.waiting >= CALL_WAITING {
                return Err(refusal(
                    server,
                    ask,
                    &format!(
                        "this call has {CALL_WAITING} requests waiting on the client already (at most {CALL_WAITING} at once)"
                    ),
                ));
            }
            if caller.asked >= CALL_TOTAL {
                return Err(refusal(
                    server,
                    ask,
                    &format!(
                        "this call made {CALL_TOTAL} requests already (at most {CALL_TOTAL} per call)"
                    ),
                ));
            }
        }
        picked
            .client
            .load()
            .take(SESSION_WAITING, SESSION_PER_MINUTE)
            .map_err(|why| refusal(server, ask, &why))?;
        for caller in calls
            .iter_mut()
            .filter(|caller| charged.contains(&caller.id))
        {
            caller.waiting += 1;
            caller.asked += 1;
        }
        Ok(Charge {
            callers: self.clone(),
            calls: charged,
            client: picked.client.clone(),
        })
    }

    /// Routes and counts a request: the ticket to ask its client with.
    async fn admit(&self, server: &str, ask: Ask, asked: Asked) -> Result<Ticket, ErrorData> {
        let picked = self.route(server, ask, &asked.origin).await?;
        let charge = self.charge(server, ask, &picked)?;
        Ok(Ticket {
            client: picked.client,
            ended: picked.calls.into_iter().map(|(_, ended)| ended).collect(),
            stop: asked.stop,
            server: server.to_owned(),
            ask,
            _charge: charge,
        })
    }

    pub async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
        asked: Asked,
    ) -> Result<ElicitResult, ErrorData> {
        if !matches!(params, ElicitRequestParams::FormElicitationParams { .. }) {
            // Only form mode is declared to upstreams.
            return Err(refusal(
                server,
                Ask::Elicitation,
                "only form-mode elicitation is passed on",
            ));
        }
        let ticket = self.admit(server, Ask::Elicitation, asked).await?;
        tracing::info!(server, "passing an elicitation request to the client");
        let client = ticket.client.clone();
        ticket.wait(client.elicit(params)).await
    }

    pub async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
        asked: Asked,
    ) -> Result<CreateMessageResult, ErrorData> {
        let ticket = self.admit(server, Ask::Sampling, asked).await?;
        tracing::info!(server, "passing a sampling request to the client");
        let client = ticket.client.clone();
        ticket.wait(client.create_message(params)).await
    }

    pub async fn list_roots(
        &self,
        server: &str,
        asked: Asked,
    ) -> Result<ListRootsResult, ErrorData> {
        // A server asks for roots as it starts, also when no client is
        // attached (`upstream add`, `doctor`, a serve before its client's
        // `initialize`). That is routine, not a failure: it gets an empty
        // list, which servers read as "keep your own folders" (the
        // filesystem server keeps those on its command line), and nothing
        // is logged above debug.
        if sessions_with_roots().is_empty() {
            tracing::debug!(server, "no client offers roots: answered with none");
            return Ok(ListRootsResult::default());
        }
        let ticket = self.admit(server, Ask::Roots, asked).await?;
        tracing::debug!(server, "passing roots/list to the client");
        let client = ticket.client.clone();
        ticket.wait(client.list_roots()).await
    }
}

/// One request admitted: its client, what ends its wait, and its place in
/// the bounds (given back when it is dropped).
struct Ticket {
    client: Arc<dyn ClientRequests>,
    /// Its calls' ends: once all have ended, nobody awaits the answer.
    ended: Vec<CancellationToken>,
    /// The server's cancel of its request.
    stop: CancellationToken,
    server: String,
    ask: Ask,
    _charge: Charge,
}

impl Ticket {
    /// The client's answer, or an error once the request's call has ended,
    /// the server cancelled it, or (outside any call) [`OUTSIDE_CALL_WAIT`]
    /// passed. Dropping the client's request tells the client its answer
    /// is no longer wanted (the server's `client_peer`).
    async fn wait<T>(
        self,
        answer: impl Future<Output = Result<T, ErrorData>>,
    ) -> Result<T, ErrorData> {
        let call_bound = !self.ended.is_empty();
        let ended = self.ended.clone();
        let all_ended = async move {
            for token in &ended {
                token.cancelled().await;
            }
        };
        // A call's end comes within its timeout; this is only a backstop.
        let wait = if call_bound {
            Duration::from_secs(24 * 60 * 60)
        } else {
            OUTSIDE_CALL_WAIT
        };
        let (server, ask) = (self.server.as_str(), self.ask);
        tokio::select! {
            answer = answer => answer,
            () = all_ended, if call_bound => Err(ended_early(server, ask, "the call it belongs to ended before the client answered")),
            () = self.stop.cancelled() => Err(ended_early(server, ask, "the server cancelled it")),
            () = tokio::time::sleep(wait) => Err(ended_early(server, ask, &format!("the client did not answer within {}s", wait.as_secs()))),
        }
    }
}

/// How one request came: where from, and the server's cancel of it.
pub struct Asked {
    pub origin: Origin,
    pub stop: CancellationToken,
}

impl Asked {
    fn own(call: &CallerGuard) -> Asked {
        Asked {
            origin: Origin::Own(call.id),
            stop: CancellationToken::new(),
        }
    }
}

/// The session's own client for roots, if it registered one (it outlives
/// the call).
fn roots_client_of(client: Arc<dyn ClientRequests>) -> Arc<dyn ClientRequests> {
    sessions_with_roots()
        .into_iter()
        .find(|session| session.session() == client.session())
        .unwrap_or(client)
}

enum Pick {
    None,
    One(Arc<dyn ClientRequests>),
    Many,
}

/// The one open session among `clients`, if there is exactly one.
fn one_session(clients: &[Arc<dyn ClientRequests>]) -> Pick {
    let mut open = clients.iter().filter(|client| !client.is_closed());
    let Some(first) = open.next() else {
        return Pick::None;
    };
    if open.any(|other| other.session() != first.session()) {
        Pick::Many
    } else {
        Pick::One(first.clone())
    }
}

fn refusal(server: &str, ask: Ask, why: &str) -> ErrorData {
    // A server asking for roots as it starts, before any client, is routine.
    if ask == Ask::Roots {
        tracing::info!(
            server,
            "refused an upstream request for {}: {why}",
            ask.describe()
        );
    } else {
        tracing::warn!(
            server,
            "refused an upstream request for {}: {why}",
            ask.describe()
        );
    }
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "zenmode cannot pass on this request for {}: {why}",
            ask.describe()
        ),
        None,
    )
}

/// A request passed on whose answer is no longer awaited.
fn ended_early(server: &str, ask: Ask, why: &str) -> ErrorData {
    tracing::info!(
        server,
        "stopped waiting for the client's answer to {}: {why}",
        ask.describe()
    );
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "zenmode stopped waiting for the client's answer to this request for {}: {why}",
            ask.describe()
        ),
        None,
    )
}

/// Open sessions whose client offers roots, for a `roots/list` that comes
/// outside any call. Process-wide: sessions belong to the process, not to
/// one gateway.
pub(super) static ROOT_SESSIONS: Mutex<Vec<Weak<dyn ClientRequests>>> = Mutex::new(Vec::new());

fn sessions_with_roots() -> Vec<Arc<dyn ClientRequests>> {
    let Ok(mut list) = ROOT_SESSIONS.lock() else {
        return Vec::new();
    };
    list.retain(|weak| weak.upgrade().is_some_and(|client| !client.is_closed()));
    list.iter().filter_map(Weak::upgrade).collect()
}

impl Callers {
    /// Answers a 2026-07-28 server's input requests by asking the calling
    /// session's client, one by one (for a session opened with
    /// `initialize`, which cannot take an input-required result).
    pub async fn fulfil(
        &self,
        server: &str,
        requests: InputRequests,
        call: &CallerGuard,
    ) -> Result<InputResponses, ErrorData> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::Elicitation(request) => serde_json::to_value(
                    self.elicit(server, request.params, Asked::own(call))
                        .await?,
                ),
                InputRequest::CreateMessage(request) => serde_json::to_value(
                    self.create_message(server, request.params, Asked::own(call))
                        .await?,
                ),
                InputRequest::ListRoots(_) => {
                    serde_json::to_value(self.list_roots(server, Asked::own(call)).await?)
                }
                _ => {
                    return Err(ErrorData::invalid_request(
                        format!(
                            "server {server:?} asked for input of a kind zenmode does not know"
                        ),
                        None,
                    ));
                }
            };
            let answer = answer.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            responses.insert(key, answer);
        }
        Ok(responses)
    }
}

#[cfg(test)]
#[path = "flowback_tests.rs"]
mod tests;
