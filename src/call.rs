//! What one call carries down through the layers: the client's
//! cancellation, where to report progress, the note of what ran, and the
//! session's client for what an upstream asks back.
//!
//! Both the gateway (which passes progress and flow-back requests on) and
//! the services executors use need it, so it sits below both.

// Sampling and roots are deprecated for 2026-07-28, not for the sessions
// opened with `initialize` that flow-back serves.
#![allow(deprecated)]

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use rmcp::{
    ErrorData,
    model::{
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ListRootsResult,
    },
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    catalog::Mode,
    providers::{ModelRequest, ModelResponse, Provider, ProviderError},
};

/// How often a call waiting on a model reports progress.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Receives progress while a call waits on something slow (a model, a CLI).
#[async_trait]
pub trait ProgressSink: Send + Sync {
    async fn report(&self, progress: f64, message: String);

    /// Progress as another server sent it (the gateway passes it on as is).
    async fn report_detail(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let _ = total;
        self.report(progress, message.unwrap_or_default()).await;
    }
}

/// Per-call context: the client's cancellation and, when it asked for
/// progress (sent a progress token), where to report it.
#[derive(Clone, Default)]
pub struct CallContext {
    pub cancel: CancellationToken,
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// What ran, noted by the engine for the server's activity log line.
    pub activity: ActivityNote,
    /// The session's client, which answers what an upstream asks during
    /// the call (elicitation, sampling, roots); `None` outside a session.
    pub client: Option<Arc<dyn ClientRequests>>,
    /// The client speaks 2026-07-28: an upstream's input-required result
    /// goes to it as such (older clients are asked through `client`).
    pub takes_input_required: bool,
    /// A 2026-07-28 client's retry of an input-required call.
    pub resume: Option<Resume>,
    /// Who the call is made for (a stdio or TCP session, an HTTP client's
    /// token): only the same principal reads the result handles a call
    /// makes. `None` outside a served session.
    pub principal: Option<Arc<str>>,
    /// How a script run by this call reaches other modes; set by the
    /// layers that know the engine and the select (`None`: no scripts).
    pub nested: Option<Arc<dyn NestedCalls>>,
}

/// What a script may ask of the layers above the executors: run a mode as
/// a direct call would and select as the select tool would. Executors
/// sit below the engine and cannot call it themselves; the server hands
/// this in with each call.
#[async_trait]
pub trait NestedCalls: Send + Sync {
    /// The mode `name` as a call would find it (waiting for a server that
    /// is starting), or `None` when there is none to run.
    async fn resolve(&self, name: &str) -> Option<Arc<Mode>>;
    /// Runs `mode` with every check a direct call applies, logged like one.
    async fn run(&self, mode: &str, request: Value, call: &CallContext) -> NestedOutcome;
    /// What the select tool answers for `task`.
    async fn select(&self, task: &str) -> NestedOutcome;
    /// Why a script may not call `name` (found as `mode`, or not found: a
    /// server still starting, an unknown name), which is not known to
    /// leave state alone, with how to allow it or call it directly;
    /// `None` when the user allowed writes for it.
    fn write_refusal(&self, name: &str, mode: Option<&Mode>) -> Option<String>;
    /// The longest a script may run here (`serve --script-max-ms`): a
    /// request's own `timeout_ms` is cut to it.
    fn longest_script(&self) -> std::time::Duration;
}

/// A nested call's answer: the body a tool call would carry.
#[derive(Debug, Clone, PartialEq)]
pub struct NestedOutcome {
    pub is_error: bool,
    pub body: Value,
    /// `body` is an upstream's whole tool result.
    pub passthrough: bool,
}

/// What a client's retry brings: its answers and the state it echoes.
#[derive(Clone, Default)]
pub struct Resume {
    pub input_responses: Option<rmcp::model::InputResponses>,
    pub request_state: Option<String>,
}

/// The mode a call ran and its upstream server, if any: the engine notes
/// it, the server reads it back to log the call.
#[derive(Clone, Default)]
pub struct ActivityNote(Arc<Mutex<Option<RanMode>>>);

/// A mode's name and its upstream server, if it has one.
type RanMode = (String, Option<String>);

impl ActivityNote {
    pub fn note(&self, mode: &str, server: Option<&str>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some((mode.to_owned(), server.map(str::to_owned)));
        }
    }

    /// The mode and server noted, if the call reached a mode at all.
    pub fn noted(&self) -> Option<RanMode> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

impl CallContext {
    /// Runs `work`, reporting `message` every `every` while it runs, and
    /// stopping early (with `None`) if the call is cancelled.
    pub async fn run_with_progress<F, T>(
        &self,
        message: &str,
        every: Duration,
        work: F,
    ) -> Option<T>
    where
        F: Future<Output = T>,
    {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await; // the first tick is immediate
        let mut elapsed = 0u64;
        self.report(0.0, format!("{message}…")).await;
        tokio::pin!(work);
        loop {
            tokio::select! {
                output = &mut work => return Some(output),
                _ = self.cancel.cancelled() => return None,
                _ = ticks.tick() => {
                    elapsed += every.as_secs().max(1);
                    self.report(elapsed as f64, format!("{message} ({elapsed}s)")).await;
                }
            }
        }
    }

    /// Asks a model, reporting progress while waiting; `None` when the
    /// client cancelled (the HTTP request is dropped).
    pub async fn ask_model(
        &self,
        provider: &dyn Provider,
        request: &ModelRequest,
    ) -> Option<Result<ModelResponse, ProviderError>> {
        self.run_with_progress(
            &format!("Waiting for {}", request.model),
            PROGRESS_EVERY,
            provider.generate(request, &self.cancel),
        )
        .await
    }

    pub async fn report(&self, progress: f64, message: String) {
        if let Some(sink) = &self.progress {
            sink.report(progress, message).await;
        }
    }
}

/// What an upstream may ask of zenmode's client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    Elicitation,
    Sampling,
    Roots,
}

impl Ask {
    pub fn describe(self) -> &'static str {
        match self {
            Ask::Elicitation => "elicitation (asking the user)",
            Ask::Sampling => "sampling (asking the client's model)",
            Ask::Roots => "the client's roots",
        }
    }

    pub fn capability(self) -> &'static str {
        match self {
            Ask::Elicitation => "elicitation",
            Ask::Sampling => "sampling",
            Ask::Roots => "roots",
        }
    }
}

/// What one session's client has been asked on the upstreams' behalf, for
/// the gateway's bounds on flow-back requests: the requests waiting on it
/// now, and those of the current minute. One per session, shared by its
/// calls.
#[derive(Debug, Default)]
pub struct FlowBackLoad(Mutex<LoadCounts>);

#[derive(Debug, Default)]
struct LoadCounts {
    waiting: usize,
    minute_started: Option<std::time::Instant>,
    this_minute: usize,
}

impl FlowBackLoad {
    /// Counts one more request, unless `max_waiting` wait already or
    /// `max_per_minute` were sent this minute; then says which.
    pub fn take(&self, max_waiting: usize, max_per_minute: usize) -> Result<(), String> {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        if counts
            .minute_started
            .is_none_or(|started| now.duration_since(started) >= Duration::from_secs(60))
        {
            counts.minute_started = Some(now);
            counts.this_minute = 0;
        }
        if counts.waiting >= max_waiting {
            return Err(format!(
                "this client session has {} requests waiting on its answer already (at most {max_waiting})",
                counts.waiting
            ));
        }
        if counts.this_minute >= max_per_minute {
            return Err(format!(
                "this client session was sent {max_per_minute} requests in the last minute (at most {max_per_minute} a minute)"
            ));
        }
        counts.waiting += 1;
        counts.this_minute += 1;
        Ok(())
    }

    /// Requests waiting on the client now.
    pub fn waiting(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).waiting
    }

    /// One request taken is over (answered or not).
    pub fn give_back(&self) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.waiting = counts.waiting.saturating_sub(1);
    }
}

/// zenmode's client, as one session sees it: what it declared and how to
/// ask it. Implemented by the server layer over its peer.
#[async_trait]
pub trait ClientRequests: Send + Sync {
    /// Identifies the session (two calls of one session give the same id).
    fn session(&self) -> usize;
    /// The session's flow-back requests so far (shared by its calls).
    fn load(&self) -> &FlowBackLoad;
    /// Whether the client declared the capability `ask` needs.
    fn can(&self, ask: Ask) -> bool;
    /// Whether the session has ended.
    fn is_closed(&self) -> bool;
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData>;
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData>;
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorData>;
}
