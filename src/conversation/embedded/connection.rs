//! A connection and the files it opened ([`Opened`]), kept on the file now
//! at the path: before every batch the files are checked, and a file
//! removed or replaced is opened again. A writing connection hands its
//! checkpoints to a thread of their own, and lets the WAL start over
//! between batches.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use rusqlite::{Connection, config::DbConfig};

use super::{
    file_checks::{FileId, file_ids, unwritable},
    health::Health,
    schema::open,
};

/// A connection and the files it opened.
pub(super) struct Opened {
    pub(super) connection: Connection,
    /// The database, its WAL and its wal-index as they were once opened.
    files: [Option<FileId>; 3],
    /// Shared with the checkpoint thread of a writing connection, which
    /// stops once this (its only owner) is gone.
    pub(super) wal: Option<Arc<WalState>>,
}

impl Opened {
    /// Opens `path`; a writing connection gets its checkpoint thread.
    fn new(path: &Path, writes: bool, health: &Arc<Health>) -> Result<Self, String> {
        let connection = open(path)?;
        let wal = if writes {
            let wal = Arc::new(WalState::default());
            hand_checkpoints_to_a_thread(&connection, path, &wal, health)?;
            Some(wal)
        } else {
            None
        };
        Ok(Opened {
            connection,
            files: file_ids(path),
            wal,
        })
    }

    /// How the files at `path` differ from the ones this connection has:
    /// `None` while they are the same.
    pub(super) fn replaced(&self, path: &Path) -> Option<String> {
        let [database, wal, index] = file_ids(path);
        if database.is_none() {
            return Some(format!("{} was removed", path.display()));
        }
        let changed = database != self.files[0]
            || (self.files[1].is_some() && wal != self.files[1])
            || (self.files[2].is_some() && index != self.files[2]);
        changed.then(|| {
            format!(
                "{} (or its -wal or -shm) was removed or replaced",
                path.display()
            )
        })
    }

    /// Closes the connection. When its files were removed, replaced or
    /// cannot be written, the close skips SQLite's last checkpoint: that
    /// would write through the wal-index mapping (a fault on a file that
    /// cannot be written) and then delete `-wal` and `-shm` by name, which
    /// may by now be the files of the new database at the path.
    pub(super) fn close(self, path: &Path) {
        if self.replaced(path).is_some() || unwritable(path).is_some() {
            let _ = self
                .connection
                .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        }
    }
}

/// Gets `current` ready for a batch: fails when the files cannot be
/// written, opens the file at `path` again when the one the connection has
/// was removed or replaced (creating it if it is gone: the threads it held
/// are lost, but what is written from now on is where every process looks),
/// and opens it on first use. The outcome goes to `health` (logged when
/// it changes).
pub(super) fn ready(
    path: &Path,
    current: &mut Option<Opened>,
    writes: bool,
    health: &Arc<Health>,
) -> Result<(), String> {
    let outcome = reopen_if_needed(path, current, writes, health);
    match &outcome {
        Ok(()) => health.files.succeeded(path),
        Err(reason) => health.files.failed(path, reason),
    }
    outcome
}

/// [`ready`] without the reporting.
fn reopen_if_needed(
    path: &Path,
    current: &mut Option<Opened>,
    writes: bool,
    health: &Arc<Health>,
) -> Result<(), String> {
    if let Some(reason) = unwritable(path) {
        return Err(reason);
    }
    if let Some(what) = current.as_ref().and_then(|opened| opened.replaced(path))
        && let Some(stale) = current.take()
    {
        if writes {
            tracing::warn!(
                path = %path.display(),
                "{what}; the conversation store opens the file at that path again (the threads of the old file are gone)"
            );
        }
        stale.close(path);
    }
    if current.is_none() {
        *current = Some(Opened::new(path, writes, health)?);
    }
    Ok(())
}

/// How often the checkpoint thread folds the WAL back into the file while
/// this process writes. Small and frequent: a checkpoint ends with a sync,
/// and a sync of half a second of appends stalled the file system long
/// enough to show in the p99 of every call (planner steps over HTTP: p99
/// 11–15 ms with 500 ms, 8.6–9.7 ms with 20–50 ms, on the same machine).
const CHECKPOINT_EVERY: Duration = Duration::from_millis(25);
/// Without writes the interval doubles up to this.
const CHECKPOINT_IDLE: Duration = Duration::from_millis(500);

/// What the writer and the checkpoint thread tell each other.
#[derive(Default)]
pub(super) struct WalState {
    /// Commits since the checkpoint thread last looked.
    pub(super) commits: AtomicU64,
    /// The WAL has grown past [`RESTART_FRAMES`]: the writer should let it
    /// start over.
    pub(super) restart_wanted: AtomicBool,
}

/// A WAL this long (about 8 MB) is started over from its beginning.
const RESTART_FRAMES: i64 = 2048;

/// A passive checkpoint beside a busy writer never catches up with it, and
/// SQLite starts the WAL over only when a write begins with every frame
/// already copied back. So under steady load the WAL grew without end (over
/// 300 MB in eight seconds of planner steps), and every commit wrote fresh
/// blocks that the file system had to allocate and zero: a fifth of the
/// store thread's time. Run by the writer between its batches, a checkpoint
/// has nothing racing it; it copies only what the thread has not yet
/// copied, so it is short, and the next write reuses the WAL from the
/// start, in pages already cached.
pub(super) fn restart_the_log(writer: &Connection) {
    if let Err(error) = writer.execute_batch("PRAGMA wal_checkpoint(PASSIVE);") {
        tracing::debug!(%error, "WAL checkpoint on the writer failed; a later one retries");
    }
}

/// Turns off checkpoints on the writing connection and starts a thread
/// that runs them beside it. A checkpoint syncs the file to disk; run by
/// the writer (SQLite's default), every call queued behind it waited for
/// that sync, which made the slowest appends under load several times the
/// median. A passive checkpoint never blocks the writer. The thread stops
/// when the writer drops `wal`.
fn hand_checkpoints_to_a_thread(
    writer: &Connection,
    path: &Path,
    wal: &Arc<WalState>,
    health: &Arc<Health>,
) -> Result<(), String> {
    writer
        // After a burst, a WAL that has started over is cut back to 64 MB.
        .execute_batch("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 67108864;")
        .map_err(|error| format!("cannot set up {}: {error}", path.display()))?;
    let path = path.to_owned();
    let wal = Arc::downgrade(wal);
    let health = Arc::clone(health);
    std::thread::Builder::new()
        .name("zenmode-checkpoint".to_owned())
        .spawn(move || {
            let mut current: Option<Opened> = None;
            let mut interval = CHECKPOINT_EVERY;
            loop {
                std::thread::sleep(interval);
                let Some(wal) = wal.upgrade() else {
                    break;
                };
                interval = if wal.commits.swap(0, Ordering::Relaxed) > 0 {
                    CHECKPOINT_EVERY
                } else {
                    (interval * 2).min(CHECKPOINT_IDLE)
                };
                // The same checks as the writer's: a checkpoint writes the
                // wal-index too.
                if ready(&path, &mut current, false, &health).is_err() {
                    continue;
                }
                let Some(opened) = &current else {
                    continue;
                };
                // The row is (busy, frames in the WAL, frames copied back).
                match opened
                    .connection
                    .query_row("PRAGMA wal_checkpoint(PASSIVE);", [], |row| {
                        row.get::<_, i64>(1)
                    }) {
                    Ok(frames) if frames >= RESTART_FRAMES => {
                        wal.restart_wanted.store(true, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::debug!(%error, "WAL checkpoint failed; the next one retries");
                    }
                }
            }
            if let Some(opened) = current {
                opened.close(&path);
            }
        })
        .map(|_| ())
        .map_err(|error| format!("cannot start the checkpoint thread: {error}"))
}
