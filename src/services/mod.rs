//! What executors may use besides their request: model providers, confined
//! file access, conversation memory and external CLIs (process-wide), plus
//! progress and cancellation (per call).
//!
//! Services know nothing about executors, the engine or MCP: they are built
//! from flags and environment and handed down.

pub mod clink;
pub mod gateway;
mod process;

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use clink::ClinkConfig;
pub use process::{Presentation, ProcessInfo};

use crate::{
    conversation::{ConversationStore, InMemoryStore, MemoryConfig},
    files::{FileAccess, FileError, parse_root_list},
    providers::{ModelRequest, ModelResponse, Provider, ProviderError, Providers},
};

/// How often a call waiting on a model reports progress.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Process-wide services, built once at start-up from flags and environment.
pub struct Services {
    pub providers: Providers,
    pub files: FileAccess,
    pub memory: Arc<dyn ConversationStore>,
    pub clink: ClinkConfig,
    /// Facts about the running process that `version` reports.
    pub process: ProcessInfo,
    /// The user's other MCP servers (empty without `--upstreams`).
    pub gateway: Arc<gateway::Gateway>,
}

impl Services {
    /// From the process environment: provider keys, `ZEN_ALLOWED_ROOTS`,
    /// `CONVERSATION_TIMEOUT_HOURS`, `MAX_CONVERSATION_TURNS`, the clink settings;
    /// `allow_roots` are the `--allow-root` flags.
    pub fn from_env(allow_roots: &[PathBuf]) -> Result<Self, FileError> {
        let env = |name: &str| std::env::var(name).ok();
        let mut roots = allow_roots.to_vec();
        if let Some(list) = std::env::var_os("ZEN_ALLOWED_ROOTS") {
            roots.extend(parse_root_list(&list));
        }
        Ok(Services {
            providers: Providers::from_env(&env),
            files: FileAccess::new(&working_dir(), &roots)?,
            memory: Arc::new(InMemoryStore::new(MemoryConfig::from_env(&env))),
            clink: ClinkConfig::from_env(&env),
            process: ProcessInfo::default(),
            gateway: Arc::default(),
        })
    }

    /// No providers and no CLIs, files confined to the working directory:
    /// for tests, benches and the measuring commands.
    pub fn offline() -> Self {
        let no_env = |_: &str| None;
        let cwd = working_dir();
        let files = FileAccess::new(&cwd, &[])
            .or_else(|_| FileAccess::new(&std::env::temp_dir(), &[]))
            .expect("the temporary directory exists");
        Services {
            providers: Providers::from_env(&no_env),
            files,
            memory: Arc::new(InMemoryStore::new(MemoryConfig::default())),
            clink: ClinkConfig::from_env(&no_env),
            process: ProcessInfo::default(),
            gateway: Arc::default(),
        }
    }
}

fn working_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir())
}

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
    pub client: Option<Arc<dyn gateway::flowback::ClientRequests>>,
    /// The client speaks 2026-07-28: an upstream's input-required result
    /// goes to it as such (older clients are asked through `client`).
    pub takes_input_required: bool,
    /// A 2026-07-28 client's retry of an input-required call.
    pub resume: Option<Resume>,
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
