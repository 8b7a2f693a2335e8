//! The MCP side of the upstreams' resources, prompts and completion: the
//! handler methods of `ZenServer` delegate here, and the gateway
//! (`gateway::resources`) does the routing.
//!
//! Each session keeps the resources it subscribed to and, once it has
//! initialized or subscribed, one task that passes the upstreams'
//! `resources/updated` (for its subscriptions) and `list_changed`
//! notifications on. A session that ends releases its subscriptions.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, Weak, atomic::AtomicBool, atomic::Ordering},
};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams,
        GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ResourceUpdatedNotificationParam, ServerCapabilities, SubscribeRequestParams,
        UnsubscribeRequestParams,
    },
    service::Peer,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::gateway::{
    FailureKind, Gateway, GatewayError, events::UpstreamEvent, resource_hub::Route,
};

/// One session's subscriptions and its notification task.
pub struct SessionResources {
    gateway: Arc<Gateway>,
    /// URI as the client wrote it -> where it lives.
    subscribed: Mutex<BTreeMap<String, Route>>,
    forwarding: AtomicBool,
    stop: CancellationToken,
}

impl SessionResources {
    pub fn new(gateway: Arc<Gateway>) -> Self {
        SessionResources {
            gateway,
            subscribed: Mutex::default(),
            forwarding: AtomicBool::new(false),
            stop: CancellationToken::new(),
        }
    }

    fn subscribed(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Route>> {
        self.subscribed.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the session's notification task, once.
    pub fn forward_to(self: &Arc<Self>, peer: Peer<RoleServer>) {
        if self.gateway.is_empty() || self.forwarding.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut events = self.gateway.upstream_events();
        let session: Weak<SessionResources> = Arc::downgrade(self);
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = stop.cancelled() => return,
                    event = events.recv() => event,
                };
                let event = match event {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "a session missed upstream notifications");
                        continue;
                    }
                    Err(_) => return,
                };
                let sent = match event {
                    UpstreamEvent::ResourceUpdated { server, uri } => {
                        let Some(session) = session.upgrade() else {
                            return;
                        };
                        let uris: Vec<String> = session
                            .subscribed()
                            .iter()
                            .filter(|(_, route)| route.server == server && route.uri == uri)
                            .map(|(client_uri, _)| client_uri.clone())
                            .collect();
                        let mut sent = Ok(());
                        for uri in uris {
                            sent = peer
                                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                                .await;
                        }
                        sent
                    }
                    UpstreamEvent::ResourcesChanged => peer.notify_resource_list_changed().await,
                    UpstreamEvent::PromptsChanged => peer.notify_prompt_list_changed().await,
                    UpstreamEvent::Restarted { .. } => Ok(()),
                };
                if sent.is_err() && peer.is_transport_closed() {
                    return;
                }
            }
        });
    }
}

impl Drop for SessionResources {
    /// A closed session holds no upstream subscription.
    fn drop(&mut self) {
        self.stop.cancel();
        let routes: Vec<Route> = self.subscribed().values().cloned().collect();
        if routes.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let gateway = self.gateway.clone();
        runtime.spawn(async move {
            for route in routes {
                if let Err(error) = gateway.unsubscribe_resource(&route).await {
                    tracing::debug!(server = error.server, "{}", error.message);
                }
            }
        });
    }
}

/// `capabilities` with resources, prompts and completion added where some
/// upstream offers them.
pub fn with_upstream_capabilities(
    capabilities: ServerCapabilities,
    gateway: &Gateway,
) -> ServerCapabilities {
    let offered = gateway.offered();
    let Ok(mut value) = serde_json::to_value(&capabilities) else {
        return capabilities;
    };
    let flag = |on: bool| if on { Some(Value::Bool(true)) } else { None };
    let section = |pairs: &[(&str, Option<Value>)]| {
        Value::Object(
            pairs
                .iter()
                .filter_map(|(key, value)| Some(((*key).to_owned(), value.clone()?)))
                .collect(),
        )
    };
    if offered.resources {
        value["resources"] = section(&[
            ("subscribe", flag(offered.subscribe)),
            ("listChanged", flag(offered.resources_list_changed)),
        ]);
    }
    if offered.prompts {
        value["prompts"] = section(&[("listChanged", flag(offered.prompts_list_changed))]);
    }
    if offered.completions {
        value["completions"] = Value::Object(Default::default());
    }
    serde_json::from_value(value).unwrap_or(capabilities)
}

/// A gateway failure as a JSON-RPC error: the client's mistakes are
/// invalid params, an upstream's refusal keeps the upstream's code.
fn to_error(error: GatewayError) -> ErrorData {
    let code = match error.kind {
        FailureKind::UnknownResource => ErrorCode::RESOURCE_NOT_FOUND,
        FailureKind::InvalidCursor
        | FailureKind::UnknownPrompt
        | FailureKind::InvalidReference
        | FailureKind::UnknownUpstream => ErrorCode::INVALID_PARAMS,
        FailureKind::UpstreamError => {
            upstream_code(&error.message).unwrap_or(ErrorCode::INTERNAL_ERROR)
        }
        _ => ErrorCode::INTERNAL_ERROR,
    };
    ErrorData::new(code, error.message, None)
}

/// The code an upstream's refusal carried (its message ends `(code N)`).
fn upstream_code(message: &str) -> Option<ErrorCode> {
    let (_, tail) = message.rsplit_once("(code ")?;
    tail.strip_suffix(')')?.parse().ok().map(ErrorCode)
}

/// An upstream's JSON answer in rmcp's type.
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| {
        ErrorData::internal_error(
            format!("an upstream's answer could not be passed on: {e}"),
            None,
        )
    })
}

/// What the server's handler methods for resources, prompts and
/// completion delegate to: the gateway, for this session.
impl SessionResources {
    pub(super) async fn upstream_resources(
        &self,
        request: Option<PaginatedRequestParams>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let page = self
            .gateway
            .list_resources(cursor.as_deref())
            .await
            .map_err(to_error)?;
        typed(page)
    }

    pub(super) async fn upstream_templates(
        &self,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        typed(self.gateway.list_resource_templates().await)
    }

    pub(super) async fn upstream_read(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let result = self
            .gateway
            .read_resource(&request.uri)
            .await
            .map_err(to_error)?;
        Ok(ReadResourceResponse::Complete(typed(result)?))
    }

    pub(super) async fn upstream_subscribe(
        self: &Arc<Self>,
        request: SubscribeRequestParams,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.forward_to(peer);
        if self.subscribed().contains_key(&request.uri) {
            return Ok(());
        }
        let route = self
            .gateway
            .subscribe_resource(&request.uri)
            .await
            .map_err(to_error)?;
        // Two subscribes to one URI at once both took a hold; the session
        // keeps one, so the other is given back (or the upstream would
        // never hear the unsubscribe).
        let duplicate = self.subscribed().insert(request.uri, route.clone());
        if duplicate.is_some() {
            self.gateway
                .unsubscribe_resource(&route)
                .await
                .map_err(to_error)?;
        }
        Ok(())
    }

    pub(super) async fn upstream_unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let route = self.subscribed().remove(&request.uri);
        match route {
            Some(route) => self
                .gateway
                .unsubscribe_resource(&route)
                .await
                .map_err(to_error),
            None => Ok(()),
        }
    }

    pub(super) async fn upstream_prompts(&self) -> Result<ListPromptsResult, ErrorData> {
        typed(self.gateway.list_prompts().await)
    }

    pub(super) async fn upstream_prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResponse, ErrorData> {
        let result = self
            .gateway
            .get_prompt(&request.name, request.arguments)
            .await
            .map_err(to_error)?;
        Ok(GetPromptResponse::Complete(typed(result)?))
    }

    pub(super) async fn upstream_complete(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        // Without upstreams nothing can own the reference: no suggestions,
        // as the server answered before it passed completion through.
        if self.gateway.is_empty() {
            return Ok(CompleteResult::default());
        }
        let params = serde_json::to_value(&request).map_err(|e| {
            ErrorData::invalid_params(format!("completion request unreadable: {e}"), None)
        })?;
        typed(self.gateway.complete(params).await.map_err(to_error)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstream_refusal_keeps_its_code() {
        assert_eq!(
            upstream_code("server \"x\" refused the call: bad (code -32602)"),
            Some(ErrorCode::INVALID_PARAMS)
        );
        assert_eq!(upstream_code("no code here"), None);
    }
}
