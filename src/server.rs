//! The MCP face of the engine: an rmcp `ServerHandler` over a strategy.
//!
//! rmcp handles the lifecycle (`initialize` for 2025-era clients, inline
//! `server/discover` metadata for 2026-07-28 clients), pings, cancellation and
//! error codes. This file only answers what is ours: the tool list and tool
//! calls (both through the [`Strategy`]), and `subscriptions/listen`
//! (accepted; the list never changes, so nothing is ever sent on it).

use std::sync::Arc;

use async_trait::async_trait;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
        ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
        ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool,
    },
    service::{Peer, RequestContext},
};

use crate::{
    engine::{Engine, Outcome},
    services::{CallContext, ProgressSink},
    surface::Strategy,
};

/// Methods rmcp types itself; reaching `on_custom_request` means bad params.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "tools/call",
    "subscriptions/listen",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
];

/// One per process; cloned (cheaply) into every session.
#[derive(Clone)]
pub struct ZenServer {
    engine: Arc<Engine>,
    strategy: Arc<dyn Strategy>,
    /// `tools/list` in rmcp's types, converted once from the strategy's JSON.
    tools: Arc<Vec<Tool>>,
}

impl ZenServer {
    pub fn new(
        engine: Arc<Engine>,
        strategy: Arc<dyn Strategy>,
    ) -> Result<Self, serde_json::Error> {
        let tools = strategy
            .tools()
            .iter()
            .map(|tool| serde_json::from_value(tool.clone()))
            .collect::<Result<Vec<Tool>, _>>()?;
        Ok(ZenServer {
            engine,
            strategy,
            tools: Arc::new(tools),
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The `tools/list` result: a clone of the list built at start-up.
    pub fn tools_list_result(&self) -> ListToolsResult {
        ListToolsResult::with_all_items((*self.tools).clone())
    }
}

/// Sends `notifications/progress` for a call whose client sent a progress token.
struct PeerProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

#[async_trait]
impl ProgressSink for PeerProgress {
    async fn report(&self, progress: f64, message: String) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
        param.message = Some(message);
        if let Err(error) = self.peer.notify_progress(param).await {
            tracing::debug!(%error, "could not send progress");
        }
    }
}

/// A tool outcome as MCP content: the JSON as text, and as `structuredContent`.
pub fn to_call_result(outcome: Outcome) -> CallToolResult {
    if outcome.is_error {
        CallToolResult::structured_error(outcome.body)
    } else {
        CallToolResult::structured(outcome.body)
    }
}

impl ServerHandler for ZenServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("zenmode", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("zenmode".to_owned());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(self.strategy.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(self.tools_list_result())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let progress = context.meta.get_progress_token().map(|token| {
            Arc::new(PeerProgress {
                peer: context.peer.clone(),
                token,
            }) as Arc<dyn ProgressSink>
        });
        let call = CallContext {
            cancel: context.ct.clone(),
            progress,
        };
        match self
            .strategy
            .call(&self.engine, &request.name, arguments, &call)
            .await
        {
            Ok(outcome) => Ok(to_call_result(outcome).into()),
            Err(unknown) => Err(ErrorData::invalid_params(
                format!(
                    "{unknown}; this server lists: {}",
                    self.strategy.tool_names().join(", ")
                ),
                None,
            )),
        }
    }

    /// rmcp hands over anything it could not type, which includes standard
    /// methods whose params are malformed: those get -32602, the rest -32601.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        if STANDARD_METHODS.contains(&method) {
            Err(ErrorData::invalid_params(
                format!(
                    "Invalid params for {method}: they do not match the MCP schema for this method"
                ),
                None,
            ))
        } else {
            Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
                None,
            ))
        }
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::default())
    }
}
