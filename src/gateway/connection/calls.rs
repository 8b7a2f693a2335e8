//! Calls to a running upstream: `tools/call` (a tool whose live definition
//! is not the approved one refused, progress and cancellation forwarded,
//! a 2026-07-28 server's input requests passed on or answered round by
//! round) and the other requests the gateway forwards (resources, prompts,
//! completion). Each is bounded by the entry's timeout, and the server's
//! secrets are hidden in what comes back.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use rmcp::{
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
        DEFAULT_MRTR_MAX_ROUNDS, InputRequiredResult, PaginatedRequestParams, Request,
        RequestOptionalParam, ServerResult,
    },
    service::{PeerRequestOptions, ServiceError},
};
use serde_json::{Map, Value};

use super::{progress::pass_on, running::Connection, upstream::Upstream};
use crate::gateway::error::FailureKind;
use crate::{
    call::CallContext,
    gateway::{
        error::GatewayError,
        flowback::CallerGuard,
        pins::{self, Verdict},
        request_state,
    },
};

impl Upstream {
    /// Starts the server if needed and returns the capabilities it declared.
    pub async fn capabilities(&self) -> Result<Value, GatewayError> {
        Ok(self.connection().await?.capabilities.clone())
    }

    /// Sends one request other than `tools/call` (resources, prompts,
    /// completion) and returns the upstream's result as JSON, secrets hidden.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, GatewayError> {
        let request = client_request(method, params)
            .map_err(|e| self.error(FailureKind::InvalidRequest, format!("{method}: {e}")))?;
        let connection = self.connection().await?;
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        connection.touch();
        let options = PeerRequestOptions::with_timeout(self.config.timeout);
        let asked = async {
            match connection
                .peer
                .send_request_with_option(request, options)
                .await
            {
                Ok(handle) => handle.await_response().await,
                Err(error) => Err(error),
            }
        };
        let answer = within(self.config.timeout, asked).await;
        connection.in_flight.fetch_sub(1, Ordering::SeqCst);
        connection.touch();
        let answer = answer.map_err(|e| self.service_error(e));
        if let Err(error) = &answer
            && error.kind == FailureKind::UpstreamCrashed
        {
            self.note_crash(&connection, &error.message).await;
        }
        let mut result = serde_json::to_value(answer?).map_err(|e| {
            self.error(
                FailureKind::UpstreamError,
                format!("unreadable result: {e}"),
            )
        })?;
        self.secrets().redact_json(&mut result);
        Ok(result)
    }

    /// Starts the server if needed and returns what it lists now.
    pub async fn tools(&self) -> Result<Vec<Value>, GatewayError> {
        let connection = self.connection().await?;
        Ok(connection.live.values().cloned().collect())
    }

    /// Forwards one `tools/call` and returns the upstream's result as JSON,
    /// unchanged (content blocks, `structuredContent`, `isError`).
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        let started = Instant::now();
        let outcome = self.call_started(tool, arguments, call).await;
        let result = match &outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => "error",
            Ok(_) => "ok",
            Err(error) => error.kind.as_str(),
        };
        self.record(|state| {
            state.last_call = Some(crate::gateway::status_file::LastCall {
                tool: tool.to_owned(),
                at_ms: crate::gateway::status_file::now_ms(),
                duration_ms: started.elapsed().as_millis() as u64,
                outcome: result.to_owned(),
            });
            // Signed in again (`zenmode upstream login` while it ran).
            if outcome.is_ok() && state.state == crate::gateway::oauth::NEEDS_SIGN_IN {
                state.state = "running".into();
                state.last_error = None;
            }
        });
        outcome
    }

    async fn call_started(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        // From here on (a start included: a server asks for roots as it
        // starts), what the server asks goes to this call's client.
        let caller = self.callers.enter(call.client.as_ref());
        let connection = self.connection().await?;
        self.check_approved(&connection, tool)?;
        connection.in_flight.fetch_add(1, Ordering::SeqCst);
        connection.touch();
        let outcome = self
            .forward(&connection, tool, arguments, call, &caller)
            .await;
        if outcome.is_ok() {
            caller.answered();
        }
        connection.in_flight.fetch_sub(1, Ordering::SeqCst);
        connection.touch();
        match &outcome {
            Ok(_) => *self.failures.lock().unwrap_or_else(|p| p.into_inner()) = 0,
            Err(error) if error.kind == FailureKind::UpstreamCrashed => {
                self.note_crash(&connection, &error.message).await;
            }
            Err(_) => {}
        }
        outcome
    }

    /// Refuses a tool whose live definition is not the approved one.
    fn check_approved(&self, connection: &Connection, tool: &str) -> Result<(), GatewayError> {
        let Some(definition) = connection.live.get(tool) else {
            return Err(self.error(
                FailureKind::UpstreamToolMissing,
                format!("server {:?} no longer lists the tool {tool:?}; run `zenmode upstream refresh {}`", self.name(), self.name()),
            ));
        };
        let pins = self.pins.lock().unwrap_or_else(|p| p.into_inner());
        let verdict = pins
            .as_ref()
            .map_or(Verdict::New, |pins| pins.verdict(definition));
        if verdict == Verdict::Approved {
            return Ok(());
        }
        Err(self.error(
            FailureKind::Quarantined,
            pins::quarantine_message(self.name(), tool, verdict.reason()),
        ))
    }

    /// Sends the call; a 2026-07-28 server's input-required result goes to
    /// a 2026-07-28 client with the state sealed ([`request_state`]), or,
    /// for a session opened with `initialize`, is answered by asking its
    /// client ([`flowback`]) and sent again, round by round.
    async fn forward(
        &self,
        connection: &Connection,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
        caller: &CallerGuard,
    ) -> Result<Value, GatewayError> {
        let mut params =
            CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        if let Some(resume) = &call.resume {
            params.input_responses = resume.input_responses.clone();
            if let Some(sealed) = &resume.request_state {
                params.request_state = self.unseal(tool, sealed)?;
            }
        }
        let mut rounds = 0;
        loop {
            let result = match self.send_call(connection, params, call, caller).await? {
                ServerResult::CallToolResult(result) => serde_json::to_value(result),
                ServerResult::InputRequiredResult(asked) if call.takes_input_required => {
                    let sealed = request_state::seal(self.name(), tool, asked.request_state);
                    let mut result = InputRequiredResult::new(asked.input_requests, Some(sealed));
                    result.meta = asked.meta;
                    serde_json::to_value(result)
                }
                ServerResult::InputRequiredResult(asked) => {
                    rounds += 1;
                    if rounds > DEFAULT_MRTR_MAX_ROUNDS {
                        return Err(self.error(FailureKind::UpstreamError, format!("server {:?} still asked for input after {DEFAULT_MRTR_MAX_ROUNDS} rounds", self.name())));
                    }
                    let responses = self
                        .callers
                        .fulfil(
                            self.name(),
                            self.secrets()
                                .redact_typed(asked.input_requests.unwrap_or_default()),
                            caller,
                        )
                        .await
                        .map_err(|e| {
                            self.error(FailureKind::InputRefused, e.message.into_owned())
                        })?;
                    params = CallToolRequestParams::new(tool.to_owned())
                        .with_arguments(arguments.clone());
                    params.input_responses = Some(responses);
                    params.request_state = asked.request_state;
                    continue;
                }
                _ => {
                    return Err(self.error(
                        FailureKind::UpstreamError,
                        format!(
                            "server {:?} answered with something other than a tool result (tasks are not supported through the gateway)",
                            self.name()
                        ),
                    ));
                }
            };
            let mut result = result.map_err(|e| {
                self.error(
                    FailureKind::UpstreamError,
                    format!("unreadable result: {e}"),
                )
            })?;
            // An upstream that echoes its own credentials (an error
            // quoting the request, a tool printing its environment)
            // does not hand them to the client.
            self.secrets().redact_json(&mut result);
            return Ok(result);
        }
    }

    /// The upstream's own state from zenmode's sealed one, if it is intact,
    /// unused and this server's.
    fn unseal(&self, tool: &str, sealed: &str) -> Result<Option<String>, GatewayError> {
        let wrapped = request_state::open(sealed)
            .map_err(|message| self.error(FailureKind::InvalidRequestState, message))?;
        if wrapped.server != self.name() || wrapped.tool != tool {
            return Err(self.error(
                FailureKind::InvalidRequestState,
                format!(
                    "the requestState is refused: it belongs to tool {:?} of server {:?}, not to this call of {tool:?} on {:?}",
                    wrapped.tool,
                    wrapped.server,
                    self.name()
                ),
            ));
        }
        Ok(wrapped.state)
    }

    /// One `tools/call` round, with progress and cancellation forwarded.
    async fn send_call(
        &self,
        connection: &Connection,
        params: CallToolRequestParams,
        call: &CallContext,
        caller: &CallerGuard,
    ) -> Result<ServerResult, GatewayError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(self.config.timeout);
        let deadline = tokio::time::Instant::now() + self.config.timeout + DEADLINE_GRACE;
        let timed_out = || ServiceError::Timeout {
            timeout: self.config.timeout,
        };
        let send = caller.sending();
        let handle = tokio::time::timeout_at(
            deadline,
            connection.peer.send_cancellable_request(request, options),
        )
        .await
        .unwrap_or_else(|_| Err(timed_out()))
        .map_err(|e| self.service_error(e))?;
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        // What the server asks on this request's stream is this call's.
        send.tie(id.clone());
        if let Some(sink) = &call.progress {
            for early in self.routes.route(token.clone(), sink.clone()) {
                pass_on(&**sink, early).await;
            }
        }
        let answer = tokio::select! {
            answer = tokio::time::timeout_at(deadline, handle.await_response()) => {
                Some(answer.unwrap_or_else(|_| Err(timed_out())))
            }
            _ = call.cancel.cancelled() => None,
            // rmcp's own timeout covers the wait for the answer but not
            // the cancel it then sends; this covers both.
            () = tokio::time::sleep_until(deadline) => Some(Err(ServiceError::Timeout {
                timeout: self.config.timeout,
            })),
        };
        self.routes.unroute(&token);
        let Some(answer) = answer else {
            let cancel = CancelledNotificationParam::new(
                Some(id),
                Some("the client cancelled the call".to_owned()),
            );
            let _ = tokio::time::timeout(DEADLINE_GRACE, connection.peer.notify_cancelled(cancel))
                .await;
            return Err(self.error(FailureKind::Cancelled, "the call was cancelled".to_owned()));
        };
        answer.map_err(|e| self.service_error(e))
    }
}

/// How long past its timeout a request to an upstream may take at most,
/// whatever the upstream does: rmcp sends a cancel when the timeout
/// strikes and waits for that write, which a server that stops reading
/// would hold forever.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// `asked`, or a timeout once `timeout` and [`DEADLINE_GRACE`] have passed.
async fn within<T>(
    timeout: Duration,
    asked: impl Future<Output = Result<T, ServiceError>>,
) -> Result<T, ServiceError> {
    tokio::time::timeout(timeout + DEADLINE_GRACE, asked)
        .await
        .unwrap_or(Err(ServiceError::Timeout { timeout }))
}

/// The request for `method` in rmcp's type, read straight into its params
/// type (rmcp's request enum is untagged: reading into it would try every
/// method in turn).
pub fn client_request(method: &str, params: Value) -> Result<ClientRequest, String> {
    fn read<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, String> {
        serde_json::from_value(params).map_err(|e| e.to_string())
    }
    fn listing<M: Default>(
        params: Value,
    ) -> Result<RequestOptionalParam<M, PaginatedRequestParams>, String> {
        Ok(RequestOptionalParam {
            method: M::default(),
            params: Some(read(params)?),
            extensions: Default::default(),
        })
    }
    Ok(match method {
        "resources/list" => ClientRequest::ListResourcesRequest(listing(params)?),
        "resources/templates/list" => ClientRequest::ListResourceTemplatesRequest(listing(params)?),
        "prompts/list" => ClientRequest::ListPromptsRequest(listing(params)?),
        "resources/read" => ClientRequest::ReadResourceRequest(Request::new(read(params)?)),
        "resources/subscribe" => ClientRequest::SubscribeRequest(Request::new(read(params)?)),
        "resources/unsubscribe" => ClientRequest::UnsubscribeRequest(Request::new(read(params)?)),
        "prompts/get" => ClientRequest::GetPromptRequest(Request::new(read(params)?)),
        "completion/complete" => ClientRequest::CompleteRequest(Request::new(read(params)?)),
        other => return Err(format!("{other} is not forwarded")),
    })
}
