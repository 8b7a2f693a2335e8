//! Issue 9, conversation memory: the byte bound counts memory, not JSON text.

use std::time::Duration;

use serde_json::Value;
use zenmode::conversation::{ConversationStore, InMemoryStore, MemoryConfig, MemoryError, Turn};

/// Elements in a step's `files_checked`: empty strings, 3 bytes of JSON
/// each (`"",`) but a whole `Value` each in memory.
const ELEMENTS: usize = 200_000;

/// A codereview-like step whose data is mostly empty strings.
fn wide_turn() -> Turn {
    let data: Value = serde_json::from_str(&format!(
        "{{\"files_checked\": [{}\"\"]}}",
        "\"\",".repeat(ELEMENTS - 1)
    ))
    .unwrap();
    Turn::user("codereview", "step").with_data(data)
}

fn new_store(max_total_bytes: usize) -> InMemoryStore {
    InMemoryStore::new(MemoryConfig {
        timeout: Duration::from_secs(3600),
        max_turns: 50,
        max_threads: 1_000,
        max_total_bytes,
    })
}

#[tokio::test]
async fn a_stored_turn_is_charged_for_every_value_it_holds() {
    let node = size_of::<Value>();
    let store = new_store(usize::MAX / 2);
    let json_text = serde_json::to_string(&wide_turn().data).unwrap().len();
    store.create(wide_turn()).await.unwrap();
    let charged = store.total_bytes();
    assert!(
        charged >= ELEMENTS * node,
        "{charged} bytes charged for {ELEMENTS} values of {node} bytes"
    );
    assert!(charged > 4 * json_text, "far more than the JSON text");
}

#[tokio::test]
async fn wide_turns_evict_older_threads_and_the_bound_holds() {
    // Room for three such threads by their real size, but for about a
    // hundred by their JSON text.
    let limit = 3 * ELEMENTS * size_of::<Value>();
    let store = new_store(limit);
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(store.create(wide_turn()).await.unwrap());
        assert!(store.total_bytes() <= limit, "{}", store.total_bytes());
    }
    assert!(store.thread_count() < 6, "{} threads", store.thread_count());
    assert!(matches!(
        store.get(&ids[0]).await,
        Err(MemoryError::Evicted { .. })
    ));
    assert!(store.get(&ids[5]).await.is_ok());

    // A thread that would outgrow the whole bound by itself is refused.
    let small = new_store(ELEMENTS * size_of::<Value>() / 2);
    assert!(matches!(
        small.create(wide_turn()).await,
        Err(MemoryError::TooLarge { .. })
    ));
}
