//! Result handles from outside: a large upstream result comes back as a
//! short reply with a `resource_link`, reads back whole in pages, passes
//! to a script by `{"$result": id}` without crossing the client, and is
//! refused to another session, after its lifetime, and when handles are
//! off. Over HTTP, two instances on one Redis share a client's handles,
//! and another token's client is refused.

mod common;

use std::time::Duration;

use common::{
    REPLY_TIMEOUT, TcpServer,
    gateway::{Setup, execute, flaky, wait_until},
    redis::Redis,
    stateless_meta, text_of, zenmode,
};
use serde_json::{Value, json};

const BIG: u64 = 100_000;

fn link_of(result: &Value) -> Value {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "resource_link")
        .cloned()
        .unwrap_or_else(|| panic!("no resource_link in {result}"))
}

fn read_all(client: &mut common::Client, uri: &str) -> String {
    let first = client.call("resources/read", json!({"uri": uri}));
    let pages = first["contents"][0]["_meta"]["zenmode/page"]["pages"]
        .as_u64()
        .unwrap();
    let mut text = first["contents"][0]["text"].as_str().unwrap().to_owned();
    for page in 2..=pages {
        let next = client.call(
            "resources/read",
            json!({"uri": format!("{uri}?page={page}")}),
        );
        text.push_str(next["contents"][0]["text"].as_str().unwrap());
    }
    text
}

#[test]
fn a_large_result_is_a_short_reply_that_reads_back_and_passes_on() {
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    let mut client = setup.serve(&[]);
    let started = client.call(
        "initialize",
        json!({
        "protocolVersion": common::LEGACY_VERSION, "capabilities": {},
        "clientInfo": {"name": "again", "version": "1"}}),
    );
    assert!(
        started["capabilities"]["resources"].is_object(),
        "handles are read with resources/read: {started}"
    );
    let reply = execute(&mut client, "up__big", json!({"bytes": BIG}));
    assert!(
        reply.to_string().len() <= 2048,
        "a handle reply is at most 2 KiB: {} bytes",
        reply.to_string().len()
    );
    let link = link_of(&reply);
    let uri = link["uri"].as_str().unwrap();
    assert!(uri.starts_with("zenmode://results/"), "{uri}");
    assert_eq!(link["size"], BIG);
    // No structured content: a client showing it instead of the text
    // would lose the preview and how to go on.
    assert!(reply.get("structuredContent").is_none(), "{reply}");
    let id = uri.rsplit('/').next().unwrap().to_owned();
    assert!(text_of(&reply).contains(&id));
    assert_eq!(read_all(&mut client, uri), "x".repeat(BIG as usize));

    // Passed to a script by handle: the script sees the whole value.
    let counted = execute(
        &mut client,
        "script",
        json!({"code": "return {length: input.length, first: input.slice(0, 3)};",
               "input": {"$result": id}}),
    );
    assert_eq!(
        counted["structuredContent"]["result"],
        json!({"length": BIG, "first": "xxx"}),
        "{counted}"
    );
    // And to an upstream tool's field, inside a script's own call.
    let echoed = execute(
        &mut client,
        "script",
        json!({"code": "const r = await tools.call('up__echo', {text: input}); return r.echo.length;",
               "input": {"$result": id}}),
    );
    assert_eq!(
        echoed["structuredContent"]["result"],
        json!(BIG),
        "{echoed}"
    );

    // Unknown ids and bad pages are clear errors; the server goes on.
    let unknown = execute(
        &mut client,
        "up__echo",
        json!({"text": {"$result": "0b7f6a4e-0000-4000-8000-000000000000"}}),
    );
    assert_eq!(
        unknown["structuredContent"]["error"], "not_found",
        "{unknown}"
    );
    let beyond = client.request("resources/read", json!({"uri": format!("{uri}?page=9999")}));
    assert!(
        beyond["error"]["message"]
            .as_str()
            .unwrap()
            .contains("page"),
        "{beyond}"
    );
    let small = execute(&mut client, "up__echo", json!({"text": "hi"}));
    assert_eq!(
        small["structuredContent"]["echo"], "hi",
        "small results stay whole"
    );
}

/// The text `up__big {bytes, lines: true}` answers (the fault server's).
fn lines_of_text(bytes: usize) -> String {
    let line = "a \"quoted\" line\twith é and \\ ✓\n";
    let all = line.repeat(bytes / line.len() + 1);
    let mut end = bytes;
    while !all.is_char_boundary(end) {
        end -= 1;
    }
    all[..end].to_owned()
}

/// A text result sent also as structured content `{"content": text}` (as
/// server-filesystem does) stays text: its handle is text/plain and reads
/// back byte for byte, and a script gets the text, not `{"content": ...}`.
#[test]
fn a_text_result_stays_text_through_a_handle_and_a_script() {
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    // The test server's tools say nothing of what they change.
    let mut client = setup.serve(&["--script-writes", "allow"]);
    let expected = lines_of_text(BIG as usize);
    let reply = execute(&mut client, "up__big", json!({"bytes": BIG, "lines": true}));
    let link = link_of(&reply);
    assert_eq!(link["mimeType"], "text/plain", "{reply}");
    let uri = link["uri"].as_str().unwrap().to_owned();
    let read = read_all(&mut client, &uri);
    assert!(read == expected, "the handle's pages differ from the text");
    let first = client.call("resources/read", json!({"uri": uri}));
    assert_eq!(first["contents"][0]["mimeType"], "text/plain");

    let id = uri.rsplit('/').next().unwrap().to_owned();
    // The script's answer would be a handle again if it were the text
    // itself: it answers with a checksum of every UTF-16 unit instead.
    let code = "if (typeof input !== 'string') return typeof input; \
                let sum = 0; for (let i = 0; i < input.length; i++) \
                { sum = (sum * 31 + input.charCodeAt(i)) % 1000000007; } \
                return {length: input.length, sum};";
    let passed = execute(
        &mut client,
        "script",
        json!({"code": code, "input": {"$result": id}}),
    );
    let units: Vec<u16> = expected.encode_utf16().collect();
    let sum = units.iter().fold(0u64, |sum, &unit| {
        (sum * 31 + u64::from(unit)) % 1_000_000_007
    });
    assert_eq!(
        passed["structuredContent"]["result"],
        json!({"length": units.len(), "sum": sum}),
        "a handle passed to a script is the text: {passed}"
    );
    let called = execute(
        &mut client,
        "script",
        json!({"code": "return await tools.call('up__big', {bytes: 3000, lines: true});"}),
    );
    assert_eq!(
        called["structuredContent"]["result"],
        json!(lines_of_text(3000)),
        "{called}"
    );
}

/// Whether the SQLite store at `db` still holds the thread `id`.
fn stored(db: &std::path::Path, id: &str) -> bool {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection
        .query_row("SELECT count(*) FROM threads WHERE id = ?1", [id], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap()
        > 0
}

/// A handle is deleted from the store, not only refused: once it expired,
/// and when the session that made it ends.
#[test]
fn handles_are_deleted_when_they_expire_and_when_their_session_ends() {
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    let db = setup.path("threads.db");
    let store = format!("sqlite:{}", db.display());
    let mut one = setup.serve(&["--store", &store, "--result-handle-ttl-secs", "1"]);
    let reply = execute(&mut one, "up__big", json!({"bytes": BIG}));
    let uri = link_of(&reply)["uri"].as_str().unwrap().to_owned();
    let id = uri.rsplit('/').next().unwrap().to_owned();
    assert!(stored(&db, &id));
    assert!(
        wait_until(Duration::from_secs(15), || {
            let read = one.request("resources/read", json!({"uri": uri}));
            read["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("expired"))
        }),
        "the handle never expired"
    );
    assert!(!stored(&db, &id), "an expired handle stays in the store");

    let mut two = setup.serve(&["--store", &store]);
    let reply = execute(&mut two, "up__big", json!({"bytes": BIG}));
    let uri = link_of(&reply)["uri"].as_str().unwrap().to_owned();
    let id = uri.rsplit('/').next().unwrap().to_owned();
    assert!(stored(&db, &id));
    assert!(two.finish().success());
    assert!(!stored(&db, &id), "a handle outlived its session");
}

#[test]
fn another_session_and_an_expired_handle_are_refused() {
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    let store = format!("sqlite:{}", setup.path("threads.db").display());
    let mut one = setup.serve(&["--store", &store, "--result-handle-ttl-secs", "2"]);
    let mut two = setup.serve(&["--store", &store]);
    let reply = execute(&mut one, "up__big", json!({"bytes": BIG}));
    let uri = link_of(&reply)["uri"].as_str().unwrap().to_owned();
    let id = uri.rsplit('/').next().unwrap().to_owned();
    assert!(one.request("resources/read", json!({"uri": uri}))["result"].is_object());

    // The same store, another session: as if the handle did not exist.
    let other = two.request("resources/read", json!({"uri": uri}));
    assert_eq!(other["error"]["code"], -32002, "{other}");
    let passed = execute(&mut two, "up__echo", json!({"text": {"$result": id}}));
    assert_eq!(
        passed["structuredContent"]["error"], "not_found",
        "{passed}"
    );
    // Nor does the handle continue a conversation.
    let continued = execute(
        &mut two,
        "planner",
        json!({"step": "go on", "step_number": 2, "total_steps": 2,
               "next_step_required": false, "continuation_id": id}),
    );
    assert_eq!(continued["isError"], true, "{continued}");

    // Past its lifetime the owner is refused too, saying why.
    assert!(
        wait_until(Duration::from_secs(15), || {
            let read = one.request("resources/read", json!({"uri": uri}));
            read["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("expired"))
        }),
        "the handle never expired"
    );
}

#[test]
fn off_returns_large_results_whole() {
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    let mut client = setup.serve(&["--result-handles", "off"]);
    let reply = execute(&mut client, "up__big", json!({"bytes": BIG}));
    assert_eq!(text_of(&reply).len(), BIG as usize);
    let read = client.request(
        "resources/read",
        json!({"uri": "zenmode://results/0b7f6a4e-0000-4000-8000-000000000000"}),
    );
    assert!(read["error"].is_object(), "{read}");
}

fn http_instance(redis: &str, token: &str, upstreams: &std::path::Path) -> TcpServer {
    let mut command = zenmode(&["serve", "--transport", "http"]);
    command
        .args(["--listen", "127.0.0.1:0", "--store", redis])
        .env("ZEN_AUTH_TOKEN", token)
        .env("ZEN_UPSTREAMS", upstreams);
    TcpServer::spawn(command)
}

async fn http_call(
    client: &reqwest::Client,
    server: &TcpServer,
    token: &str,
    method: &str,
    params: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = stateless_meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let name = params["name"].as_str().or(params["uri"].as_str());
    common::http::stateless_post(client, server, method, name)
        .bearer_auth(token)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[test]
fn two_http_instances_on_one_redis_share_a_clients_handles_only() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let setup = Setup::new(json!({"up": flaky(&["--hostile"])}));
    let one = http_instance(&redis.url(), "token-one", &setup.file());
    let two = http_instance(&redis.url(), "token-one", &setup.file());
    let stranger = http_instance(&redis.url(), "token-two", &setup.file());
    let client = common::http::client();
    common::http::runtime().block_on(async {
        // The first call may wait for the upstream to start.
        let made = tokio::time::timeout(
            REPLY_TIMEOUT * 2,
            http_call(
                &client,
                &one,
                "token-one",
                "tools/call",
                json!({"name": "zen_execute",
                       "arguments": {"mode": "up__big", "request": {"bytes": BIG}}}),
            ),
        )
        .await
        .unwrap();
        let link = link_of(&made["result"]);
        let uri = link["uri"].as_str().unwrap();
        let read = http_call(
            &client,
            &two,
            "token-one",
            "resources/read",
            json!({"uri": uri}),
        )
        .await;
        assert_eq!(
            read["result"]["contents"][0]["text"].as_str().map(str::len),
            Some(32 * 1024),
            "page 1 on the other instance: {}",
            read.to_string().chars().take(300).collect::<String>()
        );
        let refused = http_call(
            &client,
            &stranger,
            "token-two",
            "resources/read",
            json!({"uri": uri}),
        )
        .await;
        // Not found: -32002 before 2026-07-28, -32602 (invalid params) since.
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("not known to this session")),
            "another token's client is refused: {}",
            refused.to_string().chars().take(300).collect::<String>()
        );
    });
}
