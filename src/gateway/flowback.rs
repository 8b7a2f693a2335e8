//! Requests that flow back: an upstream's `elicitation/create`,
//! `sampling/createMessage` and `roots/list`, passed to zenmode's own client.
//!
//! Upstream processes are shared by every session of the process, so each
//! request goes to the session whose call is in progress on that upstream
//! (stdio carries no link between a server's request and the call it serves,
//! so the in-flight calls are the only clue). With no call in flight, only a
//! `roots/list` is answered, and only when one open session offers roots (a
//! server asks for roots when it starts and after `list_changed`). Anything
//! else is refused at once with an error that says why: never a hang.
//!
//! The gateway knows nothing of the server layer: the session hands its
//! [`ClientRequests`] down in the call's [`crate::call::CallContext`].

// Sampling and roots are deprecated for 2026-07-28, not for the sessions
// opened with `initialize` that this serves.
#![allow(deprecated)]

use std::sync::{
    Arc, Mutex, Weak,
    atomic::{AtomicU64, Ordering},
};

use rmcp::{
    ErrorData,
    model::{
        ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ErrorCode, InputRequest, InputRequests, InputResponses, ListRootsResult,
    },
};
use serde_json::json;

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

/// A call in flight (its id) and its session's client.
type Caller = (u64, Arc<dyn ClientRequests>);

/// The calls in flight on one upstream, each with its session's client.
#[derive(Clone, Default)]
pub struct Callers(Arc<Mutex<Vec<Caller>>>);

/// Removes its call from [`Callers`] when the call ends, however it ends.
pub struct CallerGuard {
    callers: Callers,
    id: u64,
}

impl Drop for CallerGuard {
    fn drop(&mut self) {
        if let Ok(mut list) = self.callers.0.lock() {
            list.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Callers {
    /// Notes a call in flight; `None` (a CLI call, a test) is no client.
    pub fn enter(&self, client: Option<&Arc<dyn ClientRequests>>) -> Option<CallerGuard> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let client = client?;
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        self.0.lock().ok()?.push((id, client.clone()));
        Some(CallerGuard {
            callers: self.clone(),
            id,
        })
    }

    /// The client that should answer `ask` from `server`, or the refusal.
    fn route(&self, server: &str, ask: Ask) -> Result<Arc<dyn ClientRequests>, ErrorData> {
        let in_flight: Vec<Arc<dyn ClientRequests>> = self
            .0
            .lock()
            .map(|list| list.iter().map(|(_, client)| client.clone()).collect())
            .unwrap_or_default();
        let client = match one_session(&in_flight) {
            // Roots belong to the session, not to the call in flight: a
            // server asks for them after `list_changed`, whatever call runs
            // then, and its answer must not be dropped when that call ends
            // first. So the session's own client answers when it has one.
            Pick::One(client) if ask == Ask::Roots => sessions_with_roots()
                .into_iter()
                .find(|session| session.session() == client.session())
                .unwrap_or(client),
            Pick::One(client) => client,
            Pick::Many => {
                return Err(refusal(
                    server,
                    ask,
                    "calls from several client sessions are in progress on this server, so zenmode cannot tell which client the request is for",
                ));
            }
            Pick::None if ask == Ask::Roots => match one_session(&sessions_with_roots()) {
                Pick::One(client) => client,
                Pick::None => {
                    return Err(refusal(server, ask, "no connected client offers roots"));
                }
                Pick::Many => {
                    return Err(refusal(
                        server,
                        ask,
                        "no call is in progress and several connected clients offer roots",
                    ));
                }
            },
            Pick::None => {
                return Err(refusal(
                    server,
                    ask,
                    "no call from a session that can be asked (one opened with initialize) was in progress on this server",
                ));
            }
        };
        if !client.can(ask) {
            return Err(refusal(
                server,
                ask,
                &format!(
                    "zenmode's client did not declare the {} capability",
                    ask.capability()
                ),
            ));
        }
        Ok(client)
    }

    pub async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        if !matches!(params, ElicitRequestParams::FormElicitationParams { .. }) {
            // Only form mode is declared to upstreams.
            return Err(refusal(
                server,
                Ask::Elicitation,
                "only form-mode elicitation is passed on",
            ));
        }
        let client = self.route(server, Ask::Elicitation)?;
        tracing::info!(server, "passing an elicitation request to the client");
        client.elicit(params).await
    }

    pub async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let client = self.route(server, Ask::Sampling)?;
        tracing::info!(server, "passing a sampling request to the client");
        client.create_message(params).await
    }

    pub async fn list_roots(&self, server: &str) -> Result<ListRootsResult, ErrorData> {
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
        let client = self.route(server, Ask::Roots)?;
        tracing::debug!(server, "passing roots/list to the client");
        client.list_roots().await
    }
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
    ) -> Result<InputResponses, ErrorData> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            let answer = match request {
                InputRequest::Elicitation(request) => {
                    serde_json::to_value(self.elicit(server, request.params).await?)
                }
                InputRequest::CreateMessage(request) => {
                    serde_json::to_value(self.create_message(server, request.params).await?)
                }
                InputRequest::ListRoots(_) => serde_json::to_value(self.list_roots(server).await?),
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
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// A client whose roots name `label`; `ended` marks the end of what it
    /// stands for (a call, or the session).
    struct Fake {
        session: usize,
        label: &'static str,
        ended: AtomicBool,
    }

    #[async_trait::async_trait]
    impl ClientRequests for Fake {
        fn session(&self) -> usize {
            self.session
        }
        fn can(&self, _ask: Ask) -> bool {
            true
        }
        fn is_closed(&self) -> bool {
            self.ended.load(Ordering::SeqCst)
        }
        async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
            Err(ErrorData::internal_error(self.label, None))
        }
        async fn create_message(
            &self,
            _params: CreateMessageRequestParams,
        ) -> Result<CreateMessageResult, ErrorData> {
            Err(ErrorData::internal_error(self.label, None))
        }
        async fn list_roots(&self) -> Result<ListRootsResult, ErrorData> {
            Ok(serde_json::from_value(
                json!({"roots": [{"uri": format!("file:///{}", self.label)}]}),
            )
            .unwrap())
        }
    }

    fn fake(session: usize, label: &'static str) -> Arc<dyn ClientRequests> {
        Arc::new(Fake {
            session,
            label,
            ended: AtomicBool::new(false),
        })
    }

    #[tokio::test]
    async fn roots_asked_during_a_call_go_to_the_session_not_the_call() {
        // A session number no other test uses: the session list is global.
        let session = usize::MAX - 17;
        let session_client = fake(session, "session");
        ROOT_SESSIONS
            .lock()
            .unwrap()
            .push(Arc::downgrade(&session_client));
        let callers = Callers::default();
        let call_client = fake(session, "call");
        let _call = callers.enter(Some(&call_client));

        let roots = callers.list_roots("fs").await.unwrap();
        assert_eq!(roots.roots[0].uri, "file:///session", "{roots:?}");
        // Requests made for the call itself still go to the call.
        let elicited = callers
            .elicit(
                "fs",
                serde_json::from_value(json!({
                    "mode": "form", "message": "name?",
                    "requestedSchema": {"type": "object", "properties": {}}
                }))
                .unwrap(),
            )
            .await
            .unwrap_err();
        assert_eq!(elicited.message, "call");
    }
}
