//! Decoded turns of the threads this process used last, for the embedded
//! store: continuing a thread it already knows then costs one row lookup
//! instead of reading every turn back from the file and parsing it.
//!
//! The file stays the truth. An entry is used only when the thread's row
//! still gives the same key and turn count: turns are only ever appended
//! and ids are never reused, so the same count means the same turns,
//! whichever process wrote them. A thread another process continued has a
//! higher count and is read from the file again.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use super::{memory::turn_bytes, thread::Turn};

/// Threads kept at most: well above the threads a busy server continues
/// at once, so under load nearly every continuation is a hit.
const MAX_THREADS: usize = 1024;
/// Memory the decoded turns may take, counted as the in-memory store
/// counts it (every string and JSON value node).
const MAX_BYTES: usize = 32 << 20;

#[derive(Default)]
pub(super) struct TurnCache {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_id: HashMap<String, Entry>,
    bytes: usize,
    /// Ticks on every use; the smallest `used` goes first.
    clock: u64,
}

struct Entry {
    /// The thread's rowid in the file.
    key: i64,
    turns: Vec<Turn>,
    bytes: usize,
    used: u64,
}

impl TurnCache {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The turns of `id` if the cache holds exactly the `count` turns the
    /// file has for the thread `key`.
    pub(super) fn turns(&self, id: &str, key: i64, count: usize) -> Option<Vec<Turn>> {
        let mut entries = self.entries();
        entries.clock += 1;
        let now = entries.clock;
        let entry = entries.by_id.get_mut(id)?;
        if entry.key != key || entry.turns.len() != count {
            return None;
        }
        entry.used = now;
        Some(entry.turns.clone())
    }

    /// Whether a thread stored in `stored_bytes` may be kept at all: a very
    /// large one would push out everything else (and cost a copy to keep).
    /// Decoded turns never take less memory than their JSON text.
    pub(super) fn worth_keeping(stored_bytes: usize) -> bool {
        stored_bytes <= MAX_BYTES / 4
    }

    /// Keeps the whole thread as just read from (or written to) the file.
    pub(super) fn keep(&self, id: &str, key: i64, turns: Vec<Turn>) {
        let bytes: usize = turns.iter().map(turn_bytes).sum();
        if !Self::worth_keeping(bytes) {
            self.forget(id);
            return;
        }
        let mut entries = self.entries();
        entries.clock += 1;
        let used = entries.clock;
        let entry = Entry {
            key,
            turns,
            bytes,
            used,
        };
        if let Some(old) = entries.by_id.insert(id.to_owned(), entry) {
            entries.bytes -= old.bytes;
        }
        entries.bytes += bytes;
        entries.make_room();
    }

    /// Records a committed append that made the thread `count` turns long.
    /// An entry one turn behind grows (unless that makes it too large to
    /// keep); one a read already brought to `count` stays; any other is
    /// dropped, and the next load reads the file.
    pub(super) fn appended(&self, id: &str, key: i64, count: usize, turn: Turn) {
        let bytes = turn_bytes(&turn);
        let mut entries = self.entries();
        let Some(entry) = entries.by_id.get_mut(id) else {
            return;
        };
        let behind = entry.key == key && entry.turns.len() + 1 == count;
        let current = entry.key == key && entry.turns.len() == count;
        if behind && Self::worth_keeping(entry.bytes + bytes) {
            entry.turns.push(turn);
            entry.bytes += bytes;
            entries.bytes += bytes;
            entries.make_room();
        } else if !current {
            entries.remove(id);
        }
    }

    pub(super) fn forget(&self, id: &str) {
        self.entries().remove(id);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries().by_id.len()
    }
}

impl Entries {
    fn remove(&mut self, id: &str) {
        if let Some(old) = self.by_id.remove(id) {
            self.bytes -= old.bytes;
        }
    }

    /// Over a bound, drops the least recently used entries down to seven
    /// eighths of it: one sort now and then rather than a scan per insert.
    fn make_room(&mut self) {
        if self.by_id.len() <= MAX_THREADS && self.bytes <= MAX_BYTES {
            return;
        }
        let mut by_age: Vec<(u64, String)> = self
            .by_id
            .iter()
            .map(|(id, entry)| (entry.used, id.clone()))
            .collect();
        by_age.sort_unstable();
        for (_, id) in by_age {
            if self.by_id.len() <= MAX_THREADS * 7 / 8 && self.bytes <= MAX_BYTES * 7 / 8 {
                break;
            }
            self.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(count: usize) -> Vec<Turn> {
        (0..count)
            .map(|i| Turn::user("chat", format!("turn {i}")))
            .collect()
    }

    #[test]
    fn a_hit_needs_the_same_key_and_count() {
        let cache = TurnCache::default();
        cache.keep("a", 7, turns(3));
        assert_eq!(cache.turns("a", 7, 3).map(|t| t.len()), Some(3));
        assert!(cache.turns("a", 7, 4).is_none(), "another process appended");
        assert!(cache.turns("a", 8, 3).is_none(), "another row");
        assert!(cache.turns("b", 7, 3).is_none());
    }

    #[test]
    fn an_append_grows_only_an_entry_one_turn_behind() {
        let cache = TurnCache::default();
        cache.keep("a", 1, turns(2));
        cache.appended("a", 1, 3, Turn::user("chat", "third"));
        let hit = cache.turns("a", 1, 3).expect("grown to three turns");
        assert_eq!(hit[2].content, "third");
        // Two turns were written elsewhere meanwhile: the entry cannot
        // know them, so it goes.
        cache.appended("a", 1, 5, Turn::user("chat", "fifth"));
        assert!(cache.turns("a", 1, 5).is_none());
        assert_eq!(cache.len(), 0);
        // A thread the cache never saw is not invented from one turn.
        cache.appended("b", 2, 4, Turn::user("chat", "x"));
        assert!(cache.turns("b", 2, 4).is_none());
        // A read that already brought the entry to the new count keeps it.
        let read = turns(2);
        cache.keep("c", 3, read.clone());
        cache.appended("c", 3, 2, Turn::user("chat", "already read"));
        assert_eq!(cache.turns("c", 3, 2), Some(read));
        // Growing past the size worth keeping drops the entry.
        cache.keep("d", 4, turns(1));
        cache.appended("d", 4, 2, Turn::user("chat", "x".repeat(MAX_BYTES / 4)));
        assert!(cache.turns("d", 4, 2).is_none());
        assert!(cache.turns("d", 4, 1).is_none());
    }

    #[test]
    fn bounds_drop_the_least_recently_used() {
        let cache = TurnCache::default();
        for i in 0..MAX_THREADS {
            cache.keep(&format!("t{i}"), i as i64, turns(1));
        }
        // Touch the first so it is the most recently used.
        assert!(cache.turns("t0", 0, 1).is_some());
        cache.keep("new", -1, turns(1));
        assert!(cache.len() <= MAX_THREADS * 7 / 8 + 1, "{}", cache.len());
        assert!(cache.turns("t0", 0, 1).is_some(), "recently used stays");
        assert!(cache.turns("new", -1, 1).is_some());
        assert!(cache.turns("t1", 1, 1).is_none(), "oldest went first");

        // One thread too large to be worth keeping is not kept; its size
        // is what it takes in memory (here mostly one long string).
        let huge = vec![Turn::user("chat", "x".repeat(MAX_BYTES / 4 + 1))];
        cache.keep("huge", 5, huge);
        assert!(cache.turns("huge", 5, 1).is_none());

        // Many values charge their nodes, not their short JSON text: a
        // million empty strings are tens of megabytes in memory.
        let mut wide = Turn::user("chat", "wide");
        wide.data = Some(serde_json::Value::Array(vec![
            serde_json::Value::String(
                String::new()
            );
            1_000_000
        ]));
        cache.keep("wide", 6, vec![wide]);
        assert!(cache.turns("wide", 6, 1).is_none());
    }
}
