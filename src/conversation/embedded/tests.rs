//! The unit tests of the embedded store: its SQL, its limits and errors,
//! files removed or replaced under it, several stores on one file, and the
//! WAL starting over.

use std::{path::Path, sync::Arc, time::Duration};

use rusqlite::{Connection, params};

use super::{
    EmbeddedStore,
    connection::restart_the_log,
    file_checks::store_files,
    rows::{REMEMBERED_GONE_IDS, TURNS_OF_A_THREAD, forget_the_oldest_gone_ids, millis, remove},
    schema::open,
    store::THREAD_OVERHEAD,
};
use crate::conversation::{
    Clock, ConversationStore, ManualClock, MemoryConfig, MemoryError, Turn, thread::encode_turn,
};

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
