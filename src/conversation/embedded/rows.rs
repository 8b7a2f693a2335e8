//! The SQL of threads, turns and ended ids: the limits of one operation
//! ([`Limits`]), removing a thread and remembering why, keeping the store
//! within its bounds, reading a thread's turns, and saying why an id has no
//! thread.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use crate::conversation::{config::MemoryConfig, error::MemoryError, thread::Turn};

/// Ids of ended threads remembered (to say "expired" rather than "unknown").
pub(super) const REMEMBERED_GONE_IDS: i64 = 10_000;

/// What one operation needs besides the connection.
pub(super) struct Limits {
    pub(super) config: MemoryConfig,
    pub(super) now: i64,
}

impl Limits {
    fn timeout_ms(&self) -> i64 {
        i64::try_from(self.config.timeout.as_millis()).unwrap_or(i64::MAX)
    }

    /// Threads updated at or before this are expired.
    pub(super) fn expired_before(&self) -> i64 {
        self.now.saturating_sub(self.timeout_ms())
    }
}

pub(super) fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(super) fn time_of(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

pub(super) fn unavailable(error: rusqlite::Error) -> MemoryError {
    MemoryError::Unavailable {
        reason: format!("SQLite: {error}"),
    }
}

/// Runs a statement through the connection's cache of prepared statements.
pub(super) fn exec<P: rusqlite::Params>(
    connection: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<usize> {
    connection.prepare_cached(sql)?.execute(params)
}

/// Removes a thread and remembers why.
pub(super) fn remove(
    transaction: &Connection,
    id: &str,
    why: &str,
    now: i64,
) -> rusqlite::Result<()> {
    exec(
        transaction,
        "DELETE FROM turn_log WHERE thread = (SELECT rowid FROM threads WHERE id = ?1)",
        params![id],
    )?;
    exec(transaction,
        "UPDATE totals SET threads = threads - 1, bytes = bytes - (SELECT bytes FROM threads WHERE id = ?1)
         WHERE EXISTS (SELECT 1 FROM threads WHERE id = ?1)",
        params![id],
    )?;
    exec(
        transaction,
        "DELETE FROM threads WHERE id = ?1",
        params![id],
    )?;
    exec(
        transaction,
        "INSERT OR REPLACE INTO gone (id, why, at_ms) VALUES (?1, ?2, ?3)",
        params![id, why, now],
    )?;
    Ok(())
}

/// Drops expired threads, then the least recently updated ones (never
/// `keep`) while either bound is exceeded; trims the remembered ids.
pub(super) fn enforce_bounds(
    transaction: &Connection,
    limits: &Limits,
    keep: &str,
) -> rusqlite::Result<()> {
    let expired: Vec<String> = transaction
        .prepare_cached("SELECT id FROM threads WHERE updated_ms <= ?1")?
        .query_map(params![limits.expired_before()], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let mut removed = expired.len();
    for id in expired {
        remove(transaction, &id, "expired", limits.now)?;
    }
    loop {
        // Running totals (kept by every write) rather than a scan of all
        // threads on every write.
        let (count, bytes): (i64, i64) = transaction
            .prepare_cached("SELECT threads, bytes FROM totals WHERE one = 1")?
            .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let over = count as u64 > limits.config.max_threads as u64
            || bytes as u64 > limits.config.max_total_bytes as u64;
        if !over {
            break;
        }
        let victim: Option<String> = transaction
            .prepare_cached(
                "SELECT id FROM threads WHERE id <> ?1 ORDER BY updated_ms, rowid LIMIT 1",
            )?
            .query_row(params![keep], |row| row.get(0))
            .optional()?;
        let Some(victim) = victim else { break };
        tracing::debug!(id = %victim, "conversation evicted to bound the store");
        remove(transaction, &victim, "evicted", limits.now)?;
        removed += 1;
    }
    if removed > 0 {
        forget_the_oldest_gone_ids(transaction)?;
    }
    Ok(())
}

/// Keeps the last [`REMEMBERED_GONE_IDS`] ids written to `gone`. Rows get
/// ever larger rowids (a replaced id gets a new one), so the cut is a
/// range of the table's own key: it costs the rows it deletes, usually
/// one. Counting back by `at_ms` instead (`ORDER BY ... OFFSET 10000`)
/// walked ten thousand index entries on every write that ended a thread
/// (288 µs against 4 µs, median), and a server at its thread cap ends one
/// with every new thread.
pub(super) fn forget_the_oldest_gone_ids(transaction: &Connection) -> rusqlite::Result<()> {
    exec(
        transaction,
        "DELETE FROM gone WHERE rowid <= (SELECT MAX(rowid) FROM gone) - ?1",
        params![REMEMBERED_GONE_IDS],
    )?;
    Ok(())
}

/// The turns of one thread, in order. The unary plus matters: with a bare
/// `?1`, SQLite marks the plan as depending on the bound value (the
/// equality makes the `ORDER BY` redundant only for that value) and parses
/// and plans the statement again on every run, cache or not: a tenth of
/// the store thread's time in planner steps over HTTP. `+?1` keeps the
/// same plan (the `(thread, seq)` index, no sort) without that mark.
pub(super) const TURNS_OF_A_THREAD: &str =
    "SELECT body FROM turn_log WHERE thread = +?1 ORDER BY seq";

/// Every turn of the thread `key`, parsed, in order.
pub(super) fn read_turns(connection: &Connection, key: i64) -> Result<Vec<Turn>, MemoryError> {
    let bodies: Vec<String> = connection
        .prepare_cached(TURNS_OF_A_THREAD)
        .and_then(|mut statement| {
            statement
                .query_map(params![key], |row| row.get(0))?
                .collect::<Result<_, _>>()
        })
        .map_err(unavailable)?;
    bodies
        .iter()
        .map(|body| serde_json::from_str::<Turn>(body))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| MemoryError::Unavailable {
            reason: format!("a stored turn is unreadable: {error}"),
        })
}

/// Why `id` has no thread.
pub(super) fn gone_error(connection: &Connection, id: &str) -> Result<MemoryError, MemoryError> {
    let why: Option<String> = connection
        .prepare_cached("SELECT why FROM gone WHERE id = ?1")
        .and_then(|mut statement| statement.query_row(params![id], |row| row.get(0)))
        .optional()
        .map_err(unavailable)?;
    let id = id.to_owned();
    Ok(match why.as_deref() {
        Some("expired") => MemoryError::Expired { id },
        Some("evicted") => MemoryError::Evicted { id },
        _ => MemoryError::Unknown { id },
    })
}
