//! Conversation memory (`zenmode::conversation`): the in-memory store and
//! history rebuilt within a budget.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use zenmode::conversation::{
    ConversationStore, InMemoryStore, ManualClock, MemoryConfig, MemoryError, Role, Thread, Turn,
    build_history,
};
use zenmode::files::estimate_tokens;

fn config() -> MemoryConfig {
    MemoryConfig {
        timeout: Duration::from_secs(3 * 3600),
        max_turns: 50,
        max_threads: 100,
        max_total_bytes: 10 * 1024 * 1024,
    }
}

fn store_with(config: MemoryConfig) -> (InMemoryStore, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    (InMemoryStore::with_clock(config, clock.clone()), clock)
}

#[tokio::test]
async fn create_get_append() {
    let (store, clock) = store_with(config());
    let id = store
        .create(Turn::user("chat", "What is a monad?"))
        .await
        .expect("create");
    let uuid = uuid::Uuid::parse_str(&id).expect("a UUID");
    assert_eq!(uuid.get_version_num(), 4);
    assert_eq!(uuid.hyphenated().to_string(), id);

    clock.advance(Duration::from_secs(60));
    let count = store
        .append(
            &id,
            Turn::assistant("chat", "A monoid in ...").with_model("m1"),
        )
        .await
        .expect("append");
    assert_eq!(count, 2);

    let thread = store.get(&id).await.expect("get");
    assert_eq!(thread.id, id);
    assert_eq!(thread.turns.len(), 2);
    assert_eq!(thread.turns[0].role, Role::User);
    assert_eq!(thread.turns[1].role, Role::Assistant);
    assert_eq!(thread.turns[1].model.as_deref(), Some("m1"));
    assert_eq!(
        thread.updated.duration_since(thread.created).ok(),
        Some(Duration::from_secs(60))
    );

    // The same UUID in another spelling finds the same thread.
    let upper = store.get(&id.to_uppercase()).await.expect("get upper");
    assert_eq!(upper.id, id);
}

#[tokio::test]
async fn threads_continue_across_modes() {
    let (store, _clock) = store_with(config());
    let step = serde_json::json!({
        "step_number": 1,
        "findings": "panic in parser",
        "confidence": "medium"
    });
    let id = store
        .create(
            Turn::user("debug", "Investigating a crash")
                .with_files(vec!["/src/parser.rs".into()])
                .with_data(step.clone()),
        )
        .await
        .expect("create");
    store
        .append(&id, Turn::assistant("debug", "pause_for_debug"))
        .await
        .expect("debug reply");
    store
        .append(&id, Turn::user("chat", "Explain the fix"))
        .await
        .expect("chat turn");

    let thread = store.get(&id).await.expect("get");
    let modes: Vec<&str> = thread.turns.iter().map(|t| t.mode.as_str()).collect();
    assert_eq!(modes, ["debug", "debug", "chat"]);
    assert_eq!(thread.turns[0].data.as_ref(), Some(&step));
    assert_eq!(thread.turns[0].files, ["/src/parser.rs"]);
}

#[tokio::test]
async fn idle_threads_expire() {
    let (store, clock) = store_with(MemoryConfig {
        timeout: Duration::from_secs(3600),
        ..config()
    });
    let id = store
        .create(Turn::user("chat", "one"))
        .await
        .expect("create");
    let kept = store
        .create(Turn::user("chat", "two"))
        .await
        .expect("create");

    // Activity resets the idle time.
    clock.advance(Duration::from_secs(3000));
    store
        .append(&kept, Turn::assistant("chat", "still here"))
        .await
        .expect("append");
    clock.advance(Duration::from_secs(600));

    let error = store.get(&id).await.unwrap_err();
    assert_eq!(error, MemoryError::Expired { id: id.clone() });
    assert!(
        error.to_string().contains("omit continuation_id"),
        "{error}"
    );
    // Still reported as expired afterwards, for get and append alike.
    assert!(matches!(
        store.get(&id).await,
        Err(MemoryError::Expired { .. })
    ));
    assert!(matches!(
        store.append(&id, Turn::user("chat", "again")).await,
        Err(MemoryError::Expired { .. })
    ));
    assert_eq!(store.get(&kept).await.expect("kept").turns.len(), 2);
}

#[tokio::test]
async fn expired_threads_are_swept_when_memory_grows() {
    let (store, clock) = store_with(MemoryConfig {
        timeout: Duration::from_secs(60),
        ..config()
    });
    let old = store
        .create(Turn::user("chat", "old"))
        .await
        .expect("create");
    clock.advance(Duration::from_secs(61));
    store
        .create(Turn::user("chat", "new"))
        .await
        .expect("create");
    assert_eq!(store.thread_count(), 1);
    assert!(matches!(
        store.get(&old).await,
        Err(MemoryError::Expired { .. })
    ));
}

#[tokio::test]
async fn threads_hold_at_most_max_turns() {
    let (store, _clock) = store_with(MemoryConfig {
        max_turns: 3,
        ..config()
    });
    let id = store.create(Turn::user("chat", "1")).await.expect("create");
    assert_eq!(store.append(&id, Turn::assistant("chat", "2")).await, Ok(2));
    assert_eq!(store.append(&id, Turn::user("chat", "3")).await, Ok(3));
    let error = store
        .append(&id, Turn::assistant("chat", "4"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        MemoryError::Full {
            id: id.clone(),
            max_turns: 3
        }
    );
    assert!(
        error.to_string().contains("omit continuation_id"),
        "{error}"
    );
    assert_eq!(store.get(&id).await.expect("get").turns.len(), 3);
}

#[tokio::test]
async fn least_recently_updated_threads_are_evicted_past_max_threads() {
    let (store, clock) = store_with(MemoryConfig {
        max_threads: 2,
        ..config()
    });
    let a = store.create(Turn::user("chat", "a")).await.expect("a");
    clock.advance(Duration::from_secs(1));
    let b = store.create(Turn::user("chat", "b")).await.expect("b");
    clock.advance(Duration::from_secs(1));
    // Touching `a` makes `b` the least recently updated.
    store
        .append(&a, Turn::assistant("chat", "a2"))
        .await
        .expect("a2");
    let c = store.create(Turn::user("chat", "c")).await.expect("c");

    assert_eq!(store.thread_count(), 2);
    let error = store.get(&b).await.unwrap_err();
    assert_eq!(error, MemoryError::Evicted { id: b });
    assert!(
        error.to_string().contains("omit continuation_id"),
        "{error}"
    );
    assert!(store.get(&a).await.is_ok());
    assert!(store.get(&c).await.is_ok());
}

#[tokio::test]
async fn total_bytes_stay_bounded() {
    let turn = |text: &str| Turn::user("chat", text.repeat(1_000));
    // Measure one single-turn thread, then allow two and a half.
    let (probe, _clock) = store_with(config());
    probe.create(turn("p")).await.expect("probe");
    let one = probe.total_bytes();
    let bound = one * 5 / 2;

    let (store, _clock) = store_with(MemoryConfig {
        max_total_bytes: bound,
        ..config()
    });
    let a = store.create(turn("a")).await.expect("a");
    let b = store.create(turn("b")).await.expect("b");
    assert_eq!(store.total_bytes(), 2 * one);
    // Growing `b` pushes out `a`, never `b` itself.
    assert_eq!(store.append(&b, turn("c")).await, Ok(2));
    assert!(
        store.total_bytes() <= bound,
        "{} > {bound}",
        store.total_bytes()
    );
    assert!(matches!(
        store.get(&a).await,
        Err(MemoryError::Evicted { .. })
    ));
    assert_eq!(store.get(&b).await.expect("b").turns.len(), 2);

    // A thread that alone would outgrow the bound is refused, not stored.
    let error = store.append(&b, turn("d")).await.unwrap_err();
    assert!(
        matches!(error, MemoryError::TooLarge { max_bytes, .. } if max_bytes == bound),
        "{error:?}"
    );
    assert_eq!(store.get(&b).await.expect("b").turns.len(), 2);
    let huge = Turn::user("chat", "x".repeat(bound));
    assert!(matches!(
        store.create(huge).await,
        Err(MemoryError::TooLarge { .. })
    ));
    assert!(store.total_bytes() <= bound);
}

#[tokio::test]
async fn invalid_and_unknown_ids() {
    let (store, _clock) = store_with(config());
    for bad in ["", "not-a-uuid", "12345", "../../etc/passwd"] {
        let error = store.get(bad).await.unwrap_err();
        assert!(
            matches!(error, MemoryError::InvalidId { .. }),
            "{bad}: {error:?}"
        );
        assert!(
            error.to_string().contains("omit continuation_id"),
            "{error}"
        );
        assert!(matches!(
            store.append(bad, Turn::user("chat", "x")).await,
            Err(MemoryError::InvalidId { .. })
        ));
    }
    let unknown = uuid::Uuid::new_v4().to_string();
    let error = store.get(&unknown).await.unwrap_err();
    assert_eq!(error, MemoryError::Unknown { id: unknown });
    assert!(
        error.to_string().contains("omit continuation_id"),
        "{error}"
    );
}

#[tokio::test]
async fn concurrent_appends_are_all_kept() {
    let store = Arc::new(InMemoryStore::new(MemoryConfig {
        max_turns: 1_000,
        ..config()
    }));
    let id = store
        .create(Turn::user("chat", "start"))
        .await
        .expect("create");
    let mut tasks = Vec::new();
    for n in 0..8 {
        let store = store.clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            for m in 0..25 {
                store
                    .append(&id, Turn::user("chat", format!("{n}-{m}")))
                    .await
                    .expect("append");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    assert_eq!(store.get(&id).await.expect("get").turns.len(), 201);
}

fn thread_of(turns: Vec<Turn>) -> Thread {
    Thread {
        id: "6f1c2e8a-3b1d-4c55-9a51-0f6b7e9d2a10".to_owned(),
        created: SystemTime::UNIX_EPOCH,
        updated: SystemTime::UNIX_EPOCH,
        turns,
    }
}

#[test]
fn history_keeps_the_newest_turns_in_chronological_order() {
    let turns: Vec<Turn> = (1..=10)
        .map(|n| {
            let turn = if n % 2 == 1 {
                Turn::user("debug", format!("question {n} {}", "x".repeat(200)))
            } else {
                Turn::assistant("chat", format!("answer {n} {}", "y".repeat(200)))
            };
            turn.with_files(vec![format!("/src/f{}.rs", n % 3), "/src/common.rs".into()])
        })
        .collect();
    let thread = thread_of(turns);

    let full = build_history(&thread, 100_000);
    assert_eq!(full.turns_included, 10);
    assert_eq!(full.turns_total, 10);

    // Room for about three turns.
    let budget = full.tokens * 3 / 10 + 40;
    let history = build_history(&thread, budget);
    assert!(history.tokens <= budget, "{} > {budget}", history.tokens);
    assert!(estimate_tokens(&history.text) <= history.tokens);
    assert_eq!(history.turns_total, 10);
    let n = history.turns_included;
    assert!((2..10).contains(&n), "{n} turns");

    // The newest turns, oldest of them first; the older ones left out.
    let marker = |k: usize| {
        let kind = if k % 2 == 1 { "question" } else { "answer" };
        format!("{kind} {k} ")
    };
    let positions: Vec<usize> = ((11 - n)..=10)
        .map(|k| {
            history
                .text
                .find(&marker(k))
                .unwrap_or_else(|| panic!("turn {k} missing"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    for k in 1..=(10 - n) {
        assert!(!history.text.contains(&marker(k)), "turn {k} included");
    }
    assert!(
        history
            .text
            .contains(&format!("Turns 1-{} were left out", 10 - n))
    );

    // Files: the newest turn's first, each once.
    assert_eq!(history.files[..2], ["/src/f1.rs", "/src/common.rs"]); // turn 10: 10 % 3 == 1
    let unique: std::collections::HashSet<&String> = history.files.iter().collect();
    assert_eq!(unique.len(), history.files.len());
}

#[test]
fn history_files_come_only_from_included_turns() {
    let thread = thread_of(vec![
        Turn::user("chat", "x".repeat(4_000)).with_files(vec!["/old.rs".into()]),
        Turn::user("chat", "short").with_files(vec!["/new.rs".into()]),
    ]);
    let history = build_history(&thread, 200);
    assert_eq!(history.turns_included, 1);
    assert_eq!(history.files, ["/new.rs"]);
}
