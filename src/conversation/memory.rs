//! The in-memory conversation store (the default).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::{
    config::MemoryConfig,
    error::MemoryError,
    store::ConversationStore,
    thread::{Thread, Turn, normalize_id},
};

/// Ids of expired or evicted threads remembered so a late caller hears
/// "expired" rather than "unknown". Bounded (about 1 MiB at most) so
/// forgetting stays cheap; past it, the oldest are forgotten first.
const REMEMBERED_GONE_IDS: usize = 10_000;

/// Where the store reads the time, so tests can move it instead of
/// sleeping.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> SystemTime;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to (for tests).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<SystemTime>,
}

impl ManualClock {
    pub fn new(start: SystemTime) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Threads held in process memory. Lost on restart (ids then read as
/// unknown).
///
/// Bounded three ways: threads expire after `timeout` without a new turn,
/// and when there are more than `max_threads` threads or more than
/// `max_total_bytes` bytes, the least recently updated threads are evicted.
/// Expiry is applied lazily (on access, and in a sweep whenever memory
/// grows), so no background task is needed.
///
/// One mutex guards everything: every operation is short, and a linear
/// scan over at most `max_threads` threads is cheap next to a model call.
#[derive(Debug)]
pub struct InMemoryStore {
    config: MemoryConfig,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    threads: HashMap<String, Entry>,
    total_bytes: usize,
    /// Source of `Entry::touched`.
    next_touch: u64,
    gone: GoneIds,
}

#[derive(Debug)]
struct Entry {
    thread: Thread,
    /// Approximate memory held by the thread.
    bytes: usize,
    /// Update order, for least-recently-updated eviction. A counter rather
    /// than `Thread::updated`, which can tie or go backwards.
    touched: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gone {
    Expired,
    Evicted,
}

/// A bounded memory of ids that are gone, and why.
#[derive(Debug, Default)]
struct GoneIds {
    reasons: HashMap<String, Gone>,
    order: VecDeque<String>,
}

impl GoneIds {
    fn remember(&mut self, id: String, why: Gone) {
        if self.reasons.insert(id.clone(), why).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > REMEMBERED_GONE_IDS {
            if let Some(oldest) = self.order.pop_front() {
                self.reasons.remove(&oldest);
            }
        }
    }

    fn error(&self, id: &str) -> MemoryError {
        let id = id.to_owned();
        match self.reasons.get(&id) {
            Some(Gone::Expired) => MemoryError::Expired { id },
            Some(Gone::Evicted) => MemoryError::Evicted { id },
            None => MemoryError::Unknown { id },
        }
    }
}

impl InMemoryStore {
    pub fn new(config: MemoryConfig) -> Self {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// A store reading time from `clock` (tests pass a [`ManualClock`]).
    /// Zero limits are raised to one, so a store always holds something.
    pub fn with_clock(config: MemoryConfig, clock: Arc<dyn Clock>) -> Self {
        let config = config.at_least_one();
        Self {
            config,
            clock,
            state: Mutex::new(State::default()),
        }
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// How many threads are held (expired ones may linger until the next
    /// sweep).
    pub fn thread_count(&self) -> usize {
        self.lock().threads.len()
    }

    /// The approximate bytes all held threads take.
    pub fn total_bytes(&self) -> usize {
        self.lock().total_bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing panics while holding the lock, and the state stays
        // consistent between statements, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_expired(&self, thread: &Thread, now: SystemTime) -> bool {
        // A clock that went backwards counts as no idle time.
        let idle = now.duration_since(thread.updated).unwrap_or_default();
        idle >= self.config.timeout
    }

    fn create_now(&self, first: Turn) -> Result<String, MemoryError> {
        let now = self.clock.now();
        let bytes = THREAD_OVERHEAD + turn_bytes(&first);
        if bytes > self.config.max_total_bytes {
            return Err(MemoryError::TooLarge {
                bytes,
                max_bytes: self.config.max_total_bytes,
            });
        }
        let mut state = self.lock();
        self.sweep(&mut state, now);
        let mut id = new_id();
        while state.threads.contains_key(&id) || state.gone.reasons.contains_key(&id) {
            id = new_id();
        }
        let touched = state.touch();
        state.threads.insert(
            id.clone(),
            Entry {
                thread: Thread {
                    id: id.clone(),
                    created: now,
                    updated: now,
                    turns: vec![first],
                },
                bytes,
                touched,
            },
        );
        state.total_bytes += bytes;
        self.evict(&mut state, &id);
        Ok(id)
    }

    fn get_now(&self, id: &str) -> Result<Thread, MemoryError> {
        let id = normalize_id(id)?;
        let now = self.clock.now();
        let mut state = self.lock();
        self.live_entry(&mut state, &id, now)
            .map(|entry| entry.thread.clone())
    }

    fn append_now(&self, id: &str, turn: Turn) -> Result<usize, MemoryError> {
        let id = normalize_id(id)?;
        let now = self.clock.now();
        let added = turn_bytes(&turn);
        let max_turns = self.config.max_turns;
        let max_bytes = self.config.max_total_bytes;
        let mut state = self.lock();
        let touched = state.touch();
        let entry = self.live_entry(&mut state, &id, now)?;
        if entry.thread.turns.len() >= max_turns {
            return Err(MemoryError::Full { id, max_turns });
        }
        let bytes = entry.bytes.saturating_add(added);
        if bytes > max_bytes {
            return Err(MemoryError::TooLarge { bytes, max_bytes });
        }
        entry.thread.turns.push(turn);
        entry.thread.updated = now;
        entry.bytes = bytes;
        entry.touched = touched;
        let count = entry.thread.turns.len();
        state.total_bytes += added;
        self.sweep(&mut state, now);
        self.evict(&mut state, &id);
        Ok(count)
    }

    /// The entry for a normalized id, or why there is none. An expired
    /// entry is dropped here and reported as expired.
    fn live_entry<'s>(
        &self,
        state: &'s mut State,
        id: &str,
        now: SystemTime,
    ) -> Result<&'s mut Entry, MemoryError> {
        let expired = match state.threads.get(id) {
            None => return Err(state.gone.error(id)),
            Some(entry) => self.is_expired(&entry.thread, now),
        };
        if expired {
            state.remove(id, Gone::Expired);
            return Err(state.gone.error(id));
        }
        state
            .threads
            .get_mut(id)
            .ok_or_else(|| MemoryError::Unknown { id: id.to_owned() })
    }

    /// Drops every expired thread.
    fn sweep(&self, state: &mut State, now: SystemTime) {
        let expired: Vec<String> = state
            .threads
            .iter()
            .filter(|(_, entry)| self.is_expired(&entry.thread, now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            state.remove(&id, Gone::Expired);
        }
    }

    /// Evicts least recently updated threads (never `keep`, the one just
    /// written) until both limits hold.
    fn evict(&self, state: &mut State, keep: &str) {
        while state.threads.len() > self.config.max_threads
            || state.total_bytes > self.config.max_total_bytes
        {
            let victim = state
                .threads
                .iter()
                .filter(|(id, _)| id.as_str() != keep)
                .min_by_key(|(_, entry)| entry.touched)
                .map(|(id, _)| id.clone());
            let Some(victim) = victim else { break };
            tracing::debug!(id = %victim, "conversation evicted to bound memory");
            state.remove(&victim, Gone::Evicted);
        }
    }
}

impl State {
    fn touch(&mut self) -> u64 {
        self.next_touch += 1;
        self.next_touch
    }

    fn remove(&mut self, id: &str, why: Gone) {
        if let Some(entry) = self.threads.remove(id) {
            self.total_bytes = self.total_bytes.saturating_sub(entry.bytes);
            self.gone.remember(id.to_owned(), why);
        }
    }
}

#[async_trait::async_trait]
impl ConversationStore for InMemoryStore {
    async fn create(&self, first: Turn) -> Result<String, MemoryError> {
        self.create_now(first)
    }

    async fn get(&self, id: &str) -> Result<Thread, MemoryError> {
        self.get_now(id)
    }

    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError> {
        self.append_now(id, turn)
    }

    async fn delete(&self, id: &str) -> Result<(), MemoryError> {
        let id = normalize_id(id)?;
        self.lock().remove(&id, Gone::Expired);
        Ok(())
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// Fixed cost of a thread: the struct, its id and its map slot.
const THREAD_OVERHEAD: usize = std::mem::size_of::<Entry>() + 64;

/// Approximate memory a turn holds: the struct, the capacity of its
/// strings and lists, and its data as the tree of values it is in memory.
///
/// Counting the data's JSON text instead would let a small message take far
/// more memory than it is charged for: `[""]` is 4 bytes of JSON but a whole
/// `Value` (tens of bytes) in memory, so a million empty strings would be
/// charged 3 MB while holding about 70 MB.
pub(super) fn turn_bytes(turn: &Turn) -> usize {
    let files: usize = turn.files.iter().map(|file| file.capacity()).sum::<usize>()
        + turn.files.capacity() * size_of::<String>();
    size_of::<Turn>()
        + turn.mode.capacity()
        + turn.content.capacity()
        + files
        + turn.model.as_ref().map_or(0, String::capacity)
        + turn.data.as_ref().map_or(0, value_bytes)
}

/// What an object entry costs besides its key's text and its value: the
/// key's `String`, the stored hash and the index slot of the map.
const MAP_ENTRY_OVERHEAD: usize = size_of::<String>() + 2 * size_of::<usize>();

/// Approximate bytes a JSON value takes in memory: a `Value` per node, the
/// spare capacity of arrays, string bytes, and each object entry's key and
/// slot. Walks with an explicit stack (of containers only), so neither deep
/// nor wide values can overflow anything.
fn value_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value;

    fn own(value: &Value) -> usize {
        match value {
            Value::String(text) => text.capacity(),
            Value::Array(items) => (items.capacity() - items.len()) * size_of::<Value>(),
            Value::Object(map) => map
                .keys()
                .map(|key| key.capacity() + MAP_ENTRY_OVERHEAD)
                .sum(),
            _ => 0,
        }
    }
    fn is_container(value: &Value) -> bool {
        matches!(value, Value::Array(_) | Value::Object(_))
    }

    let mut total = size_of::<Value>() + own(value);
    let mut stack: Vec<&Value> = Vec::new();
    if is_container(value) {
        stack.push(value);
    }
    while let Some(container) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match container {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => Box::new(std::iter::empty()),
        };
        for child in children {
            total += size_of::<Value>() + own(child);
            if is_container(child) {
                stack.push(child);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_estimate_grows_with_content() {
        let small = turn_bytes(&Turn::user("chat", "hi"));
        let big = turn_bytes(
            &Turn::user("chat", "hi".repeat(1000))
                .with_files(vec!["/a/b.rs".into()])
                .with_data(serde_json::json!({"findings": "x".repeat(500)})),
        );
        assert!(big >= small + 2000 - 2 + 500);
    }

    #[test]
    fn every_value_node_is_counted() {
        use serde_json::{Value, json};
        let node = size_of::<Value>();
        assert_eq!(value_bytes(&json!(null)), node);
        assert_eq!(value_bytes(&json!("abc")), node + 3);
        // The array, then three nodes (parsed, so no spare capacity here).
        let parsed: Value = serde_json::from_str(r#"["", "", ""]"#).unwrap();
        let Value::Array(items) = &parsed else {
            unreachable!()
        };
        let spare = (items.capacity() - items.len()) * node;
        assert_eq!(value_bytes(&parsed), 4 * node + spare);
        // An object entry: key text, slot, and the value node.
        assert_eq!(
            value_bytes(&json!({"ab": 1})),
            2 * node + 2 + MAP_ENTRY_OVERHEAD
        );
        // Nesting is walked too (with a stack of its own, not recursion).
        let mut deep = json!(0);
        for _ in 0..1_000 {
            deep = json!([deep]);
        }
        assert!(value_bytes(&deep) >= 1_001 * node);
    }

    #[test]
    fn gone_ids_are_bounded() {
        let mut gone = GoneIds::default();
        for n in 0..REMEMBERED_GONE_IDS + 10 {
            gone.remember(n.to_string(), Gone::Expired);
        }
        assert_eq!(gone.order.len(), REMEMBERED_GONE_IDS);
        assert_eq!(gone.reasons.len(), REMEMBERED_GONE_IDS);
        assert!(matches!(gone.error("0"), MemoryError::Unknown { .. }));
        assert!(matches!(gone.error("10"), MemoryError::Expired { .. }));
    }
}
