//! The MCP face of the engine: an rmcp `ServerHandler` over a strategy.
//!
//! rmcp handles the lifecycle (`initialize` for 2025-era clients, inline
//! `server/discover` metadata for 2026-07-28 clients), pings, cancellation and
//! error codes. This file only answers what is ours: the tool list and tool
//! calls (both through the [`Strategy`], with this session's state), the
//! `tools/list_changed` notification when a call changed a 2025 session's
//! list, and `subscriptions/listen` (accepted; a 2026-07-28 list never
//! changes, so nothing is ever sent on it). The upstreams' resources,
//! prompts and completion are passed through by `resources.rs`.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::Value;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest,
        CustomResult, ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
        ProgressNotificationParam, ProgressToken, ProtocolVersion, ResultType, ServerCapabilities,
        ServerConfig, SubscriptionFilter, Tool,
    },
    service::{NotificationContext, Peer, RequestContext},
};

use super::{
    activity_feed::{ActivityFeed, CallRecord},
    client_peer, resources, result_handles,
};
use crate::{
    call::{CallContext, ClientRequests, FlowBackLoad, NestedCalls, ProgressSink, Resume},
    engine::{Engine, Outcome},
    server::transport::OwedNotices,
    surface::{
        Session, SessionView, Strategy, initial_tools, tool_names,
        zen::{ScriptHost, ScriptWrites},
    },
};

/// How long a client may keep a fixed `tools/list` (a day): the list only
/// changes when the server is restarted with other options.
const FIXED_LIST_TTL_MS: u64 = 24 * 60 * 60 * 1000;

/// How long a call waits for rmcp to take its `list_changed` notification.
/// Once the client has closed its input, rmcp only drains responses and no
/// longer reads notifications; waiting longer would hold the call's own
/// response until rmcp gives up on it.
const NOTIFY_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

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
    /// (For strategies whose list never changes; the others convert per request.)
    tools: Arc<Vec<Tool>>,
    /// What this session has switched on; a new connection gets a new one.
    session: Arc<Session>,
    /// The activity log line of a call also carries its arguments.
    log_arguments: bool,
    /// `list_changed` notifications rmcp did not take, for the transport.
    owed: Arc<OwedNotices>,
    /// The session's client once initialized, kept here so the gateway's
    /// weak reference (for upstreams asking roots between calls) lives
    /// exactly as long as the session.
    client: Arc<OnceLock<Arc<dyn ClientRequests>>>,
    /// This session's upstream resource subscriptions.
    resources: Arc<resources::SessionResources>,
    /// What upstreams have asked of this session's client (for their bounds).
    flow_back: Arc<FlowBackLoad>,
    /// How a `script` run by a call reaches other modes.
    scripts: Arc<dyn NestedCalls>,
    /// Names this session as the owner of the result handles its calls
    /// make (HTTP calls are owned by their bearer token instead).
    session_key: Arc<str>,
    /// Where a shared instance's dashboard reads the recent calls.
    feed: Option<Arc<ActivityFeed>>,
    /// The profile whose servers this server's sessions see.
    profile: Option<Arc<str>>,
    /// The catalog's size, and the bytes of the full tool list and of this
    /// server's list measured at that size (the dashboard's tokens saved).
    full_list: Arc<std::sync::Mutex<(usize, usize, usize)>>,
}

/// A fresh, unguessable session key.
fn new_session_key() -> Arc<str> {
    Arc::from(format!("session:{}", uuid::Uuid::new_v4()))
}

fn json_bytes(tools: &[Value]) -> usize {
    serde_json::to_vec(tools).map_or(0, |bytes| bytes.len())
}

/// JSON tool definitions in rmcp's types.
fn to_rmcp_tools(tools: &[Value]) -> Result<Vec<Tool>, serde_json::Error> {
    tools
        .iter()
        .map(|tool| serde_json::from_value(tool.clone()))
        .collect()
}

/// Whether a request's session may see its tool list change: only a session
/// opened with `initialize` at a protocol up to 2025-11-25.
fn list_may_change(context: &RequestContext<RoleServer>) -> bool {
    context.peer.peer_info().is_some_and(|info| {
        info.protocol_version.as_str() <= ProtocolVersion::V_2025_11_25.as_str()
    })
}

impl ZenServer {
    pub fn new(
        engine: Arc<Engine>,
        strategy: Arc<dyn Strategy>,
    ) -> Result<Self, serde_json::Error> {
        let tools = to_rmcp_tools(&initial_tools(strategy.as_ref()))?;
        let resources = Arc::new(resources::SessionResources::new(
            engine.services().gateway.clone(),
        ));
        let scripts = Arc::new(ScriptHost::new(engine.clone(), ScriptWrites::Deny));
        Ok(ZenServer {
            resources,
            scripts,
            engine,
            strategy,
            tools: Arc::new(tools),
            session: Arc::new(Session::default()),
            log_arguments: false,
            owed: Arc::default(),
            client: Arc::default(),
            flow_back: Arc::default(),
            session_key: new_session_key(),
            feed: None,
            profile: None,
            full_list: Arc::default(),
        })
    }

    /// Each call also goes to `feed` (a shared instance's dashboard), with
    /// the client's name and `profile`.
    pub fn with_feed(mut self, feed: Arc<ActivityFeed>, profile: Option<&str>) -> Self {
        self.feed = Some(feed);
        self.profile = profile.map(Arc::from);
        self
    }

    /// Tokens of the full tool list that this session's list spares the
    /// client, at four bytes a token.
    fn tokens_saved(&self) -> usize {
        let catalog = self.engine.catalog();
        let listed = || json_bytes(&self.strategy.tools(self.view(false)));
        let mut cached = self
            .full_list
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cached.0 != catalog.len() || cached.1 == 0 {
            let options = crate::surface::SurfaceOptions::default();
            let full = crate::surface::StrategyKind::Full
                .over(&catalog, &options)
                .map(|full| json_bytes(&initial_tools(full.as_ref())))
                .unwrap_or(0);
            *cached = (catalog.len(), full, listed());
        }
        // A list that follows the session (`lazy`, `groups`) is measured
        // anew; a fixed one once with the full list.
        let listed = if self.strategy.is_dynamic() {
            listed()
        } else {
            cached.2
        };
        cached.1.saturating_sub(listed) / 4
    }

    /// Every call's activity line also carries its arguments (`--log-arguments`).
    pub fn with_log_arguments(mut self, log_arguments: bool) -> Self {
        self.log_arguments = log_arguments;
        self
    }

    /// Whether scripts may call tools that change things
    /// (`--script-writes`), and how long one may run (`--script-max-ms`).
    pub fn with_scripts(mut self, writes: ScriptWrites, longest: std::time::Duration) -> Self {
        self.scripts = Arc::new(ScriptHost::new(self.engine.clone(), writes).with_longest(longest));
        self
    }

    /// Runs once this stdio or TCP session ended: its result handles, which
    /// nobody else may read, are deleted from the store (over HTTP a handle
    /// belongs to the client's token, which outlives a session).
    pub fn session_end(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let results = self.engine.services().results.clone();
        let key = self.session_key.clone();
        async move { results.end_session(&key).await }
    }

    /// What this session's transport must write before some replies.
    pub fn owed_notices(&self) -> Arc<OwedNotices> {
        self.owed.clone()
    }

    /// The same server for another session: shared engine and strategy,
    /// fresh session state.
    pub fn new_session(&self) -> Self {
        ZenServer {
            session: Arc::new(Session::default()),
            owed: Arc::default(),
            client: Arc::default(),
            flow_back: Arc::default(),
            session_key: new_session_key(),
            resources: Arc::new(resources::SessionResources::new(
                self.engine.services().gateway.clone(),
            )),
            ..self.clone()
        }
    }

    fn view(&self, list_may_change: bool) -> SessionView<'_> {
        SessionView {
            state: &self.session,
            list_may_change,
        }
    }

    /// The session's current `tools/list` result.
    fn session_tools(&self, list_may_change: bool) -> Result<ListToolsResult, ErrorData> {
        if !self.strategy.is_dynamic() {
            return Ok(self.tools_list_result());
        }
        let tools = self.strategy.tools(self.view(list_may_change));
        to_rmcp_tools(&tools)
            .map(ListToolsResult::with_all_items)
            .map_err(|e| {
                ErrorData::internal_error(format!("a tool definition is invalid: {e}"), None)
            })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The client of this session, for upstream requests during a call.
    fn session_client(
        &self,
        peer: &Peer<RoleServer>,
        call: &tokio_util::sync::CancellationToken,
    ) -> Arc<dyn ClientRequests> {
        client_peer::SessionClient {
            peer: peer.clone(),
            session: Arc::as_ptr(&self.session) as usize,
            closed: call.clone(),
            load: self.flow_back.clone(),
        }
        .shared()
    }

    /// Whether the tool `name`, as this session lists it, declares an
    /// output schema (its structured content must then follow it).
    fn declares_output_schema(&self, name: &str, list_may_change: bool) -> bool {
        self.strategy
            .tools(self.view(list_may_change))
            .iter()
            .any(|tool| tool["name"] == name && tool.get("outputSchema").is_some())
    }

    /// The `tools/list` result a new session gets: a clone of the list built
    /// at start-up.
    pub fn tools_list_result(&self) -> ListToolsResult {
        ListToolsResult::with_all_items((*self.tools).clone())
    }
}

impl ZenServer {
    /// What the dashboard shows of one call.
    fn call_record(
        &self,
        tool: &str,
        call: &CallContext,
        took: std::time::Duration,
        answer: &Result<CallToolResult, crate::surface::UnknownTool>,
        context: &RequestContext<RoleServer>,
    ) -> CallRecord {
        let (mode, server) = call.activity.noted().unwrap_or_default();
        let (outcome, bytes) = outcome_of(call, answer);
        CallRecord {
            at_ms: crate::gateway::status_file::now_ms(),
            client: context
                .peer
                .peer_info()
                .map(|info| info.client_info.name.clone())
                .unwrap_or_else(|| "-".to_owned()),
            profile: self.profile.as_deref().unwrap_or("-").to_owned(),
            tool: tool.to_owned(),
            mode: if mode.is_empty() {
                "-".to_owned()
            } else {
                mode
            },
            server: server.unwrap_or_else(|| "-".to_owned()),
            ms: took.as_millis() as u64,
            outcome: outcome.to_owned(),
            bytes,
            tokens_saved: self.tokens_saved(),
        }
    }
}

/// How a call ended and the size of its result.
fn outcome_of(
    call: &CallContext,
    answer: &Result<CallToolResult, crate::surface::UnknownTool>,
) -> (&'static str, usize) {
    match answer {
        Ok(result) => {
            let outcome = if result.is_error == Some(true) {
                "error"
            } else if call.cancel.is_cancelled() {
                "cancelled"
            } else {
                "ok"
            };
            (outcome, result_handles::json_size(result))
        }
        Err(_) => ("unknown_tool", 0),
    }
}

/// The activity log: one INFO line per tool call (target
/// `zenmode::activity`) with the tool, the mode and upstream server it ran,
/// how long it took, how it ended and the size of its result; the
/// arguments only when asked for (`--log-arguments`), since they may hold
/// anything a user typed.
fn log_activity(
    tool: &str,
    call: &CallContext,
    took: std::time::Duration,
    answer: &Result<CallToolResult, crate::surface::UnknownTool>,
    arguments: Option<&str>,
) {
    let (mode, server) = call.activity.noted().unwrap_or_default();
    let (outcome, bytes) = outcome_of(call, answer);
    let ms = took.as_millis() as u64;
    let server = server.as_deref().unwrap_or("-");
    let mode = if mode.is_empty() { "-" } else { mode.as_str() };
    match arguments {
        None => tracing::info!(
            target: "zenmode::activity",
            tool, mode, server, ms, outcome, bytes, "tool call"
        ),
        Some(arguments) => tracing::info!(
            target: "zenmode::activity",
            tool, mode, server, ms, outcome, bytes, arguments, "tool call"
        ),
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
        self.report_detail(progress, None, Some(message)).await;
    }

    async fn report_detail(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
        param.total = total;
        param.message = message;
        if let Err(error) = self.peer.notify_progress(param).await {
            tracing::debug!(%error, "could not send progress");
        }
    }
}

/// A tool outcome as MCP content: the JSON as text, and as `structuredContent`;
/// an upstream's own result (gateway modes) goes out exactly as it came.
pub fn to_call_result(outcome: Outcome) -> CallToolResult {
    if outcome.passthrough {
        match serde_json::from_value::<CallToolResult>(outcome.body) {
            // A 2025-era upstream sends no resultType; ours always has one.
            Ok(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                return result;
            }
            Err(error) => {
                return CallToolResult::structured_error(serde_json::json!({
                    "error": "upstream_error",
                    "message": format!("the upstream result could not be passed on: {error}"),
                }));
            }
        }
    }
    if !outcome.body.is_object() {
        // Structured content must be an object: an array or a plain value
        // (the shapes some designs answer with) goes out as JSON text.
        let mut result = CallToolResult::success(vec![rmcp::model::ContentBlock::text(
            outcome.body.to_string(),
        )]);
        result.is_error = Some(outcome.is_error);
        return result;
    }
    if outcome.is_error {
        CallToolResult::structured_error(outcome.body)
    } else {
        CallToolResult::structured(outcome.body)
    }
}

impl ServerHandler for ZenServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new(
            crate::gateway::config::SERVER_NAME,
            env!("CARGO_PKG_VERSION"),
        );
        implementation.title = Some(crate::gateway::config::SERVER_NAME.to_owned());
        let capabilities = if self.strategy.is_dynamic() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        let capabilities =
            resources::with_upstream_capabilities(capabilities, &self.engine.services().gateway);
        let mut capabilities = capabilities;
        if self.engine.services().results.settings().enabled && capabilities.resources.is_none() {
            // Result handles are read with resources/read.
            capabilities.resources = Some(Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(implementation)
            .with_instructions(self.strategy.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let may_change = list_may_change(&context);
        let result = self.session_tools(may_change)?;
        Ok(if may_change {
            result
        } else {
            // Without a session the list is the same for everyone, for the
            // life of the process: say so, so clients and proxies cache it.
            result
                .with_ttl_ms(FIXED_LIST_TTL_MS)
                .with_cache_scope(CacheScope::Public)
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = std::time::Instant::now();
        let arguments = request.arguments.unwrap_or_default();
        let logged_arguments = self
            .log_arguments
            .then(|| Value::Object(arguments.clone()).to_string());
        let progress = context.meta.get_progress_token().map(|token| {
            Arc::new(PeerProgress {
                peer: context.peer.clone(),
                token,
            }) as Arc<dyn ProgressSink>
        });
        // Only a session opened with `initialize` may be sent requests;
        // 2026-07-28 forbids them.
        let initialized = list_may_change(&context);
        let client = initialized.then(|| self.session_client(&context.peer, &context.ct));
        let resume =
            (request.input_responses.is_some() || request.request_state.is_some()).then(|| {
                Resume {
                    input_responses: request.input_responses.clone(),
                    request_state: request.request_state.clone(),
                }
            });
        let principal = result_handles::principal_of(&self.session_key, &context.extensions);
        let call = CallContext {
            principal: Some(principal.clone()),
            cancel: context.ct.clone(),
            progress,
            client,
            takes_input_required: context
                .protocol_version()
                .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()),
            resume,
            nested: Some(self.scripts.clone()),
            ..CallContext::default()
        };
        let may_change = list_may_change(&context);
        let changes_before = self.session.changes();
        let answer = self
            .strategy
            .call(
                &self.engine,
                self.view(may_change),
                &request.name,
                arguments,
                &call,
            )
            .await;
        if may_change && self.session.changes() != changes_before {
            // Clients that ignore the notification can still re-list.
            match tokio::time::timeout(NOTIFY_WAIT, context.peer.notify_tool_list_changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::debug!(%error, "could not send tools/list_changed"),
                Err(_) => {
                    // The session is closing: the transport writes it
                    // before this call's reply.
                    tracing::debug!("tools/list_changed not taken; sent before the reply");
                    self.owed.owe(context.id.clone());
                }
            }
        }
        let answer = match answer.map(client_peer::input_required) {
            Ok(Ok(asked)) => {
                let (mode, server) = call.activity.noted().unwrap_or_default();
                tracing::info!(
                    target: "zenmode::activity",
                    tool = %request.name, mode, server = server.as_deref().unwrap_or("-"),
                    ms = started.elapsed().as_millis() as u64, outcome = "input_required",
                    "tool call"
                );
                return Ok(CallToolResponse::InputRequired(asked));
            }
            Ok(Err(outcome)) => {
                let result = to_call_result(outcome);
                Ok(if self.declares_output_schema(&request.name, may_change) {
                    result
                } else {
                    let results = &self.engine.services().results;
                    result_handles::offload(result, results, &principal).await
                })
            }
            Err(unknown) => Err(unknown),
        };
        log_activity(
            &request.name,
            &call,
            started.elapsed(),
            &answer,
            logged_arguments.as_deref(),
        );
        if let Some(feed) = &self.feed {
            feed.push(self.call_record(&request.name, &call, started.elapsed(), &answer, &context));
        }
        match answer {
            Ok(result) => Ok(result.into()),
            Err(unknown) => {
                let listed = tool_names(&self.strategy.tools(self.view(may_change)));
                Err(ErrorData::invalid_params(
                    format!("{unknown}; this server lists: {}", listed.join(", ")),
                    None,
                ))
            }
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        self.resources.upstream_resources(request).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        self.resources.upstream_templates().await
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let principal = result_handles::principal_of(&self.session_key, &context.extensions);
        let results = &self.engine.services().results;
        if let Some(read) = result_handles::read(results, &principal, &request.uri).await {
            return read.map(rmcp::model::ReadResourceResponse::Complete);
        }
        self.resources.upstream_read(request).await
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resources
            .upstream_subscribe(request, context.peer)
            .await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resources.upstream_unsubscribe(request).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        self.resources.upstream_prompts().await
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        self.resources.upstream_prompt(request).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        self.resources.upstream_complete(request).await
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

    /// Upstream resource notifications start flowing to this session, and
    /// a client offering roots lends them to the upstreams: they are told
    /// to ask again (see `gateway::flowback`).
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.resources.forward_to(context.peer.clone());
        let client = self
            .client
            .get_or_init(|| {
                self.session_client(&context.peer, &tokio_util::sync::CancellationToken::new())
            })
            .clone();
        self.engine
            .services()
            .gateway
            .client_connected(&client)
            .await;
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.engine.services().gateway.roots_changed().await;
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::default())
    }
}
