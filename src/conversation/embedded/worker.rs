//! The thread that owns one connection: jobs queue in order instead of
//! many blocking threads fighting over a lock. A writing thread commits the
//! jobs waiting for it as one `IMMEDIATE` transaction, each in a savepoint
//! of its own, and delivers their results only after the commit.

use std::{path::PathBuf, sync::Arc, sync::Mutex, sync::atomic::Ordering};

use rusqlite::Connection;

use super::{
    connection::{Opened, ready, restart_the_log},
    file_checks::unwritable,
    health::Health,
};
use crate::conversation::error::MemoryError;

/// The queue of a thread that owns one connection. Jobs run one after
/// another on that thread: calls queue in order instead of many blocking
/// threads fighting over a lock.
pub(super) type Slot = Mutex<Option<std::sync::mpsc::Sender<Job>>>;

/// Work for a connection's thread: it gets the connection (or why the file
/// could not be opened) and returns how to deliver its result once the
/// batch it ran in is committed (or failed to commit, the reason given).
pub(super) type Job = Box<dyn FnOnce(Result<&mut Connection, String>) -> Delivery + Send>;

pub(super) type Delivery = Box<dyn FnOnce(Option<String>) + Send>;

/// Most jobs committed together.
const BATCH: usize = 64;

/// Starts the thread that owns a connection to `path`, opened with its
/// first job (and again after a failed open). A writing thread runs the
/// jobs waiting in its queue as one `IMMEDIATE` transaction, each job in a
/// savepoint of its own: one commit (one pass through the WAL) for many
/// appends under load, and a job that fails undoes only itself. Results
/// are delivered after the commit, so nothing is reported saved that was
/// not.
///
/// Before each batch the thread checks the files (see [`ready`]): files
/// that cannot be written fail the batch (SQLite would fault on its
/// mapping of the wal-index), and a file removed or replaced since the
/// connection opened it is opened again at the path. After a commit it
/// checks once more that the file it wrote is still the one at the path,
/// so a write is reported saved only where every process will read it.
pub(super) fn spawn_worker(
    path: PathBuf,
    writes: bool,
    health: Arc<Health>,
) -> Result<std::sync::mpsc::Sender<Job>, MemoryError> {
    let (sender, jobs) = std::sync::mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("zenmode-store".to_owned())
        .spawn(move || {
            let mut current: Option<Opened> = None;
            while let Ok(first) = jobs.recv() {
                let mut batch = vec![first];
                while writes && batch.len() < BATCH {
                    match jobs.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(_) => break,
                    }
                }
                if let Err(reason) = ready(&path, &mut current, writes, &health) {
                    for job in batch {
                        job(Err(reason.clone()))(None);
                    }
                    continue;
                }
                let Some(opened) = current.as_mut() else {
                    continue;
                };
                if writes && let Err(error) = opened.connection.execute_batch("BEGIN IMMEDIATE") {
                    let reason = format!("SQLite: {error}");
                    health.writes.failed(&path, &reason);
                    for job in batch {
                        job(Err(reason.clone()))(None);
                    }
                    continue;
                }
                let deliveries: Vec<Delivery> = batch
                    .into_iter()
                    .map(|job| job(Ok(&mut opened.connection)))
                    .collect();
                let failed = if writes {
                    let connection = &opened.connection;
                    let failed = match connection.execute_batch("COMMIT") {
                        Err(error) => {
                            let _ = connection.execute_batch("ROLLBACK");
                            Some(format!("SQLite: {error}"))
                        }
                        // Written, but perhaps to a file nobody will read.
                        Ok(()) => opened
                            .replaced(&path)
                            .map(|what| format!("{what} while this change was written to it")),
                    };
                    if let Some(wal) = &opened.wal {
                        wal.commits.fetch_add(1, Ordering::Relaxed);
                    }
                    match &failed {
                        Some(reason) => health.writes.failed(&path, reason),
                        None => health.writes.succeeded(&path),
                    }
                    failed
                } else {
                    None
                };
                for deliver in deliveries {
                    deliver(failed.clone());
                }
                if let Some(wal) = &opened.wal
                    && wal.restart_wanted.swap(false, Ordering::Relaxed)
                    && unwritable(&path).is_none()
                {
                    restart_the_log(&opened.connection);
                }
            }
            if let Some(opened) = current {
                opened.close(&path);
            }
        })
        .map_err(|error| MemoryError::Unavailable {
            reason: format!("cannot start the store's thread: {error}"),
        })?;
    Ok(sender)
}
