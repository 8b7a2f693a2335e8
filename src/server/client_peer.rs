//! A session's client, as the gateway asks it: the upstreams' elicitation,
//! sampling and roots requests go to the peer of the session whose call is
//! in progress (see `gateway::flowback`).

// Sampling and roots are deprecated for 2026-07-28, not for the sessions
// opened with `initialize` that this serves.
#![allow(deprecated)]

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode, ListRootsRequest,
        ListRootsResult, ServerRequest,
    },
    service::{Peer, ServiceError},
};
use tokio_util::sync::CancellationToken;

use crate::call::{Ask, ClientRequests};

/// One session's peer. `session` is stable for the session (the address of
/// its state), so calls of one session are told apart from another's.
pub struct SessionClient {
    pub peer: Peer<RoleServer>,
    pub session: usize,
    /// The session's end: a request still waiting on the client is dropped.
    pub closed: CancellationToken,
}

impl SessionClient {
    pub fn shared(self) -> Arc<dyn ClientRequests> {
        Arc::new(self)
    }

    async fn ask(&self, request: ServerRequest) -> Result<ClientResult, ErrorData> {
        let asked = self.peer.send_request(request);
        tokio::select! {
            answer = asked => answer.map_err(from_service_error),
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
