//! Conversation stores across processes: the embedded store shared by
//! `zenmode exec` runs, and Redis shared by two HTTP instances (a thread
//! started on one and continued on the other, an instance killed
//! mid-thread, Redis down and back, concurrent appends).
//!
//! The Redis tests start a real `redis-server` (Debian package) on a free
//! loopback port. Without one they are skipped, unless
//! `ZEN_REQUIRE_REDIS=1` (as `.ci/run` sets), which makes them fail.

mod common;

use std::{
    net::TcpListener,
    path::Path,
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use common::{REPLY_TIMEOUT, TcpServer, redis::Redis, stateless_meta, zenmode};
use serde_json::{Value, json};
use zenmode::conversation::{ConversationStore, MemoryConfig, MemoryError, RedisStore, Turn};

fn planner_step(number: u64, total: u64, continuation: Option<&str>) -> Value {
    let mut request = json!({"step": format!("Step {number} of the plan"), "step_number": number,
        "total_steps": total, "next_step_required": number < total});
    if let Some(id) = continuation {
        request["continuation_id"] = json!(id);
    }
    request
}

fn exec_planner(state: &Path, request: &Value) -> Value {
    let mut args = vec!["exec", "planner"];
    let continuation = request["continuation_id"].as_str().map(str::to_owned);
    let mut body = request.clone();
    body.as_object_mut().unwrap().remove("continuation_id");
    let body = body.to_string();
    args.extend(["--request", body.as_str()]);
    if let Some(id) = &continuation {
        args.extend(["--continuation-id", id.as_str()]);
    }
    let output = zenmode(&args)
        .env_remove("ZEN_STORE")
        .env("ZEN_STATE_DIR", state)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(&text).unwrap_or_else(|_| {
        panic!(
            "exec printed no JSON: {text} {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn exec_runs_continue_a_thread_through_the_default_embedded_store() {
    let state = tempfile::tempdir().unwrap();
    let first = exec_planner(state.path(), &planner_step(1, 3, None));
    let id = first["continuation_id"].as_str().unwrap().to_owned();
    let second = exec_planner(state.path(), &planner_step(2, 3, Some(&id)));
    assert_eq!(second["steps_in_plan"], 2, "{second}");
    let third = exec_planner(state.path(), &planner_step(3, 3, Some(&id)));
    assert_eq!(third["status"], "planning_complete", "{third}");
    assert_eq!(third["plan"]["steps"].as_array().unwrap().len(), 3);
    assert!(state.path().join("threads.db").exists());

    // Another state directory does not know the thread.
    let elsewhere = tempfile::tempdir().unwrap();
    let unknown = exec_planner(elsewhere.path(), &planner_step(2, 3, Some(&id)));
    assert!(
        unknown.to_string().contains("unknown"),
        "expected an unknown-thread error: {unknown}"
    );
}

#[test]
fn a_bad_store_url_stops_start_up_with_a_clear_error() {
    let output = zenmode(&["serve", "--store", "postgres://db/x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown conversation store"), "{stderr}");
}

fn http_instance(store: &str) -> TcpServer {
    TcpServer::spawn(zenmode(&[
        "serve",
        "--transport",
        "http",
        "--listen",
        "127.0.0.1:0",
        "--store",
        store,
    ]))
}

/// One stateless `tools/call` of `zen_execute`; the tool result.
async fn execute(
    client: &reqwest::Client,
    server: &TcpServer,
    mode: &str,
    request: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "zen_execute", "arguments": {"mode": mode, "request": request},
        "_meta": stateless_meta()}});
    let reply: Value =
        common::http::stateless_post(client, server, "tools/call", Some("zen_execute"))
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    reply["result"].clone()
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(REPLY_TIMEOUT)
        .build()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn two_http_instances_share_threads_through_redis() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let one = http_instance(&redis.url());
    let two = http_instance(&redis.url());
    let client = client();
    runtime().block_on(async {
        let started = execute(&client, &one, "planner", planner_step(1, 4, None)).await;
        assert_eq!(started["isError"], false, "{started}");
        let id = started["structuredContent"]["continuation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let second = execute(&client, &two, "planner", planner_step(2, 4, Some(&id))).await;
        assert_eq!(second["structuredContent"]["steps_in_plan"], 2, "{second}");

        // The instance that started the thread goes away; the other goes on.
        drop(one);
        let third = execute(&client, &two, "planner", planner_step(3, 4, Some(&id))).await;
        assert_eq!(third["structuredContent"]["steps_in_plan"], 3, "{third}");

        // Redis goes down: the call fails plainly and the instance stays up.
        redis.stop();
        let down = execute(&client, &two, "planner", planner_step(4, 4, Some(&id))).await;
        assert_eq!(down["isError"], true, "{down}");
        assert!(down.to_string().contains("store is unavailable"), "{down}");

        // Back (empty: it kept nothing on disk): new threads work again
        // without restarting zenmode.
        let port = redis.port;
        let _back = Redis::start_on(port).expect("redis-server starts again");
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let fresh = execute(&client, &two, "planner", planner_step(1, 2, None)).await;
            if fresh["isError"] == false {
                break;
            }
            assert!(Instant::now() < deadline, "never recovered: {fresh}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

#[test]
fn redis_appends_from_two_stores_are_atomic_and_capped() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let config = MemoryConfig {
        max_turns: 60,
        ..MemoryConfig::default()
    };
    runtime().block_on(async {
        let one = Arc::new(
            RedisStore::connect(&redis.url(), config.clone())
                .await
                .unwrap(),
        );
        let two = Arc::new(RedisStore::connect(&redis.url(), config).await.unwrap());
        let id = one.create(Turn::user("chat", "start")).await.unwrap();
        let mut tasks = Vec::new();
        for (n, store) in [one.clone(), two.clone()].into_iter().enumerate() {
            let id = id.clone();
            tasks.push(tokio::spawn(async move {
                let mut added = 0;
                for i in 0..40 {
                    match store
                        .append(&id, Turn::user("chat", format!("{n}-{i}")))
                        .await
                    {
                        Ok(_) => added += 1,
                        Err(MemoryError::Full { max_turns: 60, .. }) => {}
                        Err(other) => panic!("{other}"),
                    }
                }
                added
            }));
        }
        let mut added = 0;
        for task in tasks {
            added += task.await.unwrap();
        }
        // 80 attempts against a cap of 60 (one taken by the first turn).
        assert_eq!(added, 59);
        assert_eq!(two.get(&id).await.unwrap().turns.len(), 60);

        let unknown = uuid::Uuid::new_v4().to_string();
        assert!(matches!(
            one.get(&unknown).await,
            Err(MemoryError::Unknown { .. })
        ));
    });
}

#[test]
fn redis_threads_expire_and_say_so() {
    let Some(redis) = Redis::start() else {
        return;
    };
    // Long enough that a loaded machine still reads thread a before it
    // expires (300 ms once let it expire first and read as Expired).
    let config = MemoryConfig {
        timeout: Duration::from_millis(1500),
        max_threads: 2,
        ..MemoryConfig::default()
    };
    runtime().block_on(async {
        let store = RedisStore::connect(&redis.url(), config).await.unwrap();
        let a = store.create(Turn::user("chat", "a")).await.unwrap();
        let b = store.create(Turn::user("chat", "b")).await.unwrap();
        let _c = store.create(Turn::user("chat", "c")).await.unwrap();
        // Over the cap of two: the oldest was evicted.
        assert!(matches!(
            store.get(&a).await,
            Err(MemoryError::Evicted { .. })
        ));
        assert!(store.get(&b).await.is_ok());
        // Redis drops it after the idle timeout; the id then reads as expired.
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            match store.get(&b).await {
                Err(MemoryError::Expired { .. }) => break,
                Ok(_) => {}
                Err(other) => panic!("{other}"),
            }
            assert!(Instant::now() < deadline, "never expired");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

#[test]
fn an_unreachable_redis_stops_start_up() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = zenmode(&[
        "serve",
        "--store",
        &format!("redis://:hunter2@127.0.0.1:{port}/"),
    ])
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot reach Redis"), "{stderr}");
    assert!(
        !stderr.contains("hunter2"),
        "the password was printed: {stderr}"
    );
}

/// Threads created within one millisecond still leave oldest first (the
/// index once ordered such ties by their random ids, so half the time the
/// newer one went). Two creates sent together on one connection run back
/// to back in Redis, in the order sent, almost always in one millisecond.
#[test]
fn redis_evicts_in_write_order_within_a_millisecond() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let config = MemoryConfig {
        max_threads: 2,
        ..MemoryConfig::default()
    };
    runtime().block_on(async {
        let store = RedisStore::connect(&redis.url(), config).await.unwrap();
        // Loads the scripts, so the pairs below are not resent.
        store.create(Turn::user("chat", "warm-up")).await.unwrap();
        for round in 0..20 {
            let (older, newer) = tokio::join!(
                store.create(Turn::user("chat", "older")),
                store.create(Turn::user("chat", "newer"))
            );
            let (older, newer) = (older.unwrap(), newer.unwrap());
            store.create(Turn::user("chat", "third")).await.unwrap();
            let got = store.get(&older).await;
            assert!(
                matches!(got, Err(MemoryError::Evicted { .. })),
                "round {round}: the older thread {got:?}"
            );
            assert!(
                store.get(&newer).await.is_ok(),
                "round {round}: the newer thread went"
            );
        }
    });
}

/// One stateless `tools/call` of `zen_execute`, or why no reply came: the
/// server's exit status when it died (a crash must fail the test with its
/// signal, not with a connection error).
async fn try_execute(
    client: &reqwest::Client,
    server: &mut TcpServer,
    mode: &str,
    request: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "zen_execute", "arguments": {"mode": mode, "request": request},
        "_meta": stateless_meta()}});
    let sent = common::http::stateless_post(client, server, "tools/call", Some("zen_execute"))
        .body(body.to_string())
        .send()
        .await;
    let reply = match sent {
        Ok(response) => response.json::<Value>().await.map_err(|e| e.to_string()),
        Err(error) => Err(error.to_string()),
    };
    match reply {
        Ok(reply) => reply["result"].clone(),
        Err(error) => {
            std::thread::sleep(Duration::from_millis(200));
            panic!(
                "no reply ({error}); the server's status: {:?}",
                server.child.try_wait()
            )
        }
    }
}

/// `chattr +i` on files for the length of a test; `chattr -i` on drop, so
/// the temporary directory can be removed.
struct Immutable(Vec<std::path::PathBuf>);

impl Immutable {
    /// `Err` with the reason when `chattr` cannot be used here (not root,
    /// a file system without the flag).
    fn set(paths: &[std::path::PathBuf]) -> Result<Self, String> {
        let guard = Immutable(paths.to_vec());
        let output = Command::new("chattr")
            .arg("+i")
            .args(paths)
            .output()
            .map_err(|error| format!("chattr cannot run: {error}"))?;
        if !output.status.success() {
            return Err(format!(
                "chattr +i failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").args(&self.0).output();
    }
}

fn sqlite_instance(path: &Path) -> TcpServer {
    http_instance(&format!("sqlite:{}", path.display()))
}

/// Files that cannot be written any more (here made immutable) once faulted
/// the SQLite wal-index mapped from `-shm`: SIGBUS ended the server and
/// every session with it. The call must fail with `store_unavailable`, the
/// failure be logged once, and the server go on (and work again once the
/// files can be written).
#[test]
fn unwritable_store_files_fail_the_call_not_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut server = sqlite_instance(&db);
    let client = client();
    runtime().block_on(async {
        let started = try_execute(&client, &mut server, "planner", planner_step(1, 4, None)).await;
        assert_eq!(started["isError"], false, "{started}");
        let id = started["structuredContent"]["continuation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let files: Vec<_> = ["t.db", "t.db-wal", "t.db-shm"]
            .iter()
            .map(|name| dir.path().join(name))
            .collect();
        let immutable = match Immutable::set(&files) {
            Ok(guard) => guard,
            Err(reason) => {
                eprintln!("skipped: {reason}");
                return;
            }
        };
        // A new thread (a write) and a continued one (a read, then a write),
        // twice each: every call fails plainly.
        for _ in 0..2 {
            for request in [planner_step(1, 4, None), planner_step(2, 4, Some(&id))] {
                let failed = try_execute(&client, &mut server, "planner", request).await;
                assert_eq!(failed["isError"], true, "{failed}");
                assert_eq!(
                    failed["structuredContent"]["error"], "store_unavailable",
                    "{failed}"
                );
                assert!(failed.to_string().contains("cannot be written"), "{failed}");
            }
        }
        assert!(server.child.try_wait().unwrap().is_none());
        drop(immutable);
        let second = try_execute(
            &client,
            &mut server,
            "planner",
            planner_step(2, 4, Some(&id)),
        )
        .await;
        assert_eq!(second["isError"], false, "{second}");
        assert_eq!(second["structuredContent"]["steps_in_plan"], 2, "{second}");
    });
    let stderr = server.stop_and_read_stderr();
    let logged = stderr.matches("cannot be written").count();
    assert_eq!(logged, 1, "the failure is logged once: {stderr}");
}

/// The store's files removed under a running server: a thread started
/// afterwards went to the deleted file, acknowledged but lost (neither the
/// same server nor another process could continue it). It must land in a
/// new file at the path, where every process looks.
#[test]
fn a_thread_started_after_the_store_file_was_deleted_is_not_lost() {
    let state = tempfile::tempdir().unwrap();
    let db = state.path().join("threads.db");
    let mut server = sqlite_instance(&db);
    let client = client();
    runtime().block_on(async {
        let before = try_execute(&client, &mut server, "planner", planner_step(1, 4, None)).await;
        assert_eq!(before["isError"], false, "{before}");
        let old = before["structuredContent"]["continuation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let second = try_execute(
            &client,
            &mut server,
            "planner",
            planner_step(2, 4, Some(&old)),
        )
        .await;
        assert_eq!(second["isError"], false, "{second}");
        for name in ["threads.db", "threads.db-wal", "threads.db-shm"] {
            std::fs::remove_file(state.path().join(name)).unwrap();
        }
        let started = try_execute(&client, &mut server, "planner", planner_step(1, 4, None)).await;
        assert_eq!(started["isError"], false, "{started}");
        let id = started["structuredContent"]["continuation_id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(db.exists(), "the new thread is in no file");
        let same = try_execute(
            &client,
            &mut server,
            "planner",
            planner_step(2, 4, Some(&id)),
        )
        .await;
        assert_eq!(same["isError"], false, "the same server: {same}");
        assert_eq!(same["structuredContent"]["steps_in_plan"], 2, "{same}");
        // Another process, on the same file.
        let other = exec_planner(state.path(), &planner_step(3, 4, Some(&id)));
        assert_eq!(other["steps_in_plan"], 3, "another process: {other}");
        // And back: the server reads what the other process wrote.
        let last = try_execute(
            &client,
            &mut server,
            "planner",
            planner_step(4, 4, Some(&id)),
        )
        .await;
        assert_eq!(
            last["structuredContent"]["status"], "planning_complete",
            "{last}"
        );
        // The threads of the deleted file went with it, and say so.
        let gone = try_execute(
            &client,
            &mut server,
            "planner",
            planner_step(3, 4, Some(&old)),
        )
        .await;
        assert_eq!(gone["isError"], true, "{gone}");
        assert!(gone.to_string().contains("unknown"), "{gone}");
    });
}

/// A `continuation_id` written another way (upper case, a trailing space)
/// continues the thread, and every reply gives the id as stored, in every
/// store: the id echoed was the caller's spelling.
#[test]
fn a_continuation_id_in_another_spelling_is_echoed_canonical() {
    let dir = tempfile::tempdir().unwrap();
    let redis = Redis::start();
    let mut stores = vec![
        "memory:".to_owned(),
        format!("sqlite:{}", dir.path().join("t.db").display()),
    ];
    if let Some(redis) = &redis {
        stores.push(redis.url());
    }
    let client = client();
    for store in stores {
        let mut server = http_instance(&store);
        runtime().block_on(async {
            let started =
                try_execute(&client, &mut server, "planner", planner_step(1, 3, None)).await;
            let id = started["structuredContent"]["continuation_id"]
                .as_str()
                .unwrap()
                .to_owned();
            assert_eq!(id, id.to_lowercase(), "{store}");
            let spelled = format!("{} ", id.to_uppercase());
            let next = try_execute(
                &client,
                &mut server,
                "planner",
                planner_step(2, 3, Some(&spelled)),
            )
            .await;
            assert_eq!(
                next["structuredContent"]["steps_in_plan"], 2,
                "{store}: {next}"
            );
            assert_eq!(
                next["structuredContent"]["continuation_id"], id,
                "{store}: {next}"
            );

            // A workflow's reply and its instructions for the next step too.
            let step = json!({"step": "Look", "step_number": 1, "total_steps": 3,
                "next_step_required": true, "findings": "none yet", "files_checked": [],
                "relevant_files": [], "relevant_context": [], "hypothesis": "h",
                "confidence": "low"});
            let first = try_execute(&client, &mut server, "debug", step.clone()).await;
            let thread = first["structuredContent"]["continuation_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{store}: {first}"))
                .to_owned();
            let mut again = step;
            again["step_number"] = json!(2);
            again["continuation_id"] = json!(format!("{} ", thread.to_uppercase()));
            let reply = try_execute(&client, &mut server, "debug", again).await;
            let fields = &reply["structuredContent"];
            assert_eq!(fields["continuation_id"], thread, "{store}: {reply}");
            let next_steps = fields["next_steps"].as_str().unwrap();
            assert!(
                next_steps.contains(&format!("continuation_id \"{thread}\"")),
                "{store}: {next_steps}"
            );
        });
    }
}
