//! Opening the file: created readable by its owner only, WAL mode, no
//! memory-mapped reads, the tables and indexes, and the turns of a file in
//! the first layout moved over once.

use std::{path::Path, time::Duration};

use rusqlite::Connection;

/// Waiting this long for another process's write is still a normal wait.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens (creating if needed) the file, readable by its owner only.
pub(super) fn open(path: &Path) -> Result<Connection, String> {
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    }
    let connection = Connection::open(path)
        .map_err(|error| format!("cannot open {}: {error}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(
            path,
            std::fs::Permissions::from_mode(crate::platform::private_file::PRIVATE_FILE_MODE),
        );
    }
    connection
        .busy_timeout(BUSY_TIMEOUT)
        // No memory-mapped reads of the file (SQLite's default, made sure
        // of): a mapping faults (SIGBUS) instead of failing when the file
        // cannot be read or grown. The wal-index is mapped all the same;
        // see `unwritable`.
        .and_then(|()| {
            connection.execute_batch(
                "PRAGMA mmap_size = 0;
                 PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = NORMAL;
                 CREATE TABLE IF NOT EXISTS threads (
                     id TEXT PRIMARY KEY,
                     created_ms INTEGER NOT NULL,
                     updated_ms INTEGER NOT NULL,
                     turns INTEGER NOT NULL,
                     bytes INTEGER NOT NULL);
                 CREATE INDEX IF NOT EXISTS threads_by_update ON threads (updated_ms);
                 -- Turns in the order they were written, so the turns of one
                 -- commit share a page or two at the end of the table instead
                 -- of each landing on its own thread's page (with turns keyed
                 -- by thread id, every append rewrote a page picked at random:
                 -- a sixth less CPU per planner step over HTTP).
                 CREATE TABLE IF NOT EXISTS turn_log (
                     thread INTEGER NOT NULL,
                     seq INTEGER NOT NULL,
                     body TEXT NOT NULL);
                 CREATE UNIQUE INDEX IF NOT EXISTS turn_log_by_thread ON turn_log (thread, seq);
                 CREATE TABLE IF NOT EXISTS gone (
                     id TEXT PRIMARY KEY,
                     why TEXT NOT NULL,
                     at_ms INTEGER NOT NULL);
                 CREATE INDEX IF NOT EXISTS gone_by_time ON gone (at_ms);
                 CREATE TABLE IF NOT EXISTS totals (
                     one INTEGER PRIMARY KEY CHECK (one = 1),
                     threads INTEGER NOT NULL,
                     bytes INTEGER NOT NULL);
                 INSERT OR IGNORE INTO totals (one, threads, bytes)
                     SELECT 1, COUNT(*), COALESCE(SUM(bytes), 0) FROM threads;",
            )
        })
        .and_then(|()| move_turns_of_the_first_layout(&connection))
        .map_err(|error| format!("cannot set up {}: {error}", path.display()))?;
    Ok(connection)
}

/// Files written before `turn_log` keep their turns in `turns`, keyed by
/// thread id: moves them over once, in one transaction, so their threads
/// go on. (A zenmode of that age still running on the file then reports
/// the store unavailable rather than writing where nobody reads.)
fn move_turns_of_the_first_layout(connection: &Connection) -> rusqlite::Result<()> {
    let present = |connection: &Connection| -> rusqlite::Result<bool> {
        connection.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turns')",
            [],
            |row| row.get(0),
        )
    };
    if !present(connection)? {
        return Ok(());
    }
    connection.execute_batch("BEGIN IMMEDIATE")?;
    let moved = present(connection).and_then(|still_there| {
        if still_there {
            connection.execute_batch(
                "INSERT OR IGNORE INTO turn_log (thread, seq, body)
                     SELECT threads.rowid, turns.seq, turns.body
                     FROM turns JOIN threads ON threads.id = turns.thread;
                 DROP TABLE turns;",
            )?;
        }
        connection.execute_batch("COMMIT")
    });
    if moved.is_err() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    moved
}
