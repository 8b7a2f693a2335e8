//! Resources, resource templates, subscriptions, prompts and completion of
//! upstream servers through zenmode's gateway.
//!
//! The first test runs the same MCP Python SDK client
//! (`tests/peers/resources_check.py`) against npm server-everything directly
//! and through zenmode, and compares the two answers (prompt names carry
//! the server prefix through zenmode). The second puts two copies of it and
//! a server that cannot start behind zenmode: listings go on without the
//! broken one, a URI both copies list is told apart, and a read from the
//! broken one is a clear error. Both need `tests/upstreams/install.sh`
//! (without it they say so and pass, unless `ZEN_REQUIRE_UPSTREAMS=1`).

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::gateway::Setup;
use serde_json::{Value, json};

fn upstreams_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams")
}

fn everything_bin() -> PathBuf {
    upstreams_dir().join("node_modules/.bin/mcp-server-everything")
}

/// The Python with the MCP SDK (installed with the PyPI upstreams).
fn sdk_python() -> PathBuf {
    upstreams_dir().join(".venv/bin/python")
}

fn installed() -> bool {
    let missing: Vec<PathBuf> = [everything_bin(), sdk_python()]
        .into_iter()
        .filter(|path| !path.exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var("ZEN_REQUIRE_UPSTREAMS").as_deref() == Ok("1") {
        panic!("upstream servers missing (run tests/upstreams/install.sh): {missing:?}");
    }
    eprintln!("skipping: tests/upstreams/install.sh has not run: {missing:?}");
    false
}

/// A script that runs `zenmode serve` over `setup`'s upstreams (the SDK
/// starts servers with a bare environment, so the settings go in here).
fn zenmode_launcher(setup: &Setup) -> PathBuf {
    let script = setup.path("zenmode.sh");
    let text = format!(
        "#!/bin/sh\nexport ZEN_UPSTREAMS='{}' ZEN_CACHE_DIR='{}' ZEN_STATE_DIR='{}' RUST_LOG=info\nexec '{}' serve 2>>'{}'\n",
        setup.file().display(),
        setup.path("cache").display(),
        setup.path("state").display(),
        common::binary(),
        setup.log().display(),
    );
    std::fs::write(&script, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

/// Runs the SDK client script and returns its JSON answer.
fn sdk_client(args: &[&str]) -> Value {
    let output = Command::new(sdk_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/resources_check.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "resources_check.py {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "resources_check.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn everything_answers_through_zenmode_as_it_does_directly() {
    if !installed() {
        return;
    }
    let everything = everything_bin().display().to_string();
    let setup = Setup::new(json!({"everything": {"command": everything}}));
    // What `upstream add` does: learn the server once, so `initialize`
    // can advertise its capabilities without starting it.
    let (code, _, stderr) = setup.run(&["upstream", "refresh", "everything"]);
    assert_eq!(code, 0, "refresh failed: {stderr}");
    let launcher = zenmode_launcher(&setup).display().to_string();

    let direct = sdk_client(&["transcript", "", &everything]);
    let through = sdk_client(&["transcript", "everything__", &launcher]);

    // The tool list is zenmode's own, exactly as without resources.
    assert_eq!(through["tools"], json!(["zen_execute", "zen_select_mode"]));
    // The rest is the upstream's answer, unchanged.
    for key in [
        "capabilities",
        "resource_pages",
        "templates",
        "reads",
        "unknown_read",
        "prompt_gets",
        "completions",
        "update",
    ] {
        assert_eq!(
            through[key], direct[key],
            "{key} differs from the direct answer"
        );
    }
    let renamed: Vec<Value> = through["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|prompt| {
            let mut prompt = prompt.clone();
            let name = prompt["name"].as_str().unwrap();
            let bare = name
                .strip_prefix("everything__")
                .unwrap_or_else(|| panic!("prompt {name} lacks the server prefix"));
            prompt["name"] = json!(bare);
            prompt
        })
        .collect();
    assert_eq!(Value::Array(renamed), direct["prompts"]);

    // The comparison means something: each part holds real answers.
    assert!(direct["capabilities"]["resources"]["subscribe"] == json!(true));
    assert!(direct["capabilities"]["completions"].is_object());
    assert!(direct["resource_pages"][0].as_array().unwrap().len() >= 2);
    assert!(!direct["templates"].as_array().unwrap().is_empty());
    let reads = direct["reads"].as_object().unwrap();
    assert!(reads.values().any(|c| c[0]["text"].is_string()));
    assert!(reads.values().any(|c| c[0]["blob"].is_string()));
    assert_eq!(direct["unknown_read"], "error");
    assert!(
        direct["prompt_gets"][1][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Lyon")
    );
    assert!(
        !direct["completions"][0]["values"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(direct["update"], direct["resource_pages"][0][1]["uri"]);
}

#[test]
fn a_failing_upstream_leaves_the_others_and_twins_are_told_apart() {
    if !installed() {
        return;
    }
    let everything = everything_bin().display().to_string();
    let setup = Setup::new(json!({
        "everything": {"command": everything},
        "twin": {"command": everything},
        "broken": {"command": "/nonexistent/zenmode-test-no-such-server"},
    }));
    let mut client = setup.serve(&[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);

    // Page one: everything's resources (broken, first by name, is left
    // out); page two: twin's, whose URIs everything already owns.
    let first = client.call("resources/list", json!({}));
    let uris = |page: &Value| -> Vec<String> {
        page["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    let own = uris(&first);
    assert!(own.len() >= 2, "{first}");
    assert!(own.iter().all(|uri| uri.starts_with("demo://")), "{first}");
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = client.call("resources/list", json!({"cursor": cursor}));
    assert!(second.get("nextCursor").is_none(), "{second}");
    let twins = uris(&second);
    let expected: Vec<String> = own.iter().map(|u| format!("zenmode://twin/{u}")).collect();
    assert_eq!(twins, expected);

    // Each URI reads from its own server, under the name it was listed by.
    let read = client.call("resources/read", json!({"uri": own[0]}));
    assert_eq!(read["contents"][0]["uri"], own[0]);
    let read_twin = client.call("resources/read", json!({"uri": twins[0]}));
    assert_eq!(read_twin["contents"][0]["uri"], twins[0]);
    assert_eq!(
        read_twin["contents"][0]["text"],
        read["contents"][0]["text"]
    );

    // The broken server's resource: a clear error naming it.
    let failed = client.request(
        "resources/read",
        json!({"uri": "zenmode://broken/demo://x"}),
    );
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("broken"), "{failed}");
    assert!(message.contains("No such file"), "{failed}");
    // An unknown server, a URI nobody lists, and a forged cursor.
    let unknown = client.request("resources/read", json!({"uri": "zenmode://nobody/x"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let unlisted = client.request("resources/read", json!({"uri": "other://nothing"}));
    assert!(
        unlisted["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no upstream lists"),
        "{unlisted}"
    );
    let forged = client.request("resources/list", json!({"cursor": "Zm9yZ2Vk"}));
    assert_eq!(forged["error"]["code"], -32602, "{forged}");

    // A resource the server makes during the session: its list_changed
    // reaches the client, and the new resource is listed and read.
    let made = client.call(
        "tools/call",
        json!({"name": "zen_execute", "arguments": {
            "mode": "everything__gzip-file-as-resource",
            "request": {"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8=",
                        "outputType": "resourceLink"}}}),
    );
    assert_ne!(made["isError"], json!(true), "{made}");
    client.wait_for(|m| m["method"] == "notifications/resources/list_changed");
    let again = client.call("resources/list", json!({}));
    let fresh: Vec<String> = uris(&again)
        .into_iter()
        .filter(|uri| !own.contains(uri))
        .collect();
    assert_eq!(fresh.len(), 1, "{again}");
    let gz = client.call("resources/read", json!({"uri": fresh[0]}));
    assert!(gz["contents"][0]["blob"].is_string(), "{gz}");

    // Prompts of both copies, each under its server's prefix.
    let prompts = client.call("prompts/list", json!({}));
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"everything__args-prompt"), "{names:?}");
    assert!(names.contains(&"twin__args-prompt"), "{names:?}");
    assert!(names.iter().all(|n| !n.starts_with("broken__")));
    let got = client.call(
        "prompts/get",
        json!({"name": "twin__args-prompt", "arguments": {"city": "Turku"}}),
    );
    assert!(
        got["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Turku")
    );
    let no_prompt = client.request("prompts/get", json!({"name": "args-prompt"}));
    assert_eq!(no_prompt["error"]["code"], -32602, "{no_prompt}");

    // Both copies list the same template: the second is told apart, and
    // completion reaches the server that owns each.
    let templates = client.call("resources/templates/list", json!({}));
    let listed: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    let text_template = "demo://resource/dynamic/text/{resourceId}";
    assert!(listed.contains(&text_template), "{listed:?}");
    let twin_template = format!("zenmode://twin/{text_template}");
    assert!(listed.contains(&twin_template.as_str()), "{listed:?}");
    for uri in [text_template, twin_template.as_str()] {
        let completed = client.call(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": uri},
                   "argument": {"name": "resourceId", "value": "1"}}),
        );
        assert_eq!(
            completed["completion"]["values"],
            json!(["1"]),
            "{uri}: {completed}"
        );
    }
    drop(client);

    // The servers' capabilities are now cached: a new zenmode advertises
    // them at once, beside the same two tools.
    let mut again = common::Client::spawn_keeping_stderr(setup.command(&["serve"]));
    let info = again.initialize();
    let capabilities = &info["capabilities"];
    assert_eq!(
        capabilities["resources"],
        json!({"subscribe": true, "listChanged": true}),
        "{info}"
    );
    assert_eq!(
        capabilities["prompts"],
        json!({"listChanged": true}),
        "{info}"
    );
    assert!(capabilities["completions"].is_object(), "{info}");
    assert_eq!(again.tool_names(), ["zen_select_mode", "zen_execute"]);

    // Without upstreams, tools, and resources for reading result handles
    // (none listed); with handles off, only tools.
    let empty = Setup::new(json!({}));
    let mut plain = common::Client::spawn_keeping_stderr(empty.command(&["serve"]));
    let info = plain.initialize();
    assert_eq!(
        info["capabilities"],
        json!({"tools": {}, "resources": {}}),
        "{info}"
    );
    let mut off =
        common::Client::spawn_keeping_stderr(empty.command(&["serve", "--result-handles", "off"]));
    let info = off.initialize();
    assert_eq!(info["capabilities"], json!({"tools": {}}), "{info}");
    assert_eq!(
        plain.call("resources/list", json!({})),
        json!({"resources": []})
    );
}

/// The process group of the running upstream `server`, from its state file.
fn upstream_group(setup: &Setup, server: &str) -> Option<u32> {
    let dir = setup.path("state").join("upstreams");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(server) {
            return None;
        }
        let path = entry.path().join("state.json");
        let state: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        state["pid"].as_u64().map(|pid| pid as u32)
    })
}

#[test]
fn a_subscription_keeps_its_upstream_running_and_outlives_a_crash() {
    if !installed() {
        return;
    }
    let everything = everything_bin().display().to_string();
    let setup = Setup::new(json!({"everything": {"command": everything, "idle_shutdown": 1}}));
    let mut client = setup.serve(&[]);
    let listed = client.call("resources/list", json!({}));
    let uri = listed["resources"][1]["uri"].clone();
    client.call("resources/subscribe", json!({"uri": uri}));
    let toggle = json!({"name": "zen_execute", "arguments": {
        "mode": "everything__toggle-subscriber-updates", "request": {}}});
    client.call("tools/call", toggle.clone());
    let updated = |m: &Value| m["method"] == "notifications/resources/updated";
    assert_eq!(client.wait_for(updated)["params"]["uri"], uri);
    // The next update comes 5 s later, long after the 1 s idle shutdown
    // would have stopped a server nobody held.
    assert_eq!(client.wait_for(updated)["params"]["uri"], uri);

    // The server dies; the next use starts it again, and the subscription
    // is sent to the new process.
    let group =
        upstream_group(&setup, "everything").expect("the state file names the server's group");
    let killed = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(std::time::Duration::from_millis(300));
    client.stray.retain(|m| !updated(m));
    let read = client.call("resources/read", json!({"uri": uri}));
    assert_eq!(read["contents"][0]["uri"], uri);
    client.call("tools/call", toggle);
    assert_eq!(client.wait_for(updated)["params"]["uri"], uri);
    let starts = setup.log_text().matches("upstream started").count();
    assert_eq!(starts, 2, "{}", setup.log_text());
}

/// `tests/upstreams/resource_server.py` (standard library only) as `name`.
fn resource_server(name: &str, templates: Value, listings: Value, extra: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/resource_server.py");
    let mut args = vec![
        json!(script),
        json!("--name"),
        json!(name),
        json!("--templates"),
        json!(templates.to_string()),
        json!("--listings"),
        json!(listings.to_string()),
    ];
    args.extend(extra.iter().map(|arg| json!(arg)));
    json!({"command": "python3", "args": args, "idle_shutdown": 0})
}

/// The text a read answered with, or its error message.
fn read_text(client: &mut common::Client, uri: &str) -> String {
    let response = client.request("resources/read", json!({"uri": uri}));
    match response.get("error") {
        Some(error) => format!("error: {}", error["message"]),
        None => response["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// Every page of `resources/list`: the URIs listed.
fn list_all(client: &mut common::Client) -> Vec<String> {
    let mut uris = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = client.call("resources/list", params);
        for resource in page["resources"].as_array().unwrap() {
            uris.push(resource["uri"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            return uris;
        }
    }
}

/// What server `name` counted (listings, subscribes, unsubscribes).
fn stats(client: &mut common::Client, name: &str) -> Value {
    serde_json::from_str(&read_text(
        client,
        &format!("zenmode://{name}/stats://{name}"),
    ))
    .unwrap()
}

#[test]
fn a_uri_two_servers_templates_match_is_read_from_neither_unless_named() {
    let setup = Setup::new(json!({
        "broad": resource_server("broad", json!(["res://{x}"]), json!([[]]), &[]),
        "narrow": resource_server("narrow", json!(["res://{x}.json"]), json!([[]]), &[]),
        "tie1": resource_server("tie1", json!(["tie://{x}.txt"]), json!([[]]), &[]),
        "tie2": resource_server("tie2", json!(["tie://{y}.txt"]), json!([[]]), &[]),
    }));
    let mut client = setup.serve(&[]);
    // A narrower template does not capture a URI the broad one makes too.
    let captured = read_text(&mut client, "res://doc.json");
    assert!(
        captured.starts_with("error:")
            && captured.contains("broad")
            && captured.contains("narrow")
            && captured.contains("zenmode://"),
        "{captured}"
    );
    // Only one server's template matches: that server reads it.
    assert_eq!(
        read_text(&mut client, "res://doc"),
        "read by broad: res://doc"
    );
    let tie = read_text(&mut client, "tie://n.txt");
    assert!(
        tie.starts_with("error:") && tie.contains("tie1") && tie.contains("tie2"),
        "{tie}"
    );
    assert_eq!(
        read_text(&mut client, "zenmode://narrow/res://doc.json"),
        "read by narrow: res://doc.json"
    );
    assert_eq!(
        read_text(&mut client, "zenmode://tie2/tie://n.txt"),
        "read by tie2: tie://n.txt"
    );
}

#[test]
fn a_listing_gives_up_what_it_no_longer_holds_and_unknown_uris_relist_rarely() {
    let setup = Setup::new(json!({
        "a": resource_server("a", json!([]), json!([["shared://doc"], []]), &[]),
        "b": resource_server("b", json!([]), json!([["shared://doc"]]), &[]),
    }));
    let mut client = setup.serve(&[]);
    let first = list_all(&mut client);
    assert_eq!(first, ["shared://doc", "zenmode://b/shared://doc"]);
    // a no longer lists it: b's copy is the one now.
    let second = list_all(&mut client);
    assert_eq!(second, ["shared://doc"]);
    assert_eq!(
        read_text(&mut client, "shared://doc"),
        "read by b: shared://doc"
    );

    // Reads of URIs nobody lists: one reading of every listing, not one each.
    let before = stats(&mut client, "a")["lists"].as_u64().unwrap();
    for n in 0..3 {
        let unknown = read_text(&mut client, &format!("unknown://{n}"));
        assert!(unknown.starts_with("error:"), "{unknown}");
    }
    let after = stats(&mut client, "a")["lists"].as_u64().unwrap();
    assert_eq!(after, before + 1, "listings read for three unknown URIs");
}

#[test]
fn two_subscribes_at_once_to_one_uri_leave_no_hold_behind() {
    let setup = Setup::new(json!({
        "a": resource_server("a", json!([]), json!([["shared://doc"]]), &["--subscribe-delay", "0.5"]),
    }));
    let mut client = setup.serve(&[]);
    list_all(&mut client);
    for id in ["s1", "s2"] {
        client.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe",
            "params": {"uri": "shared://doc"}}),
        );
    }
    // In either order.
    for id in ["s1", "s2"] {
        let reply = client.wait_for(|m| m["id"] == id && m.get("method").is_none());
        assert!(reply.get("error").is_none(), "{reply}");
    }
    client.call("resources/unsubscribe", json!({"uri": "shared://doc"}));
    let counted = stats(&mut client, "a");
    assert_eq!(counted["subscribes"], 1, "{counted}");
    assert_eq!(counted["unsubscribes"], 1, "{counted}");
}
