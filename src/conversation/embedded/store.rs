//! The [`EmbeddedStore`]: threads in one SQLite file, opened on first use,
//! written through one connection's thread and read through another's;
//! creating a thread, reading one and appending a turn, each checking the
//! limits in the same transaction as its write. Threads this process read
//! or wrote last are kept decoded ([`TurnCache`]).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, PoisonError},
};

use rusqlite::{Connection, OptionalExtension, params};

use super::{
    health::Health,
    rows::{
        Limits, enforce_bounds, exec, gone_error, millis, read_turns, remove, time_of, unavailable,
    },
    worker::{Job, Slot, spawn_worker},
};
use crate::conversation::{
    config::MemoryConfig,
    error::MemoryError,
    memory::{Clock, SystemClock},
    store::ConversationStore,
    thread::{Thread, Turn, encode_turn, normalize_id},
    turn_cache::TurnCache,
};

/// Fixed cost counted per thread, as in memory.
pub(super) const THREAD_OVERHEAD: usize = 128;

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

    async fn delete(&self, id: &str) -> Result<(), MemoryError> {
        let id = normalize_id(id)?;
        let key = id.clone();
        self.writing(move |connection, limits| {
            let transaction = connection.savepoint().map_err(unavailable)?;
            remove(&transaction, &key, "expired", limits.now)
                .and_then(|()| transaction.commit())
                .map_err(unavailable)
        })
        .await?;
        self.cache.forget(&id);
        Ok(())
    }
}
