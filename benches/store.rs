//! Conversation stores side by side: a 50-turn thread appended turn by turn
//! and loaded whole, for each backend (memory, the embedded SQLite file,
//! and Redis when `redis-server` is installed; the bench starts its own on
//! a free port).
//!
//! `cargo bench --bench store`.

use std::{
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

use criterion::{Criterion, criterion_group, criterion_main};
use zenmode::conversation::{
    ConversationStore, EmbeddedStore, InMemoryStore, MemoryConfig, RedisStore, Turn,
};

const TURNS: usize = 50;

fn turn(i: usize) -> Turn {
    // About the size of a workflow step: a paragraph and a few fields.
    Turn::user("debug", format!("Step {i}: {}", "checked the handler and its callers; ".repeat(8)))
        .with_files(vec!["/src/orders/handler.rs".to_owned()])
        .with_data(serde_json::json!({"findings": "the coupon lookup can return nothing", "confidence": "medium"}))
}

/// Creates a thread and appends until it holds [`TURNS`] turns.
async fn fill(store: &dyn ConversationStore) -> String {
    let id = store.create(turn(0)).await.unwrap();
    for i in 1..TURNS {
        store.append(&id, turn(i)).await.unwrap();
    }
    id
}

struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn start_redis() -> Option<Redis> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    for _ in 0..250 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(Redis(child, port));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn stores(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = MemoryConfig {
        max_turns: TURNS,
        ..MemoryConfig::default()
    };
    let redis = start_redis();
    let mut backends: Vec<(&str, Arc<dyn ConversationStore>)> = vec![
        ("memory", Arc::new(InMemoryStore::new(config.clone()))),
        (
            "embedded",
            Arc::new(EmbeddedStore::new(
                dir.path().join("threads.db"),
                config.clone(),
            )),
        ),
    ];
    match &redis {
        Some(Redis(_, port)) => {
            let url = format!("redis://127.0.0.1:{port}/");
            let store = runtime
                .block_on(RedisStore::connect(&url, config.clone()))
                .expect("connect to the bench's redis-server");
            backends.push(("redis", Arc::new(store)));
        }
        None => eprintln!("store bench: redis-server not found; Redis left out"),
    }

    let mut group = c.benchmark_group("store_append_50_turns");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    for (name, store) in &backends {
        group.bench_function(*name, |b| {
            b.iter(|| runtime.block_on(fill(store.as_ref())));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("store_load_50_turns");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3));
    for (name, store) in &backends {
        let id = runtime.block_on(fill(store.as_ref()));
        group.bench_function(*name, |b| {
            b.iter(|| {
                let thread = runtime.block_on(store.get(&id)).unwrap();
                assert_eq!(thread.turns.len(), TURNS);
            });
        });
    }
    group.finish();
    drop(redis);
}

criterion_group!(benches, stores);
criterion_main!(benches);
