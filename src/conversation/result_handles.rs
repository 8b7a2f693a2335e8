//! Result handles: a tool result too large for the model's context is kept
//! in the thread store (so a handle made on one instance is readable on
//! another that shares the store) and named by an opaque id. Each handle
//! belongs to the principal that made it (a stdio or TCP session, an HTTP
//! client's token) and lives a stated time; every read checks both, and a
//! handle of another principal reads exactly like an unknown one.
//!
//! A handle is a one-turn thread whose turn is marked [`RESULT_MODE`];
//! [`ThreadsWithoutResults`] keeps such threads out of conversations, so a
//! handle id passed as a `continuation_id` finds nothing.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    error::MemoryError,
    memory::{Clock, SystemClock},
    store::ConversationStore,
    thread::{Role, Thread, Turn, normalize_id},
};

/// The mode name a handle's turn carries: no mode has it.
pub const RESULT_MODE: &str = "zenmode/result";

/// Where a handle is read: `zenmode://results/<id>` (page 1), or with
/// `?page=N`.
pub const URI_PREFIX: &str = "zenmode://results/";

/// How results become handles; `serve` flags set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleSettings {
    /// `false`: results are returned whole, as before handles existed.
    pub enabled: bool,
    /// A result whose JSON is larger than this becomes a handle.
    pub threshold_bytes: usize,
    /// How long a handle can be read after it is made.
    pub ttl: Duration,
    /// The most bytes one `resources/read` page carries.
    pub page_bytes: usize,
}

impl HandleSettings {
    pub const DEFAULT_THRESHOLD_BYTES: usize = 16 * 1024;
    pub const DEFAULT_TTL_SECS: u64 = 3600;
    pub const DEFAULT_PAGE_BYTES: usize = 32 * 1024;
}

impl Default for HandleSettings {
    fn default() -> Self {
        HandleSettings {
            enabled: true,
            threshold_bytes: Self::DEFAULT_THRESHOLD_BYTES,
            ttl: Duration::from_secs(Self::DEFAULT_TTL_SECS),
            page_bytes: Self::DEFAULT_PAGE_BYTES,
        }
    }
}

/// What a stored result is, as the model will pass it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredKind {
    /// Structured content (a JSON value): stored as compact JSON.
    Json,
    /// Plain text (a tool's text blocks, joined).
    Text,
}

/// A result just stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    pub id: String,
    pub bytes: usize,
    pub pages: usize,
    pub expires_at: SystemTime,
}

impl StoredResult {
    pub fn uri(&self) -> String {
        format!("{URI_PREFIX}{}", self.id)
    }
}

/// One page of a stored result, as `resources/read` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultPage {
    pub text: String,
    pub page: usize,
    pub pages: usize,
    pub kind: StoredKind,
}

/// Why a handle cannot be used. Messages tell the model what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandleError {
    /// Unknown, made by another session, or already gone from the store:
    /// told apart from nothing, so an id never reveals another's result.
    #[error(
        "result handle {id:?} is not known to this session (it may belong to another session, or have expired or been dropped); run the call that produced it again"
    )]
    NotFound { id: String },
    #[error(
        "result handle {id} expired (handles live {ttl_secs} s); run the call that produced it again"
    )]
    Expired { id: String, ttl_secs: u64 },
    #[error(
        "result handle {id} has no value at pointer {pointer:?} (a JSON pointer such as \"/items/0/name\")"
    )]
    NoSuchPointer { id: String, pointer: String },
    #[error("result handle {id} has {pages} page(s); page {page} does not exist")]
    NoSuchPage {
        id: String,
        page: usize,
        pages: usize,
    },
    #[error(
        "result handles are off on this server (serve --result-handles on enables them): {{\"$result\": ...}} cannot be read"
    )]
    Disabled,
    #[error("{0}")]
    Malformed(String),
    #[error(
        "handles made in the last hour already hold {held} bytes (at most {budget}); the result is returned whole"
    )]
    Budget { held: usize, budget: usize },
    #[error("result handles cannot be used here: {0}")]
    NoPrincipal(&'static str),
    #[error("the result store is unavailable: {0}")]
    Store(String),
}

impl HandleError {
    /// The `error` word of a tool reply.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } | Self::Expired { .. } => "not_found",
            Self::NoSuchPointer { .. } | Self::NoSuchPage { .. } | Self::Malformed(_) => {
                "invalid_arguments"
            }
            Self::Disabled | Self::NoPrincipal(_) | Self::Budget { .. } => "handles_unavailable",
            Self::Store(_) => "store_unavailable",
        }
    }
}

/// Who a handle belongs to, as stored: a digest, so the store never holds
/// a bearer token.
fn owner_key(principal: &str) -> String {
    let digest = Sha256::digest(principal.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn unix_secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The handles of one process, over the shared thread store.
pub struct ResultHandles {
    store: Arc<dyn ConversationStore>,
    settings: HandleSettings,
    clock: Arc<dyn Clock>,
    /// What this process stored and still counts: (expiry, bytes), oldest
    /// first. The store's own bound is shared with conversations and large
    /// (256 MiB in memory), so handles keep a budget of their own.
    recent: std::sync::Mutex<std::collections::VecDeque<(SystemTime, usize)>>,
    /// The handles this process stored and has not deleted: (owner key,
    /// id, expiry). Deleted when their session ends or once expired.
    held: std::sync::Mutex<Vec<(String, String, SystemTime)>>,
}

/// The most bytes of handles one process keeps within their lifetime; past
/// it, a large result is returned whole, as with handles off.
pub const HANDLE_BUDGET_BYTES: usize = 64 * 1024 * 1024;

impl std::fmt::Debug for ResultHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultHandles")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl ResultHandles {
    pub fn new(store: Arc<dyn ConversationStore>, settings: HandleSettings) -> Self {
        Self::with_clock(store, settings, Arc::new(SystemClock))
    }

    pub fn with_clock(
        store: Arc<dyn ConversationStore>,
        settings: HandleSettings,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let mut settings = settings;
        settings.page_bytes = settings.page_bytes.max(1024);
        ResultHandles {
            store,
            settings,
            clock,
            recent: Default::default(),
            held: Default::default(),
        }
    }

    pub fn settings(&self) -> &HandleSettings {
        &self.settings
    }

    /// The pages `bytes` of text take.
    pub fn pages_of(&self, bytes: usize) -> usize {
        bytes.div_ceil(self.settings.page_bytes).max(1)
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, Vec<(String, String, SystemTime)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deletes one handle from the store (a store that cannot delete keeps
    /// it until it expires there).
    async fn delete(&self, id: &str) {
        self.lock_held().retain(|(_, held, _)| held != id);
        if let Err(error) = self.store.delete(id).await {
            tracing::debug!(%error, "a result handle could not be deleted");
        }
    }

    /// Deletes the handles of this process that expired.
    async fn delete_expired(&self) {
        let now = self.clock.now();
        let expired: Vec<String> = self
            .lock_held()
            .iter()
            .filter(|(_, _, until)| *until <= now)
            .map(|(_, id, _)| id.clone())
            .collect();
        for id in expired {
            self.delete(&id).await;
        }
    }

    /// Deletes the handles `principal` stored through this process: its
    /// session ended, and nobody else may read them.
    pub async fn end_session(&self, principal: &str) {
        let owner = owner_key(principal);
        let ended: Vec<String> = self
            .lock_held()
            .iter()
            .filter(|(held, _, _)| *held == owner)
            .map(|(_, id, _)| id.clone())
            .collect();
        for id in ended {
            self.delete(&id).await;
        }
        self.delete_expired().await;
    }

    /// Stores `text` (of `kind`) for `principal`.
    pub async fn store(
        &self,
        principal: &str,
        kind: StoredKind,
        text: String,
    ) -> Result<StoredResult, HandleError> {
        if !self.settings.enabled {
            return Err(HandleError::Disabled);
        }
        let now = self.clock.now();
        let expires_at = now + self.settings.ttl;
        let bytes = text.len();
        {
            let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
            while recent.front().is_some_and(|(until, _)| *until <= now) {
                recent.pop_front();
            }
            let held: usize = recent.iter().map(|(_, size)| size).sum();
            if held + bytes > HANDLE_BUDGET_BYTES {
                return Err(HandleError::Budget {
                    held,
                    budget: HANDLE_BUDGET_BYTES,
                });
            }
            recent.push_back((expires_at, bytes));
        }
        let turn = Turn::new(Role::Assistant, RESULT_MODE, text).with_data(json!({
            "owner": owner_key(principal),
            "expires_at": unix_secs(expires_at),
            "kind": match kind { StoredKind::Json => "json", StoredKind::Text => "text" },
        }));
        let id = self
            .store
            .create(turn)
            .await
            .map_err(|e| HandleError::Store(e.to_string()))?;
        self.lock_held()
            .push((owner_key(principal), id.clone(), expires_at));
        self.delete_expired().await;
        Ok(StoredResult {
            id,
            bytes,
            pages: self.pages_of(bytes),
            expires_at,
        })
    }

    /// The stored text of `id`, checked for its owner and age.
    async fn load(&self, principal: &str, id: &str) -> Result<(String, StoredKind), HandleError> {
        if !self.settings.enabled {
            return Err(HandleError::Disabled);
        }
        let shown: String = id.chars().take(64).collect();
        let not_found = || HandleError::NotFound { id: shown.clone() };
        let id = normalize_id(id).map_err(|_| not_found())?;
        let thread = match self.store.get(&id).await {
            Ok(thread) => thread,
            Err(MemoryError::Unavailable { reason }) => return Err(HandleError::Store(reason)),
            Err(_) => return Err(not_found()),
        };
        let Some(turn) = result_turn(&thread) else {
            return Err(not_found());
        };
        let data = turn.data.as_ref().unwrap_or(&Value::Null);
        if data["owner"].as_str() != Some(owner_key(principal).as_str()) {
            return Err(not_found());
        }
        let expires_at = data["expires_at"].as_u64().unwrap_or(0);
        if unix_secs(self.clock.now()) >= expires_at {
            // Refused, and deleted: an expired handle is not kept.
            self.delete(&id).await;
            return Err(HandleError::Expired {
                id,
                ttl_secs: self.settings.ttl.as_secs(),
            });
        }
        let kind = if data["kind"] == "json" {
            StoredKind::Json
        } else {
            StoredKind::Text
        };
        Ok((turn.content.clone(), kind))
    }

    /// The value `{"$result": id, "pointer"?: p}` stands for: the stored
    /// JSON, or the text as a string; a pointer into text that is JSON
    /// reads the parsed text.
    pub async fn value(
        &self,
        principal: &str,
        id: &str,
        pointer: Option<&str>,
    ) -> Result<Value, HandleError> {
        let (text, kind) = self.load(principal, id).await?;
        let parsed = match kind {
            StoredKind::Json => serde_json::from_str(&text).ok(),
            StoredKind::Text if pointer.is_some() => serde_json::from_str(&text).ok(),
            StoredKind::Text => None,
        };
        let whole = parsed.unwrap_or(Value::String(text));
        match pointer {
            None | Some("") => Ok(whole),
            Some(pointer) => {
                whole
                    .pointer(pointer)
                    .cloned()
                    .ok_or_else(|| HandleError::NoSuchPointer {
                        id: id.chars().take(64).collect(),
                        pointer: pointer.chars().take(200).collect(),
                    })
            }
        }
    }

    /// Page `page` (from 1) of the stored text, cut on character bounds.
    pub async fn page(
        &self,
        principal: &str,
        id: &str,
        page: usize,
    ) -> Result<ResultPage, HandleError> {
        let (text, kind) = self.load(principal, id).await?;
        let pages = self.pages_of(text.len());
        if page == 0 || page > pages {
            return Err(HandleError::NoSuchPage {
                id: id.chars().take(64).collect(),
                page,
                pages,
            });
        }
        let size = self.settings.page_bytes;
        let start = floor_char_boundary(&text, (page - 1) * size);
        let end = floor_char_boundary(&text, page * size);
        Ok(ResultPage {
            text: text[start..end].to_owned(),
            page,
            pages,
            kind,
        })
    }
}

/// Most `{"$result": ...}` objects one request may hold.
const MAX_REFERENCES: usize = 32;

impl ResultHandles {
    /// Replaces each `{"$result": id}` (or with `"pointer"`) object in
    /// `request` with the stored value it names, for `principal`; returns
    /// how many were replaced. Nothing is replaced unless all are found.
    pub async fn resolve_references(
        &self,
        principal: Option<&str>,
        request: &mut Value,
    ) -> Result<usize, HandleError> {
        // Off restores the behaviour from before handles: passed as written.
        if !self.settings.enabled {
            return Ok(0);
        }
        let mut found = Vec::new();
        collect_references(request, &mut Vec::new(), &mut found)?;
        if found.is_empty() {
            return Ok(0);
        }
        if found.len() > MAX_REFERENCES {
            return Err(HandleError::Malformed(format!(
                "a request may hold at most {MAX_REFERENCES} {{\"$result\": ...}} objects (it holds {})",
                found.len()
            )));
        }
        let principal = principal.ok_or(HandleError::NoPrincipal(
            "only calls in a served session (stdio, tcp, http) can read result handles",
        ))?;
        let mut values = Vec::with_capacity(found.len());
        for reference in &found {
            values.push(
                self.value(principal, &reference.id, reference.pointer.as_deref())
                    .await?,
            );
        }
        let count = values.len();
        for (reference, value) in found.into_iter().zip(values) {
            if let Some(slot) = request.pointer_mut(&reference.at) {
                *slot = value;
            }
        }
        Ok(count)
    }
}

/// A `{"$result": ...}` object found in a request: where, and what it names.
struct Reference {
    /// JSON pointer to the object within the request.
    at: String,
    id: String,
    pointer: Option<String>,
}

fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn collect_references(
    value: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<Reference>,
) -> Result<(), HandleError> {
    match value {
        Value::Object(object) if object.contains_key("$result") => {
            let at: String = path.iter().map(|token| format!("/{token}")).collect();
            let Some(Value::String(id)) = object.get("$result") else {
                return Err(HandleError::Malformed(format!(
                    "at {at:?}: \"$result\" must be a handle id (a string)"
                )));
            };
            let pointer = match object.get("pointer") {
                None => None,
                Some(Value::String(pointer)) => Some(pointer.clone()),
                Some(_) => {
                    return Err(HandleError::Malformed(format!(
                        "at {at:?}: \"pointer\" must be a JSON pointer (a string such as \"/items/0\")"
                    )));
                }
            };
            if let Some(other) = object
                .keys()
                .find(|key| *key != "$result" && *key != "pointer")
            {
                return Err(HandleError::Malformed(format!(
                    "at {at:?}: a {{\"$result\": id}} object takes only \"pointer\" besides (found {other:?})"
                )));
            }
            found.push(Reference {
                at,
                id: id.clone(),
                pointer,
            });
        }
        Value::Object(object) => {
            for (key, item) in object {
                path.push(escape_token(key));
                collect_references(item, path, found)?;
                path.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(index.to_string());
                collect_references(item, path, found)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// The handle's turn, if `thread` is a stored result.
fn result_turn(thread: &Thread) -> Option<&Turn> {
    thread.turns.first().filter(|turn| turn.mode == RESULT_MODE)
}

fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The thread store as conversations see it: stored results are not
/// threads, so their ids neither continue nor extend a conversation.
pub struct ThreadsWithoutResults(pub Arc<dyn ConversationStore>);

#[async_trait::async_trait]
impl ConversationStore for ThreadsWithoutResults {
    async fn create(&self, first: Turn) -> Result<String, MemoryError> {
        self.0.create(first).await
    }

    async fn get(&self, id: &str) -> Result<Thread, MemoryError> {
        let thread = self.0.get(id).await?;
        match result_turn(&thread) {
            Some(_) => Err(MemoryError::Unknown { id: thread.id }),
            None => Ok(thread),
        }
    }

    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError> {
        // One more read per appended turn: rare next to the model call
        // that produced it, and it keeps a result's thread unchanged.
        self.get(id).await?;
        self.0.append(id, turn).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{InMemoryStore, ManualClock, MemoryConfig};

    fn handles(settings: HandleSettings) -> (ResultHandles, Arc<ManualClock>, Arc<InMemoryStore>) {
        let clock = Arc::new(ManualClock::default());
        let store = Arc::new(InMemoryStore::with_clock(
            MemoryConfig::default(),
            clock.clone(),
        ));
        (
            ResultHandles::with_clock(store.clone(), settings, clock.clone()),
            clock,
            store,
        )
    }

    #[tokio::test]
    async fn a_handle_reads_back_only_for_its_owner_and_until_it_expires() {
        let (handles, clock, _) = handles(HandleSettings::default());
        let stored = handles
            .store("session:a", StoredKind::Json, r#"{"items":[1,2,3]}"#.into())
            .await
            .unwrap();
        assert_eq!(
            handles.value("session:a", &stored.id, None).await,
            Ok(json!({"items": [1, 2, 3]}))
        );
        assert_eq!(
            handles
                .value("session:a", &stored.id, Some("/items/1"))
                .await,
            Ok(json!(2))
        );
        assert!(matches!(
            handles.value("session:a", &stored.id, Some("/nope")).await,
            Err(HandleError::NoSuchPointer { .. })
        ));
        let other = handles.value("session:b", &stored.id, None).await;
        let unknown = handles
            .value("session:a", "67e55044-10b1-426f-9247-bb680e5fe0c8", None)
            .await;
        // Another session's handle reads exactly like one that never was.
        assert_eq!(
            other.unwrap_err().code(),
            unknown.as_ref().unwrap_err().code()
        );
        clock.advance(Duration::from_secs(HandleSettings::DEFAULT_TTL_SECS));
        assert!(matches!(
            handles.value("session:a", &stored.id, None).await,
            Err(HandleError::Expired { .. })
        ));
    }

    #[tokio::test]
    async fn pages_cover_the_text_on_character_bounds() {
        let (handles, _, _) = handles(HandleSettings {
            page_bytes: 1024,
            ..HandleSettings::default()
        });
        let text: String = "é".repeat(1500); // 3000 bytes, two-byte characters
        let stored = handles
            .store("p", StoredKind::Text, text.clone())
            .await
            .unwrap();
        assert_eq!(stored.pages, 3);
        let mut joined = String::new();
        for page in 1..=3 {
            joined.push_str(&handles.page("p", &stored.id, page).await.unwrap().text);
        }
        assert_eq!(joined, text);
        assert!(matches!(
            handles.page("p", &stored.id, 4).await,
            Err(HandleError::NoSuchPage { pages: 3, .. })
        ));
        assert!(handles.page("p", &stored.id, 0).await.is_err());
        // Text that is JSON is read through a pointer; whole, it stays text.
        let json_text = handles
            .store("p", StoredKind::Text, r#"{"a":{"b":7}}"#.into())
            .await
            .unwrap();
        assert_eq!(
            handles.value("p", &json_text.id, Some("/a/b")).await,
            Ok(json!(7))
        );
        assert_eq!(
            handles.value("p", &json_text.id, None).await,
            Ok(json!(r#"{"a":{"b":7}}"#))
        );
    }

    #[tokio::test]
    async fn a_handle_is_not_a_conversation() {
        let (handles, _, store) = handles(HandleSettings::default());
        let stored = handles
            .store("p", StoredKind::Text, "big".into())
            .await
            .unwrap();
        let threads = ThreadsWithoutResults(store.clone());
        assert!(matches!(
            threads.get(&stored.id).await,
            Err(MemoryError::Unknown { .. })
        ));
        assert!(
            threads
                .append(&stored.id, Turn::user("chat", "more"))
                .await
                .is_err()
        );
        // The handle is unchanged by the refused append.
        assert_eq!(store.get(&stored.id).await.unwrap().turns.len(), 1);
        assert_eq!(handles.value("p", &stored.id, None).await, Ok(json!("big")));
    }

    #[tokio::test]
    async fn references_are_replaced_all_or_nothing() {
        let (handles, _, _) = handles(HandleSettings::default());
        let stored = handles
            .store(
                "p",
                StoredKind::Json,
                r#"{"rows":[{"n":1},{"n":2}]}"#.into(),
            )
            .await
            .unwrap();
        let mut request = json!({
            "whole": {"$result": stored.id},
            "list": [{"$result": stored.id, "pointer": "/rows/1/n"}],
            "a/b": {"$result": stored.id, "pointer": "/rows/0"},
            "kept": {"result": 1},
        });
        assert_eq!(
            handles.resolve_references(Some("p"), &mut request).await,
            Ok(3)
        );
        assert_eq!(
            request,
            json!({
                "whole": {"rows": [{"n": 1}, {"n": 2}]},
                "list": [2],
                "a/b": {"n": 1},
                "kept": {"result": 1},
            })
        );
        // One bad reference: an error, and the request is left as it was.
        let original = json!({"x": {"$result": stored.id}, "y": {"$result": "nope"}});
        let mut request = original.clone();
        let error = handles
            .resolve_references(Some("p"), &mut request)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "not_found");
        assert_eq!(request, original);
        for bad in [
            json!({"$result": 5}),
            json!({"$result": "id", "pointer": 3}),
            json!({"$result": "id", "extra": true}),
        ] {
            let mut request = json!({"field": bad});
            let error = handles
                .resolve_references(Some("p"), &mut request)
                .await
                .unwrap_err();
            assert_eq!(error.code(), "invalid_arguments", "{error}");
        }
        let mut request = json!({"x": {"$result": stored.id}});
        assert_eq!(
            handles
                .resolve_references(None, &mut request)
                .await
                .unwrap_err()
                .code(),
            "handles_unavailable"
        );
    }

    #[tokio::test]
    async fn a_process_keeps_a_bounded_budget_of_handles_until_they_expire() {
        let (handles, clock, _) = handles(HandleSettings::default());
        let chunk = "x".repeat(HANDLE_BUDGET_BYTES / 4);
        for _ in 0..4 {
            handles
                .store("p", StoredKind::Text, chunk.clone())
                .await
                .unwrap();
        }
        assert!(matches!(
            handles
                .store("p", StoredKind::Text, "one more".into())
                .await,
            Err(HandleError::Budget { .. })
        ));
        clock.advance(Duration::from_secs(HandleSettings::DEFAULT_TTL_SECS));
        assert!(handles.store("p", StoredKind::Text, chunk).await.is_ok());
    }

    #[tokio::test]
    async fn off_means_nothing_is_stored_or_read() {
        let (handles, _, store) = handles(HandleSettings {
            enabled: false,
            ..HandleSettings::default()
        });
        assert_eq!(
            handles.store("p", StoredKind::Text, "x".into()).await,
            Err(HandleError::Disabled)
        );
        assert_eq!(store.thread_count(), 0);
    }
}
