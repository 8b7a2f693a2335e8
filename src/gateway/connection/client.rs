//! zenmode as the MCP client of one upstream: the progress it reports goes
//! to the call that asked, its resource and prompt notifications become
//! [`UpstreamEvent`]s, and what it asks of the client (elicitation,
//! sampling, roots) goes to the calling session
//! ([`crate::gateway::flowback`]).

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientConfig, ElicitRequestParams, ElicitResult, Implementation, ProgressNotificationParam,
    },
    service::{NotificationContext, RequestContext},
};

use super::progress::{ProgressRoutes, pass_on};
use crate::gateway::{
    config::Redactor,
    events::{EventSender, UpstreamEvent},
    flowback::{self, Asked, Callers, Origin, RootsResult, SamplingParams, SamplingResult},
};

/// zenmode as a client of one upstream.
pub(super) struct ClientSide {
    pub(super) server: String,
    pub(super) routes: ProgressRoutes,
    /// The calls in flight, whose clients answer what the server asks.
    pub(super) callers: Callers,
    /// Where resource and prompt notifications go (see [`EventSender`]).
    pub(super) events: Option<EventSender>,
    /// The server's own secrets, hidden in what it sends the client.
    pub(super) redactor: Redactor,
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            flowback::upstream_capabilities(),
            Implementation::new("zenmode-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        params.message = params.message.map(|text| self.secrets().redact(&text));
        if let Some(sink) = self.routes.sink_of(&params) {
            pass_on(&*sink, params).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.relay(UpstreamEvent::ResourceUpdated {
            server: self.server.clone(),
            uri: params.uri,
        });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay(UpstreamEvent::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relay(UpstreamEvent::PromptsChanged);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = self.hidden(request);
        self.callers
            .elicit(&self.server, request, asked(&context))
            .await
    }

    async fn create_message(
        &self,
        params: SamplingParams,
        context: RequestContext<RoleClient>,
    ) -> Result<SamplingResult, ErrorData> {
        let params = self.hidden(params);
        self.callers
            .create_message(&self.server, params, asked(&context))
            .await
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<RootsResult, ErrorData> {
        self.callers.list_roots(&self.server, asked(&context)).await
    }
}

/// Where the request came from, and the server's cancel of it.
fn asked(context: &RequestContext<RoleClient>) -> Asked {
    Asked {
        origin: Origin::of(&context.extensions),
        stop: context.ct.clone(),
    }
}

impl ClientSide {
    /// What is hidden in what the server sends the client: its own secrets
    /// and every OAuth secret the process holds.
    fn secrets(&self) -> Redactor {
        crate::gateway::oauth::token_file::with_held(&self.redactor)
    }

    /// `value` (a request the server sends the client) with them hidden.
    fn hidden<T: serde::Serialize + serde::de::DeserializeOwned>(&self, value: T) -> T {
        self.secrets().redact_typed(value)
    }

    fn relay(&self, event: UpstreamEvent) {
        if let Some(events) = &self.events {
            // No session listening is not an error.
            let _ = events.send(event);
        }
    }
}
