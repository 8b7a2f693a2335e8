//! What a conversation is made of: a [`Thread`] (its id and times) holding
//! [`Turn`]s, each by a [`Role`]; the canonical form of a thread's id
//! ([`normalize_id`]), and a turn as the JSON text the persistent stores
//! keep.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::error::MemoryError;

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

/// Parses a `continuation_id` into the canonical form ids are stored under
/// (hyphenated, lowercase), so `{...}`, upper-case or simple forms of the
/// same UUID find the same thread.
pub fn normalize_id(id: &str) -> Result<String, MemoryError> {
    uuid::Uuid::parse_str(id.trim())
        .map(|uuid| uuid.hyphenated().to_string())
        .map_err(|_| MemoryError::invalid_id(id))
}

/// A turn as the JSON text the persistent stores keep.
pub(super) fn encode_turn(turn: &Turn) -> Result<String, MemoryError> {
    serde_json::to_string(turn).map_err(|error| MemoryError::Unavailable {
        reason: format!("cannot encode the turn: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
