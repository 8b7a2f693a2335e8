//! Conversation threads that continue across calls and across modes.
//!
//! The server issues a `continuation_id` (a UUID v4) when a mode starts a
//! thread; passing it back continues the thread, in the same mode or
//! another (a debug investigation can go on in chat). Each call appends
//! [`Turn`]s; when a thread is handed to a model, [`build_history`] rebuilds
//! it within the model's token budget.
//!
//! Storage sits behind [`ConversationStore`] so a shared store can replace
//! the in-memory default ([`InMemoryStore`]) without touching the modes.
//! The types are serializable for that reason.

mod embedded;
mod history;
mod memory;
mod redis_store;
mod store_url;
mod turn_cache;

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use embedded::EmbeddedStore;
pub use history::{History, build_history};
pub use memory::{Clock, InMemoryStore, ManualClock, SystemClock};
pub use redis_store::RedisStore;
pub use store_url::{StoreUrl, default_embedded_path, open_store};

/// Who produced a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The calling agent (its prompt or workflow step).
    User,
    /// The server's answer (a model's reply or a workflow response).
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message in a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub role: Role,
    /// The mode that recorded the turn (threads cross modes).
    pub mode: String,
    pub content: String,
    /// Paths the turn referred to, in the caller's priority order.
    pub files: Vec<String>,
    /// The model that answered, for assistant turns that asked one.
    pub model: Option<String>,
    /// Structured step fields for workflows (findings, confidence, ...).
    pub data: Option<serde_json::Value>,
    pub at: SystemTime,
}

impl Turn {
    /// A turn stamped now, with no files, model or data.
    pub fn new(role: Role, mode: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role,
            mode: mode.into(),
            content: content.into(),
            files: Vec::new(),
            model: None,
            data: None,
            at: SystemTime::now(),
        }
    }

    pub fn user(mode: impl Into<String>, content: impl Into<String>) -> Self {
        Self::new(Role::User, mode, content)
    }

    pub fn assistant(mode: impl Into<String>, content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, mode, content)
    }

    pub fn with_files(mut self, files: Vec<String>) -> Self {
        self.files = files;
        self
    }

    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A conversation: its turns in chronological order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// A hyphenated lowercase UUID v4.
    pub id: String,
    pub created: SystemTime,
    /// When a turn was last added; expiry counts idle time from here.
    pub updated: SystemTime,
    pub turns: Vec<Turn>,
}

/// Why a thread cannot be used. Every message tells the agent how to go on:
/// a new thread starts when `continuation_id` is omitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "conversation {id} is unknown (the server may have restarted since it was created); omit continuation_id to start a new conversation"
    )]
    Unknown { id: String },
    #[error(
        "conversation {id} has expired after too long without activity; omit continuation_id to start a new conversation"
    )]
    Expired { id: String },
    /// Dropped while still active to keep memory bounded.
    #[error(
        "conversation {id} was dropped to bound the server's memory (too many or too large conversations); omit continuation_id to start a new conversation"
    )]
    Evicted { id: String },
    #[error(
        "conversation {id} has reached its limit of {max_turns} turns; omit continuation_id to start a new conversation, restating what matters from this one"
    )]
    Full { id: String, max_turns: usize },
    #[error(
        "continuation_id {id:?} is not a valid conversation id (a UUID issued by this server); omit continuation_id to start a new conversation"
    )]
    InvalidId { id: String },
    /// The store could not be reached or failed; nothing was written.
    #[error(
        "the conversation store is unavailable ({reason}); nothing was saved, so the same call can be retried once it is back"
    )]
    Unavailable { reason: String },
    /// A thread that would outgrow the whole memory bound by itself.
    #[error(
        "this turn would make the conversation {bytes} bytes, more than the {max_bytes} bytes conversation memory holds; send less content, or omit continuation_id to start a new conversation"
    )]
    TooLarge { bytes: usize, max_bytes: usize },
}

impl MemoryError {
    /// Longest id echoed back in [`MemoryError::InvalidId`]: the id is
    /// untrusted input and may be huge.
    const SHOWN_ID_CHARS: usize = 64;

    /// An [`MemoryError::InvalidId`] echoing at most the first 64
    /// characters of `id`.
    pub fn invalid_id(id: &str) -> Self {
        let mut shown: String = id.chars().take(Self::SHOWN_ID_CHARS).collect();
        if shown.len() < id.len() {
            shown.push('…');
        }
        Self::InvalidId { id: shown }
    }
}

/// Parses a `continuation_id` into the canonical form ids are stored under
/// (hyphenated, lowercase), so `{...}`, upper-case or simple forms of the
/// same UUID find the same thread.
pub fn normalize_id(id: &str) -> Result<String, MemoryError> {
    uuid::Uuid::parse_str(id.trim())
        .map(|uuid| uuid.hyphenated().to_string())
        .map_err(|_| MemoryError::invalid_id(id))
}

/// Storage of conversation threads. Implementations are shared by every
/// session, so they must be safe to call concurrently.
#[async_trait::async_trait]
pub trait ConversationStore: Send + Sync {
    /// Starts a thread with its first turn and returns its new id (a UUID
    /// v4).
    async fn create(&self, first: Turn) -> Result<String, MemoryError>;

    /// The thread with this id, if it exists and has not expired.
    async fn get(&self, id: &str) -> Result<Thread, MemoryError>;

    /// Adds a turn and returns the thread's turn count after it.
    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError>;
}

/// Limits of conversation memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Idle time after which a thread expires.
    pub timeout: Duration,
    /// Most turns a thread holds.
    pub max_turns: usize,
    /// Most threads kept at once; the least recently updated go first.
    pub max_threads: usize,
    /// Approximate bound on the bytes all threads hold together.
    pub max_total_bytes: usize,
}

impl MemoryConfig {
    pub const DEFAULT_TIMEOUT_HOURS: f64 = 3.0;
    pub const DEFAULT_MAX_TURNS: usize = 50;
    pub const DEFAULT_MAX_THREADS: usize = 1_000;
    pub const DEFAULT_MAX_TOTAL_BYTES: usize = 256 * 1024 * 1024;

    /// Reads `CONVERSATION_TIMEOUT_HOURS` (fractional hours, default 3)
    /// and `MAX_CONVERSATION_TURNS` (default 50) through `env`, so tests
    /// need not touch the process environment. An invalid value falls
    /// back to the default with a warning rather than stopping the server.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::default();
        if let Some(raw) = non_empty(env("CONVERSATION_TIMEOUT_HOURS")) {
            match parse_hours(&raw) {
                Some(timeout) => config.timeout = timeout,
                None => tracing::warn!(
                    value = %raw,
                    default = Self::DEFAULT_TIMEOUT_HOURS,
                    "CONVERSATION_TIMEOUT_HOURS is not a positive number of hours; using the default"
                ),
            }
        }
        if let Some(raw) = non_empty(env("MAX_CONVERSATION_TURNS")) {
            match raw.parse::<usize>() {
                Ok(turns) if turns > 0 => config.max_turns = turns,
                _ => tracing::warn!(
                    value = %raw,
                    default = Self::DEFAULT_MAX_TURNS,
                    "MAX_CONVERSATION_TURNS is not a positive whole number; using the default"
                ),
            }
        }
        config
    }
}

impl MemoryConfig {
    /// Zero limits raised to one, so every store always holds something.
    pub fn at_least_one(mut self) -> Self {
        self.max_turns = self.max_turns.max(1);
        self.max_threads = self.max_threads.max(1);
        self.max_total_bytes = self.max_total_bytes.max(1);
        self
    }
}

/// A turn as the JSON text the persistent stores keep.
fn encode_turn(turn: &Turn) -> Result<String, MemoryError> {
    serde_json::to_string(turn).map_err(|error| MemoryError::Unavailable {
        reason: format!("cannot encode the turn: {error}"),
    })
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(3 * 3600),
            max_turns: Self::DEFAULT_MAX_TURNS,
            max_threads: Self::DEFAULT_MAX_THREADS,
            max_total_bytes: Self::DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// Positive, finite hours that fit in a [`Duration`].
fn parse_hours(raw: &str) -> Option<Duration> {
    let hours: f64 = raw.parse().ok()?;
    if !(hours.is_finite() && hours > 0.0) {
        return None;
    }
    Duration::try_from_secs_f64(hours * 3600.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn config_defaults_without_env() {
        let config = MemoryConfig::from_env(&env_of(&[]));
        assert_eq!(config, MemoryConfig::default());
        assert_eq!(config.timeout, Duration::from_secs(3 * 3600));
        assert_eq!(config.max_turns, 50);
    }

    #[test]
    fn config_reads_env_with_fractional_hours() {
        let config = MemoryConfig::from_env(&env_of(&[
            ("CONVERSATION_TIMEOUT_HOURS", "0.5"),
            ("MAX_CONVERSATION_TURNS", " 7 "),
        ]));
        assert_eq!(config.timeout, Duration::from_secs(1800));
        assert_eq!(config.max_turns, 7);
    }

    #[test]
    fn invalid_config_falls_back_to_defaults() {
        for (hours, turns) in [
            ("abc", "x"),
            ("-1", "0"),
            ("NaN", "-3"),
            ("inf", "1e3"),
            ("1e300", ""),
        ] {
            let config = MemoryConfig::from_env(&env_of(&[
                ("CONVERSATION_TIMEOUT_HOURS", hours),
                ("MAX_CONVERSATION_TURNS", turns),
            ]));
            assert_eq!(config, MemoryConfig::default(), "{hours} / {turns}");
        }
    }

    #[test]
    fn ids_normalize_and_invalid_ids_are_truncated() {
        let id = "67E55044-10B1-426F-9247-BB680E5FE0C8";
        assert_eq!(
            normalize_id(id).as_deref(),
            Ok("67e55044-10b1-426f-9247-bb680e5fe0c8")
        );
        assert_eq!(
            normalize_id("67e5504410b1426f9247bb680e5fe0c8").as_deref(),
            Ok("67e55044-10b1-426f-9247-bb680e5fe0c8")
        );
        let long = "x".repeat(10_000);
        let MemoryError::InvalidId { id } = normalize_id(&long).unwrap_err() else {
            panic!("expected InvalidId");
        };
        assert_eq!(id.chars().count(), 65);
        let message = normalize_id("nope").unwrap_err().to_string();
        assert!(message.contains("\"nope\""), "{message}");
        assert!(message.contains("omit continuation_id"), "{message}");
    }
}
