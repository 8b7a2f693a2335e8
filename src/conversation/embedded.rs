//! Threads in one SQLite file: they survive restarts, and every process on
//! the machine that opens the same file sees the same threads (a `zenmode
//! exec` can continue what a server started).
//!
//! Several processes may write at once: the file is in WAL mode, writers
//! wait for each other (busy timeout), and every change is one `IMMEDIATE`
//! transaction that checks the limits and writes together, so two appends
//! to one thread never lose a turn or pass the turn cap. The limits are the
//! in-memory store's: idle expiry, turns per thread, thread count and total
//! bytes (least recently updated threads go first).
//!
//! The file can change under a running process. Before every batch of work
//! each connection's thread checks that the files can still be written
//! (else the call fails with `Unavailable`: SQLite would fault on its
//! mapping of `-shm` and end the process) and that the file at the path is
//! still the one it has open (device and inode); a file removed or
//! replaced is opened again at the path, created if need be. A write is
//! reported saved only if, after its commit, the file at the path is still
//! the one written.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rusqlite::{Connection, OptionalExtension, config::DbConfig, params};

use super::{
    Clock, ConversationStore, MemoryConfig, MemoryError, SystemClock, Thread, Turn, encode_turn,
    normalize_id, turn_cache::TurnCache,
};

/// Waiting this long for another process's write is still a normal wait.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Fixed cost counted per thread, as in memory.
const THREAD_OVERHEAD: usize = 128;
/// Ids of ended threads remembered (to say "expired" rather than "unknown").
const REMEMBERED_GONE_IDS: i64 = 10_000;

pub struct EmbeddedStore {
    path: PathBuf,
    config: MemoryConfig,
    clock: Arc<dyn Clock>,
    /// Opened on first use: a server that never continues a thread never
    /// touches the file, and start-up stays fast. Writes go through one
    /// connection (SQLite has one writer at a time anyway); reads have
    /// their own, which WAL lets run beside a write.
    writer: Slot,
    reader: Slot,
    /// Threads this process read or wrote last, decoded (see `turn_cache`).
    cache: Arc<TurnCache>,
    health: Arc<Health>,
}

/// The queue of a thread that owns one connection. Jobs run one after
/// another on that thread: calls queue in order instead of many blocking
/// threads fighting over a lock.
type Slot = Mutex<Option<std::sync::mpsc::Sender<Job>>>;

/// Work for a connection's thread: it gets the connection (or why the file
/// could not be opened) and returns how to deliver its result once the
/// batch it ran in is committed (or failed to commit, the reason given).
type Job = Box<dyn FnOnce(Result<&mut Connection, String>) -> Delivery + Send>;
type Delivery = Box<dyn FnOnce(Option<String>) + Send>;

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
fn spawn_worker(
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

/// A connection and the files it opened.
struct Opened {
    connection: Connection,
    /// The database, its WAL and its wal-index as they were once opened.
    files: [Option<FileId>; 3],
    /// Shared with the checkpoint thread of a writing connection, which
    /// stops once this (its only owner) is gone.
    wal: Option<Arc<WalState>>,
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
    fn replaced(&self, path: &Path) -> Option<String> {
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
    fn close(self, path: &Path) {
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
fn ready(
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

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct FileId {
    device: u64,
    inode: u64,
}

/// The database at `path`, its WAL and its wal-index.
fn store_files(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    [path.to_owned(), with("-wal"), with("-shm")]
}

/// The device and inode of each of the store's files, `None` where a file
/// is missing (or cannot be looked at).
fn file_ids(path: &Path) -> [Option<FileId>; 3] {
    store_files(path).map(|file| {
        let metadata = std::fs::metadata(file).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(FileId {
                device: metadata.dev(),
                inode: metadata.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Some(FileId::default())
        }
    })
}

/// Why the store's files cannot be written, if one of them cannot (made
/// immutable, read-only, on a file system remounted read-only). SQLite
/// writes the wal-index (`-shm`) through a shared memory mapping, for
/// reads as well as writes; once the file cannot be written, the next
/// write to a page of that mapping ends the whole process with SIGBUS
/// instead of returning an error. So every batch checks first. (A file
/// made unwritable in the instant between the check and the write can
/// still fault; nothing short of giving up sharing the file between
/// processes avoids the mapping: SQLite keeps the wal-index in the heap
/// only with an exclusive lock.) Missing files are fine: SQLite creates
/// them.
fn unwritable(path: &Path) -> Option<String> {
    #[cfg(unix)]
    for file in store_files(path) {
        use std::os::unix::ffi::OsStrExt;
        let Ok(name) = std::ffi::CString::new(file.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        if unsafe { libc::access(name.as_ptr(), libc::W_OK) } == 0 {
            continue;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::NotFound {
            return Some(format!("{} cannot be written: {error}", file.display()));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    None
}

/// How the store fares, shared by a store's threads so that a failure that
/// lasts many calls is logged once, and its end once: whether its files
/// can be used (checked before every batch, by every thread), and whether
/// its writes commit.
#[derive(Debug, Default)]
struct Health {
    files: Episode,
    writes: Episode,
}

/// Whether the last attempt of one kind failed.
#[derive(Debug, Default)]
struct Episode(AtomicBool);

impl Episode {
    fn failed(&self, path: &Path, reason: &str) {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                path = %path.display(),
                "the conversation store is unavailable ({reason}); calls that need it fail until it is back"
            );
        }
    }

    fn succeeded(&self, path: &Path) {
        if self.0.swap(false, Ordering::Relaxed) {
            tracing::info!(path = %path.display(), "the conversation store works again");
        }
    }
}

impl std::fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("path", &self.path)
            .finish()
    }
}

impl EmbeddedStore {
    pub fn new(path: PathBuf, config: MemoryConfig) -> Self {
        Self::with_clock(path, config, Arc::new(SystemClock))
    }

    /// A store reading time from `clock` (tests pass a `ManualClock`).
    pub fn with_clock(path: PathBuf, config: MemoryConfig, clock: Arc<dyn Clock>) -> Self {
        let config = config.at_least_one();
        EmbeddedStore {
            path,
            config,
            clock,
            writer: Slot::default(),
            reader: Slot::default(),
            cache: Arc::default(),
            health: Arc::default(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on a blocking thread with the writing connection.
    async fn writing<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection, &Limits) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        self.with_connection(&self.writer, true, work).await
    }

    /// Runs `work` on a blocking thread with the reading connection.
    async fn reading<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection, &Limits) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        self.with_connection(&self.reader, false, work).await
    }

    async fn with_connection<T: Send + 'static>(
        &self,
        slot: &Slot,
        writes: bool,
        work: impl FnOnce(&mut Connection, &Limits) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, MemoryError> {
        let limits = Limits {
            config: self.config.clone(),
            now: millis(self.clock.now()),
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let result = match connection {
                Ok(connection) => work(connection, &limits),
                Err(reason) => Err(MemoryError::Unavailable { reason }),
            };
            Box::new(move |failed: Option<String>| {
                let result = match failed {
                    Some(reason) => Err(MemoryError::Unavailable { reason }),
                    None => result,
                };
                let _ = reply.send(result);
            })
        });
        let sent = {
            let mut worker = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let sender = match worker.as_ref() {
                Some(sender) => sender.clone(),
                None => {
                    let sender = spawn_worker(self.path.clone(), writes, Arc::clone(&self.health))?;
                    *worker = Some(sender.clone());
                    sender
                }
            };
            sender.send(job)
        };
        if sent.is_err() {
            // The worker thread is gone; the next call starts a new one.
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
            return Err(MemoryError::Unavailable {
                reason: "the store's worker thread stopped".to_owned(),
            });
        }
        answer.await.unwrap_or_else(|_| {
            Err(MemoryError::Unavailable {
                reason: "the store's worker thread stopped".to_owned(),
            })
        })
    }
}

/// What one operation needs besides the connection.
struct Limits {
    config: MemoryConfig,
    now: i64,
}

impl Limits {
    fn timeout_ms(&self) -> i64 {
        i64::try_from(self.config.timeout.as_millis()).unwrap_or(i64::MAX)
    }

    /// Threads updated at or before this are expired.
    fn expired_before(&self) -> i64 {
        self.now.saturating_sub(self.timeout_ms())
    }
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn time_of(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

fn unavailable(error: rusqlite::Error) -> MemoryError {
    MemoryError::Unavailable {
        reason: format!("SQLite: {error}"),
    }
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
struct WalState {
    /// Commits since the checkpoint thread last looked.
    commits: AtomicU64,
    /// The WAL has grown past [`RESTART_FRAMES`]: the writer should let it
    /// start over.
    restart_wanted: AtomicBool,
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
fn restart_the_log(writer: &Connection) {
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

/// Opens (creating if needed) the file, readable by its owner only.
fn open(path: &Path) -> Result<Connection, String> {
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
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
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

/// Runs a statement through the connection's cache of prepared statements.
fn exec<P: rusqlite::Params>(
    connection: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<usize> {
    connection.prepare_cached(sql)?.execute(params)
}

/// Removes a thread and remembers why.
fn remove(transaction: &Connection, id: &str, why: &str, now: i64) -> rusqlite::Result<()> {
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
fn enforce_bounds(transaction: &Connection, limits: &Limits, keep: &str) -> rusqlite::Result<()> {
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
fn forget_the_oldest_gone_ids(transaction: &Connection) -> rusqlite::Result<()> {
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
const TURNS_OF_A_THREAD: &str = "SELECT body FROM turn_log WHERE thread = +?1 ORDER BY seq";

/// Every turn of the thread `key`, parsed, in order.
fn read_turns(connection: &Connection, key: i64) -> Result<Vec<Turn>, MemoryError> {
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
fn gone_error(connection: &Connection, id: &str) -> Result<MemoryError, MemoryError> {
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

#[async_trait::async_trait]
impl ConversationStore for EmbeddedStore {
    async fn create(&self, first: Turn) -> Result<String, MemoryError> {
        let body = encode_turn(&first)?;
        let bytes = THREAD_OVERHEAD + body.len();
        if bytes > self.config.max_total_bytes {
            return Err(MemoryError::TooLarge {
                bytes,
                max_bytes: self.config.max_total_bytes,
            });
        }
        let created = self.writing(move |connection, limits| {
            // A savepoint inside the batch's transaction (see `spawn_worker`).
            let transaction = connection.savepoint().map_err(unavailable)?;
            let id = uuid::Uuid::new_v4().hyphenated().to_string();
            let mut key = 0;
            exec(&transaction,
                    "INSERT INTO threads (id, created_ms, updated_ms, turns, bytes) VALUES (?1, ?2, ?2, 1, ?3)",
                    params![id, limits.now, bytes as i64],
                )
                .and_then(|_| {
                    key = transaction.last_insert_rowid();
                    exec(&transaction,
                        "INSERT INTO turn_log (thread, seq, body) VALUES (?1, 0, ?2)",
                        params![key, body],
                    )
                })
                .and_then(|_| {
                    exec(&transaction,
                        "UPDATE totals SET threads = threads + 1, bytes = bytes + ?1 WHERE one = 1",
                        params![bytes as i64],
                    )
                })
                .and_then(|_| enforce_bounds(&transaction, limits, &id))
                .and_then(|()| transaction.commit())
                .map_err(unavailable)?;
            Ok((id, key))
        })
        .await?;
        let (id, key) = created;
        self.cache.keep(&id, key, vec![first]);
        Ok(id)
    }

    async fn get(&self, id: &str) -> Result<Thread, MemoryError> {
        let id = normalize_id(id)?;
        let cache = Arc::clone(&self.cache);
        self.reading(move |connection, limits| {
            let found: Option<(i64, i64, i64, i64, i64)> = connection
                .prepare_cached(
                    "SELECT rowid, created_ms, updated_ms, turns, bytes FROM threads WHERE id = ?1",
                )
                .and_then(|mut statement| {
                    statement.query_row(params![id], |row| {
                        Ok((
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                        ))
                    })
                })
                .optional()
                .map_err(unavailable)?;
            let Some((key, created, updated, count, bytes)) = found else {
                cache.forget(&id);
                return Err(gone_error(connection, &id)?);
            };
            // An expired thread stays until the next write sweeps it (and
            // remembers why); until then it reads as expired all the same.
            if updated <= limits.expired_before() {
                cache.forget(&id);
                return Err(MemoryError::Expired { id });
            }
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            let turns = match cache.turns(&id, key, count) {
                Some(turns) => turns,
                None => {
                    let turns = read_turns(connection, key)?;
                    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
                    if TurnCache::worth_keeping(bytes) {
                        cache.keep(&id, key, turns.clone());
                    } else {
                        cache.forget(&id);
                    }
                    turns
                }
            };
            Ok(Thread {
                id,
                created: time_of(created),
                updated: time_of(updated),
                turns,
            })
        })
        .await
    }

    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError> {
        let id = normalize_id(id)?;
        let body = encode_turn(&turn)?;
        let cache_id = id.clone();
        let appended = self.writing(move |connection, limits| {
            // A savepoint inside the batch's transaction (see `spawn_worker`).
            let transaction = connection.savepoint().map_err(unavailable)?;
            let found: Option<(i64, i64, i64, i64)> = transaction
                .prepare_cached("SELECT rowid, updated_ms, turns, bytes FROM threads WHERE id = ?1")
                .and_then(|mut statement| {
                    statement.query_row(params![id], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                    })
                })
                .optional()
                .map_err(unavailable)?;
            let Some((key, updated, turns, bytes)) = found else {
                return Err(gone_error(&transaction, &id)?);
            };
            if updated <= limits.expired_before() {
                remove(&transaction, &id, "expired", limits.now)
                    .and_then(|()| transaction.commit())
                    .map_err(unavailable)?;
                return Err(MemoryError::Expired { id });
            }
            let max_turns = limits.config.max_turns;
            if turns as u64 >= max_turns as u64 {
                return Err(MemoryError::Full { id, max_turns });
            }
            let grown = bytes as usize + body.len();
            if grown > limits.config.max_total_bytes {
                return Err(MemoryError::TooLarge {
                    bytes: grown,
                    max_bytes: limits.config.max_total_bytes,
                });
            }
            exec(&transaction,
                    "INSERT INTO turn_log (thread, seq, body) VALUES (?1, ?2, ?3)",
                    params![key, turns, body],
                )
                .and_then(|_| {
                    exec(&transaction,
                        "UPDATE threads SET updated_ms = ?2, turns = turns + 1, bytes = ?3 WHERE id = ?1",
                        params![id, limits.now.max(updated), grown as i64],
                    )
                })
                .and_then(|_| {
                    exec(&transaction,
                        "UPDATE totals SET bytes = bytes + ?1 WHERE one = 1",
                        params![body.len() as i64],
                    )
                })
                .and_then(|_| enforce_bounds(&transaction, limits, &id))
                .and_then(|()| transaction.commit())
                .map_err(unavailable)?;
            Ok((key, turns as usize + 1))
        })
        .await;
        match appended {
            Ok((key, count)) => {
                self.cache.appended(&cache_id, key, count, turn);
                Ok(count)
            }
            Err(error) => {
                self.cache.forget(&cache_id);
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ManualClock;

    fn store(dir: &Path, config: MemoryConfig) -> (EmbeddedStore, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::default());
        let store = EmbeddedStore::with_clock(dir.join("threads.db"), config, clock.clone());
        (store, clock)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn reading_a_thread_reuses_its_prepared_statement() {
        let dir = tempfile::tempdir().unwrap();
        let connection = open(&dir.path().join("threads.db")).unwrap();
        connection
            .execute_batch(
                "INSERT INTO turn_log (thread, seq, body) VALUES (1, 0, 'a'), (1, 1, 'b'), (2, 0, 'c');",
            )
            .unwrap();
        let mut status = 0;
        for thread in [1, 2, 1, 3] {
            let mut statement = connection.prepare_cached(TURNS_OF_A_THREAD).unwrap();
            let bodies: Vec<String> = statement
                .query_map(params![thread], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let expected: &[&str] = match thread {
                1 => &["a", "b"],
                2 => &["c"],
                _ => &[],
            };
            assert_eq!(bodies, expected);
            status = statement.get_status(rusqlite::StatementStatus::RePrepare);
        }
        assert_eq!(status, 0, "the statement was parsed again on a run");
        let plan: String = connection
            .query_row(
                &format!("EXPLAIN QUERY PLAN {TURNS_OF_A_THREAD}"),
                params![1],
                |row| row.get(3),
            )
            .unwrap();
        assert!(plan.contains("turn_log_by_thread"), "{plan}");
    }

    #[test]
    fn threads_survive_a_new_store_on_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let (first, _) = store(dir.path(), MemoryConfig::default());
            let id = first.create(Turn::user("chat", "hello")).await.unwrap();
            assert_eq!(
                first.append(&id, Turn::assistant("chat", "hi")).await,
                Ok(2)
            );
            drop(first);
            let (second, _) = store(dir.path(), MemoryConfig::default());
            let thread = second.get(&id.to_uppercase()).await.unwrap();
            let contents: Vec<&str> = thread.turns.iter().map(|t| t.content.as_str()).collect();
            assert_eq!(contents, ["hello", "hi"]);
            assert_eq!(thread.id, id);
        });
    }

    #[test]
    fn a_file_in_the_first_layout_keeps_its_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("threads.db");
        let id = "0b6c1f52-8f3e-4c7a-9d2e-5a1b3c4d5e6f";
        let clock = ManualClock::default();
        let now = millis(clock.now());
        {
            // The schema zenmode wrote before `turn_log`, with one thread.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE threads (id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL,
                     updated_ms INTEGER NOT NULL, turns INTEGER NOT NULL, bytes INTEGER NOT NULL);
                 CREATE INDEX threads_by_update ON threads (updated_ms);
                 CREATE TABLE turns (thread TEXT NOT NULL, seq INTEGER NOT NULL,
                     body TEXT NOT NULL, PRIMARY KEY (thread, seq)) WITHOUT ROWID;
                 CREATE TABLE gone (id TEXT PRIMARY KEY, why TEXT NOT NULL, at_ms INTEGER NOT NULL);
                 CREATE INDEX gone_by_time ON gone (at_ms);
                 CREATE TABLE totals (one INTEGER PRIMARY KEY CHECK (one = 1),
                     threads INTEGER NOT NULL, bytes INTEGER NOT NULL);",
            )
            .unwrap();
            let first = encode_turn(&Turn::user("chat", "first")).unwrap();
            let second = encode_turn(&Turn::assistant("chat", "second")).unwrap();
            let bytes = (THREAD_OVERHEAD + first.len() + second.len()) as i64;
            old.execute(
                "INSERT INTO threads VALUES (?1, ?2, ?2, 2, ?3)",
                params![id, now, bytes],
            )
            .unwrap();
            old.execute("INSERT INTO totals VALUES (1, 1, ?1)", params![bytes])
                .unwrap();
            for (seq, body) in [(1, &second), (0, &first)] {
                old.execute(
                    "INSERT INTO turns VALUES (?1, ?2, ?3)",
                    params![id, seq, body],
                )
                .unwrap();
            }
        }
        runtime().block_on(async {
            let (store, _) = store(dir.path(), MemoryConfig::default());
            let thread = store.get(id).await.unwrap();
            let contents: Vec<&str> = thread.turns.iter().map(|t| t.content.as_str()).collect();
            assert_eq!(contents, ["first", "second"]);
            assert_eq!(store.append(id, Turn::user("chat", "third")).await, Ok(3));
            assert_eq!(store.get(id).await.unwrap().turns.len(), 3);
        });
        let tables: i64 = Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = 'turns'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the old table is gone once its turns moved");
    }

    #[test]
    fn limits_and_errors_match_the_memory_store() {
        let dir = tempfile::tempdir().unwrap();
        let config = MemoryConfig {
            timeout: Duration::from_secs(60),
            max_turns: 2,
            max_threads: 2,
            ..MemoryConfig::default()
        };
        runtime().block_on(async {
            let (store, clock) = store(dir.path(), config);
            let a = store.create(Turn::user("chat", "a")).await.unwrap();
            assert_eq!(store.append(&a, Turn::user("chat", "a2")).await, Ok(2));
            assert!(matches!(
                store.append(&a, Turn::user("chat", "a3")).await,
                Err(MemoryError::Full { max_turns: 2, .. })
            ));
            clock.advance(Duration::from_secs(10));
            let b = store.create(Turn::user("chat", "b")).await.unwrap();
            clock.advance(Duration::from_secs(10));
            let _c = store.create(Turn::user("chat", "c")).await.unwrap();
            // Three threads over a cap of two: the least recently updated went.
            assert!(matches!(
                store.get(&a).await,
                Err(MemoryError::Evicted { .. })
            ));
            assert!(store.get(&b).await.is_ok());
            clock.advance(Duration::from_secs(61));
            assert!(matches!(
                store.get(&b).await,
                Err(MemoryError::Expired { .. })
            ));
            let unknown = uuid::Uuid::new_v4().to_string();
            assert!(matches!(
                store.get(&unknown).await,
                Err(MemoryError::Unknown { .. })
            ));
            assert!(matches!(
                store.get("nope").await,
                Err(MemoryError::InvalidId { .. })
            ));
        });
    }

    #[test]
    fn an_unwritable_location_is_reported_not_panicked() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "not a directory").unwrap();
        let store = EmbeddedStore::new(blocker.join("threads.db"), MemoryConfig::default());
        let error = runtime()
            .block_on(store.create(Turn::user("chat", "x")))
            .unwrap_err();
        assert!(
            matches!(&error, MemoryError::Unavailable { reason } if reason.contains("cannot")),
            "{error}"
        );
    }

    /// The files removed, then replaced by another database, under a
    /// store that has them open: each time the store opens the file now at
    /// the path, writes there, and closing the old connections leaves the
    /// new file's WAL alone.
    #[test]
    fn a_removed_or_replaced_file_is_opened_again_at_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("threads.db");
        let remove_all = |base: &Path| {
            for file in store_files(base) {
                std::fs::remove_file(file).unwrap();
            }
        };
        runtime().block_on(async {
            let (store, clock) = store(dir.path(), MemoryConfig::default());
            let old = store.create(Turn::user("chat", "old")).await.unwrap();
            store.get(&old).await.unwrap();
            remove_all(&path);

            let after_removal = store.create(Turn::user("chat", "new")).await.unwrap();
            assert_eq!(
                store
                    .append(&after_removal, Turn::user("chat", "two"))
                    .await,
                Ok(2)
            );
            assert_eq!(store.get(&after_removal).await.unwrap().turns.len(), 2);
            assert!(matches!(
                store.get(&old).await,
                Err(MemoryError::Unknown { .. })
            ));

            // Another database, with a thread of its own, moved into place.
            let other_path = dir.path().join("other.db");
            let other = EmbeddedStore::new(other_path.clone(), MemoryConfig::default());
            let theirs = other.create(Turn::user("chat", "theirs")).await.unwrap();
            let copy = dir.path().join("copy.db");
            open(&other_path)
                .unwrap()
                .execute("VACUUM INTO ?1", params![copy.to_str().unwrap()])
                .unwrap();
            remove_all(&path);
            std::fs::rename(&copy, &path).unwrap();

            assert_eq!(store.get(&theirs).await.unwrap().turns.len(), 1);
            let mine = store.create(Turn::user("chat", "mine")).await.unwrap();
            assert!(matches!(
                store.get(&after_removal).await,
                Err(MemoryError::Unknown { .. })
            ));
            drop(store);
            // A store of its own (another process would do the same) reads
            // what the first one wrote to the file now at the path.
            let fresh = EmbeddedStore::with_clock(path.clone(), MemoryConfig::default(), clock);
            assert_eq!(fresh.get(&mine).await.unwrap().turns.len(), 1);
            assert_eq!(fresh.get(&theirs).await.unwrap().turns.len(), 1);
        });
    }

    #[test]
    fn concurrent_appends_from_two_stores_lose_no_turn() {
        let dir = tempfile::tempdir().unwrap();
        let config = MemoryConfig {
            max_turns: 1_000,
            ..MemoryConfig::default()
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let one = Arc::new(EmbeddedStore::new(dir.path().join("t.db"), config.clone()));
            let two = Arc::new(EmbeddedStore::new(dir.path().join("t.db"), config));
            let id = one.create(Turn::user("chat", "start")).await.unwrap();
            let mut tasks = Vec::new();
            for (n, store) in [one.clone(), two.clone()].into_iter().enumerate() {
                let id = id.clone();
                tasks.push(tokio::spawn(async move {
                    for i in 0..50 {
                        store
                            .append(&id, Turn::user("chat", format!("{n}-{i}")))
                            .await
                            .unwrap();
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            assert_eq!(two.get(&id).await.unwrap().turns.len(), 101);
            // Each store's cache saw only part of the appends: what both
            // read must still be the file's turns, in the file's order.
            let fresh = EmbeddedStore::new(dir.path().join("t.db"), MemoryConfig::default());
            let truth = fresh.get(&id).await.unwrap().turns;
            assert_eq!(one.get(&id).await.unwrap().turns, truth);
            assert_eq!(two.get(&id).await.unwrap().turns, truth);
        });
    }

    /// Two processes take turns on one thread: every read, cached or not,
    /// gives exactly what a store with no cache reads from the file.
    #[test]
    fn a_thread_continued_elsewhere_is_read_again_not_served_stale() {
        let dir = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let path = dir.path().join("t.db");
            let one = EmbeddedStore::new(path.clone(), MemoryConfig::default());
            let two = EmbeddedStore::new(path.clone(), MemoryConfig::default());
            let id = one.create(Turn::user("chat", "0")).await.unwrap();
            for i in 1..12 {
                let (writer, reader) = if i % 3 == 0 {
                    (&two, &one)
                } else {
                    (&one, &two)
                };
                // Read first so the reader's cache holds the thread as it was.
                let before = reader.get(&id).await.unwrap().turns.len();
                writer
                    .append(&id, Turn::user("chat", i.to_string()))
                    .await
                    .unwrap();
                let truth = EmbeddedStore::new(path.clone(), MemoryConfig::default())
                    .get(&id)
                    .await
                    .unwrap()
                    .turns;
                assert_eq!(truth.len(), before + 1);
                assert_eq!(reader.get(&id).await.unwrap().turns, truth, "turn {i}");
                assert_eq!(writer.get(&id).await.unwrap().turns, truth, "turn {i}");
            }
            // A thread that ended elsewhere is not served from a cache.
            let other = two.create(Turn::user("chat", "x")).await.unwrap();
            assert_eq!(one.get(&other).await.unwrap().turns.len(), 1);
            let connection = open(&path).unwrap();
            remove(&connection, &other, "evicted", 0).unwrap();
            assert!(matches!(
                one.get(&other).await,
                Err(MemoryError::Evicted { .. })
            ));
        });
    }

    /// Ended ids are remembered in the order they ended, the oldest
    /// forgotten first, whatever their ids.
    #[test]
    fn only_the_last_ended_ids_are_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let connection = open(&dir.path().join("t.db")).unwrap();
        let extra = 25;
        connection.execute_batch("BEGIN").unwrap();
        for i in 0..REMEMBERED_GONE_IDS + extra {
            connection
                .execute(
                    "INSERT OR REPLACE INTO gone (id, why, at_ms) VALUES (?1, 'expired', ?2)",
                    params![format!("id-{i}"), i],
                )
                .unwrap();
        }
        // Ending an id again makes it recent: it must outlive the cut.
        connection
            .execute(
                "INSERT OR REPLACE INTO gone (id, why, at_ms) VALUES ('id-0', 'evicted', ?1)",
                params![REMEMBERED_GONE_IDS + extra],
            )
            .unwrap();
        forget_the_oldest_gone_ids(&connection).unwrap();
        connection.execute_batch("COMMIT").unwrap();
        let count = |sql: &str| -> i64 { connection.query_row(sql, [], |row| row.get(0)).unwrap() };
        assert_eq!(count("SELECT COUNT(*) FROM gone"), REMEMBERED_GONE_IDS);
        assert_eq!(
            count("SELECT COUNT(*) FROM gone WHERE id = 'id-0' AND why = 'evicted'"),
            1
        );
        assert_eq!(count("SELECT COUNT(*) FROM gone WHERE id = 'id-1'"), 0);
        assert_eq!(count("SELECT MIN(at_ms) FROM gone"), extra + 1);
        assert_eq!(
            count(&format!(
                "SELECT COUNT(*) FROM gone WHERE id = 'id-{}'",
                REMEMBERED_GONE_IDS + extra - 1
            )),
            1
        );
    }

    /// The race the checkpoint thread loses under steady load, replayed in
    /// order: its checkpoint lands while the writer is inside a
    /// transaction, so no write ever begins with the WAL fully copied back.
    #[test]
    fn a_checkpoint_by_the_writer_lets_the_wal_start_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let writer = open(&path).unwrap();
        writer
            .execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .unwrap();
        let checkpointer = open(&path).unwrap();
        let wal = dir.path().join("t.db-wal");
        let run = |label: &str, writer_checkpoints: bool| -> u64 {
            for i in 0..200 {
                writer.execute_batch("BEGIN IMMEDIATE").unwrap();
                writer
                    .execute(
                        "INSERT INTO gone (id, why, at_ms) VALUES (?1, 'test', 0)",
                        params![format!("{label}-{i}-{}", "x".repeat(3000))],
                    )
                    .unwrap();
                checkpointer
                    .execute_batch("PRAGMA wal_checkpoint(PASSIVE);")
                    .unwrap();
                writer.execute_batch("COMMIT").unwrap();
                if writer_checkpoints {
                    restart_the_log(&writer);
                }
            }
            std::fs::metadata(&wal).unwrap().len()
        };
        let grown = run("thread only", false);
        assert!(grown > 200 * 4096, "the WAL stayed at {grown} bytes");
        writer
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let restarted = run("writer too", true);
        assert!(restarted < 16 * 4096, "the WAL grew to {restarted} bytes");
    }
}
