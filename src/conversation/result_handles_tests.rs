//! Tests of result handles: owners, expiry, pages, references.

use super::*;
use crate::conversation::{InMemoryStore, ManualClock, MemoryConfig};

fn handles(settings: HandleSettings) -> (ResultHandles, Arc<ManualClock>, Arc<InMemoryStore>) {
    let clock = Arc::new(ManualClock::default());
    let store = Arc::new(InMemoryStore::with_clock(
        MemoryConfig::default(),
        clock.clone(),
    ));
    (
        ResultHandles::with_clock(store.clone(), settings, clock.clone()),
        clock,
        store,
    )
}

#[tokio::test]
async fn a_handle_reads_back_only_for_its_owner_and_until_it_expires() {
    let (handles, clock, _) = handles(HandleSettings::default());
    let stored = handles
        .store("session:a", StoredKind::Json, r#"{"items":[1,2,3]}"#.into())
        .await
        .unwrap();
    assert_eq!(
        handles.value("session:a", &stored.id, None).await,
        Ok(json!({"items": [1, 2, 3]}))
    );
    assert_eq!(
        handles
            .value("session:a", &stored.id, Some("/items/1"))
            .await,
        Ok(json!(2))
    );
    assert!(matches!(
        handles.value("session:a", &stored.id, Some("/nope")).await,
        Err(HandleError::NoSuchPointer { .. })
    ));
    let other = handles.value("session:b", &stored.id, None).await;
    let unknown = handles
        .value("session:a", "67e55044-10b1-426f-9247-bb680e5fe0c8", None)
        .await;
    // Another session's handle reads exactly like one that never was.
    assert_eq!(
        other.unwrap_err().code(),
        unknown.as_ref().unwrap_err().code()
    );
    clock.advance(Duration::from_secs(HandleSettings::DEFAULT_TTL_SECS));
    assert!(matches!(
        handles.value("session:a", &stored.id, None).await,
        Err(HandleError::Expired { .. })
    ));
}

#[tokio::test]
async fn pages_cover_the_text_on_character_bounds() {
    let (handles, _, _) = handles(HandleSettings {
        page_bytes: 1024,
        ..HandleSettings::default()
    });
    let text: String = "é".repeat(1500); // 3000 bytes, two-byte characters
    let stored = handles
        .store("p", StoredKind::Text, text.clone())
        .await
        .unwrap();
    assert_eq!(stored.pages, 3);
    let mut joined = String::new();
    for page in 1..=3 {
        joined.push_str(&handles.page("p", &stored.id, page).await.unwrap().text);
    }
    assert_eq!(joined, text);
    assert!(matches!(
        handles.page("p", &stored.id, 4).await,
        Err(HandleError::NoSuchPage { pages: 3, .. })
    ));
    assert!(handles.page("p", &stored.id, 0).await.is_err());
    // Text that is JSON is read through a pointer; whole, it stays text.
    let json_text = handles
        .store("p", StoredKind::Text, r#"{"a":{"b":7}}"#.into())
        .await
        .unwrap();
    assert_eq!(
        handles.value("p", &json_text.id, Some("/a/b")).await,
        Ok(json!(7))
    );
    assert_eq!(
        handles.value("p", &json_text.id, None).await,
        Ok(json!(r#"{"a":{"b":7}}"#))
    );
}

#[tokio::test]
async fn a_handle_is_not_a_conversation() {
    let (handles, _, store) = handles(HandleSettings::default());
    let stored = handles
        .store("p", StoredKind::Text, "big".into())
        .await
        .unwrap();
    let threads = ThreadsWithoutResults(store.clone());
    assert!(matches!(
        threads.get(&stored.id).await,
        Err(MemoryError::Unknown { .. })
    ));
    assert!(
        threads
            .append(&stored.id, Turn::user("chat", "more"))
            .await
            .is_err()
    );
    // The handle is unchanged by the refused append.
    assert_eq!(store.get(&stored.id).await.unwrap().turns.len(), 1);
    assert_eq!(handles.value("p", &stored.id, None).await, Ok(json!("big")));
}

#[tokio::test]
async fn references_are_replaced_all_or_nothing() {
    let (handles, _, _) = handles(HandleSettings::default());
    let stored = handles
        .store(
            "p",
            StoredKind::Json,
            r#"{"rows":[{"n":1},{"n":2}]}"#.into(),
        )
        .await
        .unwrap();
    let mut request = json!({
        "whole": {"$result": stored.id},
        "list": [{"$result": stored.id, "pointer": "/rows/1/n"}],
        "a/b": {"$result": stored.id, "pointer": "/rows/0"},
        "kept": {"result": 1},
    });
    assert_eq!(
        handles.resolve_references(Some("p"), &mut request).await,
        Ok(3)
    );
    assert_eq!(
        request,
        json!({
            "whole": {"rows": [{"n": 1}, {"n": 2}]},
            "list": [2],
            "a/b": {"n": 1},
            "kept": {"result": 1},
        })
    );
    // One bad reference: an error, and the request is left as it was.
    let original = json!({"x": {"$result": stored.id}, "y": {"$result": "nope"}});
    let mut request = original.clone();
    let error = handles
        .resolve_references(Some("p"), &mut request)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "not_found");
    assert_eq!(request, original);
    for bad in [
        json!({"$result": 5}),
        json!({"$result": "id", "pointer": 3}),
        json!({"$result": "id", "extra": true}),
    ] {
        let mut request = json!({"field": bad});
        let error = handles
            .resolve_references(Some("p"), &mut request)
            .await
            .unwrap_err();
        assert_eq!(error.code(), "invalid_arguments", "{error}");
    }
    let mut request = json!({"x": {"$result": stored.id}});
    assert_eq!(
        handles
            .resolve_references(None, &mut request)
            .await
            .unwrap_err()
            .code(),
        "handles_unavailable"
    );
}

#[tokio::test]
async fn a_process_keeps_a_bounded_budget_of_handles_until_they_expire() {
    let (handles, clock, _) = handles(HandleSettings::default());
    let chunk = "x".repeat(HANDLE_BUDGET_BYTES / 4);
    for _ in 0..4 {
        handles
            .store("p", StoredKind::Text, chunk.clone())
            .await
            .unwrap();
    }
    assert!(matches!(
        handles
            .store("p", StoredKind::Text, "one more".into())
            .await,
        Err(HandleError::Budget { .. })
    ));
    clock.advance(Duration::from_secs(HandleSettings::DEFAULT_TTL_SECS));
    assert!(handles.store("p", StoredKind::Text, chunk).await.is_ok());
}

#[tokio::test]
async fn off_means_nothing_is_stored_or_read() {
    let (handles, _, store) = handles(HandleSettings {
        enabled: false,
        ..HandleSettings::default()
    });
    assert_eq!(
        handles.store("p", StoredKind::Text, "x".into()).await,
        Err(HandleError::Disabled)
    );
    assert_eq!(store.thread_count(), 0);
}

#[tokio::test]
async fn references_expanding_past_the_bound_are_refused_and_change_nothing() {
    let (handles, _, _) = handles(HandleSettings::default());
    // One MiB of JSON; 32 references to it would carry 32 MiB.
    let big = serde_json::to_string(&json!({"rows": vec!["x".repeat(1000); 1 << 10]})).unwrap();
    let stored = handles.store("p", StoredKind::Json, big).await.unwrap();
    let references: Vec<Value> = (0..32).map(|_| json!({"$result": stored.id})).collect();
    let original = json!({"many": references});
    let mut request = original.clone();
    let refused = handles.resolve_references(Some("p"), &mut request).await;
    let Err(error) = refused else {
        panic!("32 MiB of references were expanded");
    };
    assert!(matches!(error, HandleError::TooLarge { .. }), "{error}");
    assert!(
        error.to_string().contains(&MAX_EXPANDED_BYTES.to_string()),
        "{error}"
    );
    assert_eq!(request, original);
    // Within the bound the same handle expands as often as it is named.
    let mut request = json!([{"$result": stored.id}, {"$result": stored.id, "pointer": "/rows/3"}]);
    assert_eq!(
        handles.resolve_references(Some("p"), &mut request).await,
        Ok(2)
    );
    assert_eq!(request[1], json!("x".repeat(1000)));
}
