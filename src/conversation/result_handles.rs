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
        "the {{\"$result\": ...}} objects of this request expand to more than {bound} bytes (the most one request may carry); point at the parts needed (\"pointer\") or pass fewer"
    )]
    TooLarge { bound: usize },
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
            Self::NoSuchPointer { .. }
            | Self::NoSuchPage { .. }
            | Self::Malformed(_)
            | Self::TooLarge { .. } => "invalid_arguments",
            Self::Disabled | Self::NoPrincipal(_) | Self::Budget { .. } => "handles_unavailable",
            Self::Store(_) => "store_unavailable",
        }
    }
}

/// Who a handle belongs to, as stored: a digest, so the store never holds
/// a bearer token.
fn owner_key(principal: &str) -> String {
    let digest = Sha256::digest(principal.as_bytes());
    hex::encode(&digest[..16])
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
        let reference = Reference {
            at: String::new(),
            id: id.to_owned(),
            pointer: pointer.map(str::to_owned),
        };
        let stored = [(id.to_owned(), Arc::from(text), kind)];
        let mut values = expand(std::slice::from_ref(&reference), &stored)?;
        Ok(values.pop().unwrap_or(Value::Null))
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
        // Each handle is read from the store once per request and shared
        // by every reference to it.
        let mut stored: Vec<(String, Arc<str>, StoredKind)> = Vec::new();
        for reference in &found {
            if !stored.iter().any(|(id, ..)| *id == reference.id) {
                let (text, kind) = self.load(principal, &reference.id).await?;
                stored.push((reference.id.clone(), Arc::from(text), kind));
            }
        }
        // Parsing and copying values in are work in proportion to their
        // size: off the async workers, which serve every other session.
        let taken = std::mem::take(request);
        let (original_or_done, outcome) =
            tokio::task::spawn_blocking(move || match expand(&found, &stored) {
                Ok(values) => {
                    let mut request = taken;
                    for (reference, value) in found.iter().zip(values) {
                        if let Some(slot) = request.pointer_mut(&reference.at) {
                            *slot = value;
                        }
                    }
                    (request, Ok(found.len()))
                }
                Err(error) => (taken, Err(error)),
            })
            .await
            .map_err(|e| HandleError::Store(format!("reading the handles failed: {e}")))?;
        *request = original_or_done;
        outcome
    }
}

/// The most bytes (as compact JSON) the `{"$result": ...}` objects of one
/// request may expand to, all together.
pub const MAX_EXPANDED_BYTES: usize = 16 << 20;

/// The values `found` stand for, each handle's text parsed at most once;
/// refused once they would be more than [`MAX_EXPANDED_BYTES`] together.
fn expand(
    found: &[Reference],
    stored: &[(String, Arc<str>, StoredKind)],
) -> Result<Vec<Value>, HandleError> {
    let mut parsed: Vec<Option<Option<Value>>> = vec![None; stored.len()];
    let mut values = Vec::with_capacity(found.len());
    let mut left = MAX_EXPANDED_BYTES;
    for reference in found {
        let Some(at) = stored.iter().position(|(id, ..)| *id == reference.id) else {
            return Err(HandleError::NotFound {
                id: reference.id.chars().take(64).collect(),
            });
        };
        let (_, text, kind) = &stored[at];
        let pointer = reference.pointer.as_deref().filter(|p| !p.is_empty());
        let needs_parse = *kind == StoredKind::Json || pointer.is_some();
        if needs_parse && parsed[at].is_none() {
            parsed[at] = Some(serde_json::from_str(text).ok());
        }
        let whole = parsed[at].as_ref().and_then(Option::as_ref);
        let value = match (pointer, whole) {
            (None, Some(whole)) => Some(whole),
            (None, None) => None,
            (Some(pointer), Some(whole)) => whole.pointer(pointer),
            (Some(_), None) => None,
        };
        let value = match (pointer, value) {
            (_, Some(value)) => {
                left = spend(left, json_len(value, left))?;
                value.clone()
            }
            (None, None) => {
                left = spend(left, text.len())?;
                Value::String(text.to_string())
            }
            (Some(pointer), None) => {
                return Err(HandleError::NoSuchPointer {
                    id: reference.id.chars().take(64).collect(),
                    pointer: pointer.chars().take(200).collect(),
                });
            }
        };
        values.push(value);
    }
    Ok(values)
}

/// `left` less `bytes`, or the error that names the bound.
fn spend(left: usize, bytes: usize) -> Result<usize, HandleError> {
    left.checked_sub(bytes).ok_or(HandleError::TooLarge {
        bound: MAX_EXPANDED_BYTES,
    })
}

/// The length of `value` as compact JSON, counted up to just past `limit`.
fn json_len(value: &Value, limit: usize) -> usize {
    struct Count {
        bytes: usize,
        limit: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            if self.bytes > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, limit };
    let _ = serde_json::to_writer(&mut count, value);
    count.bytes
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
#[path = "result_handles_tests.rs"]
mod tests;
