//! What executors may use besides their request: model providers, confined
//! file access, conversation memory and external CLIs (process-wide), plus
//! progress and cancellation (per call).
//!
//! Services know nothing about executors, the engine or MCP: they are built
//! from flags and environment and handed down.

pub mod clink_config;
mod process_info;

use std::{path::PathBuf, sync::Arc};

pub use clink_config::ClinkConfig;
pub use process_info::{Presentation, ProcessInfo};

use crate::{
    conversation::{
        ConversationStore, HandleSettings, InMemoryStore, MemoryConfig, ResultHandles,
        ThreadsWithoutResults,
    },
    files::{FileAccess, FileError, parse_root_list},
    gateway,
    providers::Providers,
};

/// Process-wide services, built once at start-up from flags and environment.
pub struct Services {
    pub providers: Providers,
    pub files: FileAccess,
    /// Conversation threads (stored results are kept out of them).
    pub memory: Arc<dyn ConversationStore>,
    /// Large results kept as handles, in the same store as `memory`.
    pub results: Arc<ResultHandles>,
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
        if let Some(list) = std::env::var_os(crate::platform::settings::ALLOWED_ROOTS) {
            roots.extend(parse_root_list(&list));
        }
        let store: Arc<dyn ConversationStore> =
            Arc::new(InMemoryStore::new(MemoryConfig::from_env(&env)));
        Ok(Services {
            providers: Providers::from_env(&env),
            files: FileAccess::new(&working_dir(), &roots)?,
            memory: Arc::new(ThreadsWithoutResults(store.clone())),
            results: Arc::new(ResultHandles::new(store, HandleSettings::default())),
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
        let store: Arc<dyn ConversationStore> =
            Arc::new(InMemoryStore::new(MemoryConfig::default()));
        Services {
            providers: Providers::from_env(&no_env),
            files,
            memory: Arc::new(ThreadsWithoutResults(store.clone())),
            results: Arc::new(ResultHandles::new(store, HandleSettings::default())),
            clink: ClinkConfig::from_env(&no_env),
            process: ProcessInfo::default(),
            gateway: Arc::default(),
        }
    }
}

impl Services {
    /// Conversations and result handles both in `store`; handles as
    /// `handles` says.
    pub fn use_store(&mut self, store: Arc<dyn ConversationStore>, handles: HandleSettings) {
        self.results = Arc::new(ResultHandles::new(store.clone(), handles));
        self.memory = Arc::new(ThreadsWithoutResults(store));
    }
}

fn working_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir())
}
