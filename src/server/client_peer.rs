//! A session's client, as the gateway asks it: the upstreams' elicitation,
//! sampling and roots requests go to the peer of the session whose call is
//! in progress (see `gateway::flowback`).

// Sampling and roots are deprecated for 2026-07-28, not for the sessions
// opened with `initialize` that this serves.
#![allow(deprecated)]

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CancelledNotificationParam, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
        CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode,
        ListRootsRequest, ListRootsResult, RequestId, ServerRequest,
    },
    service::{Peer, PeerRequestOptions, ServiceError},
};
use tokio_util::sync::CancellationToken;

use crate::call::{Ask, ClientRequests, FlowBackLoad};

/// One session's peer. `session` is stable for the session (the address of
/// its state), so calls of one session are told apart from another's.
pub struct SessionClient {
    pub peer: Peer<RoleServer>,
    pub session: usize,
    /// The session's end: a request still waiting on the client is dropped.
    pub closed: CancellationToken,
    /// What the session's client has been asked (shared by its calls).
    pub load: Arc<FlowBackLoad>,
}

/// How long telling the client to stop may take (a client that reads
/// nothing must not hold the task).
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// Tells the client a request is withdrawn when the wait for its answer
/// ends without one (the gateway stopped waiting: its call ended, the
/// upstream cancelled it): the client can close its dialog, and rmcp
/// forgets the request.
struct Withdraw {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancel = CancelledNotificationParam::new(
                Some(id),
                Some("the upstream server no longer needs the answer".to_owned()),
            );
            let _ = tokio::time::timeout(CANCEL_WAIT, peer.notify_cancelled(cancel)).await;
        });
    }
}

impl SessionClient {
    pub fn shared(self) -> Arc<dyn ClientRequests> {
        Arc::new(self)
    }

    async fn ask(&self, request: ServerRequest) -> Result<ClientResult, ErrorData> {
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(from_service_error)?;
        let mut withdraw = Withdraw {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
        };
        tokio::select! {
            answer = handle.await_response() => {
                withdraw.id = None;
                answer.map_err(from_service_error)
            }
            _ = self.closed.cancelled() => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "zenmode's client went away before answering",
                None,
            )),
        }
    }
}

/// The client's own error stays as it was; anything else is described.
fn from_service_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("zenmode's client did not answer: {other}"),
            None,
        ),
    }
}

fn unexpected() -> ErrorData {
    ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        "zenmode's client answered with a result of another kind",
        None,
    )
}

#[async_trait]
impl ClientRequests for SessionClient {
    fn session(&self) -> usize {
        self.session
    }

    fn load(&self) -> &FlowBackLoad {
        &self.load
    }

    fn can(&self, ask: Ask) -> bool {
        let Some(info) = self.peer.peer_info() else {
            return false;
        };
        let capabilities = &info.capabilities;
        match ask {
            Ask::Elicitation => capabilities.elicitation.is_some(),
            Ask::Sampling => capabilities.sampling.is_some(),
            Ask::Roots => capabilities.roots.is_some(),
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.is_transport_closed()
    }

    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        match self
            .ask(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
            .await?
        {
            ClientResult::ElicitResult(result) => Ok(result),
            _ => Err(unexpected()),
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = CreateMessageRequest::new(params);
        match self
            .ask(ServerRequest::CreateMessageRequest(request))
            .await?
        {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            _ => Err(unexpected()),
        }
    }

    async fn list_roots(&self) -> Result<ListRootsResult, ErrorData> {
        match self
            .ask(ServerRequest::ListRootsRequest(ListRootsRequest::default()))
            .await?
        {
            ClientResult::ListRootsResult(result) => Ok(result),
            _ => Err(unexpected()),
        }
    }
}

/// An upstream's input-required result (its state already sealed by the
/// gateway), for a 2026-07-28 client; any other outcome as it was.
pub fn input_required(
    outcome: crate::engine::Outcome,
) -> Result<rmcp::model::InputRequiredResult, crate::engine::Outcome> {
    let asks = outcome.passthrough
        && outcome.body.get("resultType").and_then(|t| t.as_str()) == Some("input_required");
    if !asks {
        return Err(outcome);
    }
    serde_json::from_value(outcome.body.clone()).map_err(|_| outcome)
}
