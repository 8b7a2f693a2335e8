//! The five design documents in `../shared/seeds/`, called as each one
//! writes its own examples, over stdio against the built binary, with the
//! documents' example catalogs. Each test asserts the fields the document
//! gives its answers; docs/strategies.md lists where zenmode differs
//! on purpose.

mod common;

use std::{
    io::{Read, Write},
    process::Stdio,
    time::{Duration, Instant},
};

use common::{Client, text_of, zenmode};
use serde_json::{Value, json};

const ADGUARD: &str = "tests/data/seeds/adguard.json";
const HULY: &str = "../shared/catalogs/huly_v0.1.35.json";
const DEVOPS: &str = "tests/data/seeds/devops.json";
const AFD: &str = "tests/data/seeds/afd_commands.json";

fn serve(args: &[&str], env: &[(&str, &str)]) -> Client {
    let mut command = zenmode(&[]);
    command.arg("serve").args(args);
    command.env_remove("LAZY_MODE").env_remove("TOOL_LOADING");
    command
        .env_remove("ZEN_TOOL_PREFIX")
        .env_remove("ZEN_STRATEGY");
    for (key, value) in env {
        command.env(key, value);
    }
    let mut client = Client::spawn_command(command);
    client.initialize();
    client
}

/// A tool result's JSON, whether sent as structured content or as text.
fn body(result: &Value) -> Value {
    result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| serde_json::from_str(&text_of(result)).expect("a JSON answer"))
}

fn call(client: &mut Client, tool: &str, arguments: Value) -> (bool, Value) {
    let result = client.tool(tool, arguments);
    (result["isError"] == true, body(&result))
}

fn list_changed(message: &Value) -> bool {
    message["method"] == "notifications/tools/list_changed"
}

fn names_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------- 000

#[test]
fn doc000_lazy_mode_manage_tools_list_enable_disable() {
    let mut client = serve(
        &["--catalog", ADGUARD, "--no-builtin-modes"],
        &[("LAZY_MODE", "true")],
    );
    assert_eq!(client.tool_names(), ["manage_tools"]);

    let (error, listed) = call(&mut client, "manage_tools", json!({"action": "list"}));
    assert!(!error, "{listed}");
    let status = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get_status")
        .expect("get_status listed");
    assert!(
        status["description"]
            .as_str()
            .unwrap()
            .starts_with("Get the AdGuard")
    );
    assert!(status.get("inputSchema").is_none(), "no schemas in list");

    let (error, enabled) = call(
        &mut client,
        "manage_tools",
        json!({"action": "enable", "tools": ["get_status"]}),
    );
    assert!(!error, "{enabled}");
    client.wait_for(list_changed);
    assert_eq!(client.tool_names(), ["manage_tools", "get_status"]);

    let (error, disabled) = call(
        &mut client,
        "manage_tools",
        json!({"action": "disable", "tools": ["get_status"]}),
    );
    assert!(!error, "{disabled}");
    client.wait_for(list_changed);
    assert_eq!(client.tool_names(), ["manage_tools"]);

    // zenmode's first name for the list still works.
    let (error, _) = call(
        &mut client,
        "manage_tools",
        json!({"action": "enable", "names": "get_status"}),
    );
    assert!(!error);
    client.wait_for(list_changed);
    assert_eq!(client.tool_names(), ["manage_tools", "get_status"]);
}

/// A call that changes the list, with stdin closed while it runs, is still
/// answered, and the server exits promptly.
#[test]
fn a_list_changing_call_is_answered_when_stdin_closes() {
    for strategy in ["lazy", "groups"] {
        let call = if strategy == "lazy" {
            json!({"name": "manage_tools", "arguments": {"action": "enable", "tools": ["chat"]}})
        } else {
            json!({"name": "activate_conversation", "arguments": {}})
        };
        let mut child = zenmode(&["serve", "--strategy", strategy])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": common::LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
        ] {
            writeln!(stdin, "{message}").unwrap();
        }
        drop(stdin);
        let started = Instant::now();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child.wait().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{strategy}: took {:?}",
            started.elapsed()
        );
        let messages: Vec<Value> = out
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .collect();
        let reply = messages
            .iter()
            .position(|m| m["id"] == 2)
            .unwrap_or_else(|| panic!("{strategy}: no reply to the call in {out}"));
        assert!(
            messages[reply]["result"]["isError"] != true,
            "{strategy}: {out}"
        );
        let notice = messages
            .iter()
            .position(list_changed)
            .unwrap_or_else(|| panic!("{strategy}: no list_changed in {out}"));
        assert!(
            notice < reply,
            "{strategy}: the notification comes first: {out}"
        );
    }
}

// ---------------------------------------------------------------- 001

#[test]
fn doc001_huly_categories_eager_and_lazy() {
    let huly: Value = serde_json::from_str(&std::fs::read_to_string(HULY).unwrap()).unwrap();
    let huly_tools = huly["tools"].as_array().unwrap();

    // TOOL_LOADING=eager: every tool with its full schema (and the meta tools).
    let mut eager = serve(
        &["--catalog", HULY, "--no-builtin-modes"],
        &[("TOOL_LOADING", "eager")],
    );
    let listed = eager.call("tools/list", json!({}))["tools"].clone();
    let create = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "create_issue")
        .unwrap();
    let original = huly_tools
        .iter()
        .find(|t| t["name"] == "create_issue")
        .unwrap();
    assert_eq!(create["inputSchema"], original["inputSchema"]);
    assert_eq!(listed.as_array().unwrap().len(), 114 + 3);

    // TOOL_LOADING=lazy: the three meta tools only.
    let mut client = serve(
        &["--catalog", HULY, "--no-builtin-modes"],
        &[("TOOL_LOADING", "lazy")],
    );
    assert_eq!(
        client.tool_names(),
        [
            "list_tool_categories",
            "get_category_tools",
            "get_tool_schema"
        ]
    );
    let (error, categories) = call(&mut client, "list_tool_categories", json!({}));
    assert!(!error, "{categories}");
    let categories = categories.as_array().unwrap();
    assert_eq!(categories.len(), 15, "{categories:?}");
    let mut total = 0;
    for entry in categories {
        assert!(entry["category"].is_string() && entry["description"].is_string());
        total += entry["toolCount"].as_u64().unwrap();
    }
    assert_eq!(total, 114);
    let issues = categories
        .iter()
        .find(|c| {
            c["category"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case("issues")
        })
        .unwrap();
    let expected = huly_tools
        .iter()
        .filter(|t| t["category"] == "issues")
        .count();
    assert_eq!(issues["toolCount"], expected);

    let (error, tools) = call(
        &mut client,
        "get_category_tools",
        json!({"category": "Issues"}),
    );
    assert!(!error, "{tools}");
    let names = names_of(&tools);
    assert!(names.contains(&"list_issues".to_owned()) && names.contains(&"get_issue".to_owned()));
    assert_eq!(names.len(), expected);
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["description"].is_string())
    );

    let (error, schema) = call(
        &mut client,
        "get_tool_schema",
        json!({"toolName": "create_issue"}),
    );
    assert!(!error, "{schema}");
    assert_eq!(schema["inputSchema"], original["inputSchema"]);

    // Approach B: the real tool is callable by name though not listed; Huly
    // itself is not running, so it answers that it has no executor here.
    let (error, ran) = call(
        &mut client,
        "create_issue",
        json!({"project": "HULY", "title": "Login bug"}),
    );
    assert!(error);
    assert_ne!(ran["error"], "unknown_tool", "{ran}");
}

// ---------------------------------------------------------------- 002

#[test]
fn doc002_groups_nest_and_exclude() {
    let mut client = serve(
        &[
            "--strategy",
            "groups",
            "--catalog",
            DEVOPS,
            "--no-builtin-modes",
            "--exclusive-groups",
            "infra_aws,infra_gcp",
        ],
        &[],
    );
    let first = client.tool_names();
    assert!(first.contains(&"activate_infra".to_owned()), "{first:?}");
    // deactivate shows once there is something to deactivate (docs/strategies.md).
    assert!(!first.contains(&"deactivate".to_owned()));
    assert!(
        !first.contains(&"activate_infra_aws".to_owned()),
        "child hidden"
    );
    assert!(!first.contains(&"ec2_list".to_owned()));

    // A hidden tool does not exist for the client (strict mode).
    let hidden = client.request("tools/call", json!({"name": "ec2_list", "arguments": {}}));
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");

    client.tool("activate_infra", json!({}));
    client.wait_for(list_changed);
    let listed = client.tool_names();
    assert!(
        listed.contains(&"activate_infra_aws".to_owned()),
        "{listed:?}"
    );
    assert!(listed.contains(&"deactivate".to_owned()));
    assert!(!listed.contains(&"ec2_list".to_owned()), "needs aws too");

    client.tool("activate_infra_aws", json!({}));
    client.wait_for(list_changed);
    assert!(client.tool_names().contains(&"ec2_list".to_owned()));

    // aws and gcp exclude each other.
    client.tool("activate_infra_gcp", json!({}));
    client.wait_for(list_changed);
    let listed = client.tool_names();
    assert!(listed.contains(&"gce_list".to_owned()) && !listed.contains(&"ec2_list".to_owned()));

    client.tool("deactivate", json!({"group": "infra"}));
    client.wait_for(list_changed);
    assert!(!client.tool_names().contains(&"gce_list".to_owned()));

    // Helpful mode names the activator.
    let mut hinted = serve(
        &[
            "--strategy",
            "groups",
            "--catalog",
            DEVOPS,
            "--no-builtin-modes",
            "--hidden-tool-hints",
        ],
        &[],
    );
    let result = hinted.tool("ec2_list", json!({}));
    assert!(text_of(&result).contains("activate_infra"), "{result}");
}

// ---------------------------------------------------------------- 003

fn afd(extra: &[&str]) -> Client {
    let mut args = vec!["--tool-prefix", "afd-", "--catalog", AFD];
    args.extend_from_slice(extra);
    serve(&args, &[])
}

#[test]
fn doc003_discover_detail_call_to_the_letter() {
    let mut client = afd(&["--strategy", "discover", "--no-builtin-modes"]);
    assert_eq!(
        client.tool_names(),
        [
            "afd-discover",
            "afd-detail",
            "afd-call",
            "afd-batch",
            "afd-pipe"
        ]
    );

    // Example 1: browsing, then by category.
    let (error, all) = call(&mut client, "afd-discover", json!({}));
    assert!(!error && all["success"] == true, "{all}");
    for key in ["reasoning", "confidence"] {
        assert!(all.get(key).is_some(), "{key}: {all}");
    }
    assert!(all["metadata"]["executionTimeMs"].is_u64());
    let data = &all["data"];
    assert_eq!(data["total"], 9);
    assert_eq!(data["filtered"], 9);
    assert_eq!(data["hasMore"], false);
    let categories = data["availableCategories"].as_array().unwrap();
    for category in ["user", "order", "payment"] {
        assert!(categories.contains(&json!(category)), "{categories:?}");
    }
    for tag in ["crud", "admin", "billing"] {
        assert!(
            data["availableTags"]
                .as_array()
                .unwrap()
                .contains(&json!(tag))
        );
    }
    assert!(
        data["commands"][0].get("mutation").is_none(),
        "mutation only on request"
    );

    let (_, orders) = call(&mut client, "afd-discover", json!({"category": "order"}));
    let orders = &orders["data"];
    assert_eq!(orders["filtered"], 3);
    assert_eq!(orders["returned"], 3);
    let commands = orders["commands"].as_array().unwrap();
    let cancel = commands
        .iter()
        .find(|c| c["name"] == "order-cancel")
        .unwrap();
    assert_eq!(cancel["description"], "Cancel a pending order");

    // Paging.
    let (_, page) = call(
        &mut client,
        "afd-discover",
        json!({"limit": 2, "offset": 1}),
    );
    assert_eq!(page["data"]["returned"], 2);
    assert_eq!(page["data"]["hasMore"], true);
    assert!(page["reasoning"].as_str().unwrap().contains("offset 3"));

    // Search: every word must appear.
    let (_, found) = call(
        &mut client,
        "afd-discover",
        json!({"search": "create user"}),
    );
    assert_eq!(names_of(&found["data"]["commands"]), ["user-create"]);

    // Example 2: search then batch inspect.
    let (_, cancels) = call(&mut client, "afd-discover", json!({"search": "cancel"}));
    assert_eq!(cancels["data"]["filtered"], 2);
    let (error, details) = call(
        &mut client,
        "afd-detail",
        json!({"command": ["order-cancel", "subscription-cancel"]}),
    );
    assert!(!error, "{details}");
    let entries = details["data"].as_array().unwrap();
    assert_eq!(
        names_of(&details["data"]),
        ["order-cancel", "subscription-cancel"]
    );
    assert_eq!(entries[0]["found"], true);
    assert_eq!(entries[0]["mutation"], true);
    assert_eq!(entries[0]["destructive"], true);
    assert_eq!(entries[1]["destructive"], false);
    assert_eq!(entries[0]["inputSchema"]["required"], json!(["orderId"]));
    assert!(entries[0]["callable"].is_boolean());

    // Example 3: typo recovery.
    let (error, typo) = call(
        &mut client,
        "afd-detail",
        json!({"command": "order-cancle"}),
    );
    assert!(!error && typo["success"] == true, "{typo}");
    let miss = &typo["data"][0];
    assert_eq!(miss["found"], false);
    assert_eq!(miss["error"]["code"], "COMMAND_NOT_FOUND");
    assert!(
        miss["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'order-cancle'")
    );
    let suggestion = miss["error"]["suggestion"].as_str().unwrap();
    assert!(
        suggestion.contains("'order-cancel'") && suggestion.contains("afd-discover"),
        "{suggestion}"
    );

    // Example 5: validation error with guidance.
    let (error, invalid) = call(
        &mut client,
        "afd-call",
        json!({"command": "user-create", "input": {"name": "Alice"}}),
    );
    assert!(error);
    assert_eq!(invalid["success"], false);
    assert_eq!(invalid["error"]["code"], "VALIDATION_ERROR");
    let message = invalid["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("'user-create'") && message.contains("email"),
        "{message}"
    );
    let suggestion = invalid["error"]["suggestion"].as_str().unwrap();
    assert!(
        suggestion.contains("afd-detail") && suggestion.contains("'user-create'"),
        "{suggestion}"
    );

    // Example 4: a valid call of an imported command reaches dispatch (no
    // handler runs it inside zenmode, and the error says so).
    let (error, direct) = call(
        &mut client,
        "afd-call",
        json!({"command": "user-get", "input": {"id": 42}}),
    );
    assert!(error);
    assert_eq!(direct["error"]["code"], "NO_EXECUTOR", "{direct}");

    // Unknown command.
    let (_, unknown) = call(&mut client, "afd-call", json!({"command": "user-creat"}));
    assert_eq!(unknown["error"]["code"], "COMMAND_NOT_FOUND");

    // Example 6: tags, with the mutation flag.
    let (_, admin) = call(
        &mut client,
        "afd-discover",
        json!({"tag": "admin", "includeMutation": true}),
    );
    let admin = admin["data"]["commands"].as_array().unwrap().clone();
    let mut names: Vec<&str> = admin.iter().map(|c| c["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["config-reset", "user-delete"]);
    assert!(admin.iter().all(|c| c["mutation"] == true));
    let (_, both) = call(
        &mut client,
        "afd-discover",
        json!({"tag": ["admin", "billing"], "tagMode": "all"}),
    );
    assert_eq!(both["data"]["filtered"], 0);
    let (_, either) = call(
        &mut client,
        "afd-discover",
        json!({"tag": ["admin", "billing"]}),
    );
    assert_eq!(either["data"]["filtered"], 6);

    // includeMutation false keeps every command.
    let (_, unflagged) = call(
        &mut client,
        "afd-discover",
        json!({"includeMutation": false}),
    );
    assert_eq!(unflagged["data"]["filtered"], 9);
}

#[test]
fn doc003_afd_call_batch_and_pipe_work_under_every_strategy() {
    for strategy in ["zen", "full", "lazy", "categories", "groups", "discover"] {
        let mut client = afd(&["--strategy", strategy]);
        let (error, ran) = call(
            &mut client,
            "afd-call",
            json!({"command": "version", "input": {}}),
        );
        assert!(!error, "{strategy}: {ran}");
        assert_eq!(ran["success"], true);
        assert_eq!(ran["data"]["name"], "zenmode");
        assert!(ran["metadata"]["executionTimeMs"].is_u64());
        let (error, batch) = call(
            &mut client,
            "afd-batch",
            json!({"calls": [{"command": "version"}, {"command": "nope"}]}),
        );
        assert!(!error, "{strategy}: {batch}");
        assert_eq!(batch["data"]["succeeded"], 1);
        let (error, piped) = call(
            &mut client,
            "afd-pipe",
            json!({"steps": [{"command": "version"}, {"command": "version"}]}),
        );
        assert!(!error, "{strategy}: {piped}");
        let listed = client.tool_names();
        assert_eq!(
            listed.contains(&"afd-call".to_owned()),
            strategy == "discover",
            "{strategy}: {listed:?}"
        );
    }
    // The zen strategy still lists exactly its two tools.
    let mut zen = serve(&[], &[]);
    assert_eq!(zen.tool_names(), ["zen_select_mode", "zen_execute"]);
    let (error, ran) = call(&mut zen, "call", json!({"command": "version"}));
    assert!(!error && ran["success"] == true, "{ran}");
}

// ---------------------------------------------------------------- 004

#[test]
fn doc004_two_stage_calls_verbatim() {
    let mut client = serve(&[], &[]);
    assert_eq!(client.tool_names(), ["zen_select_mode", "zen_execute"]);
    let (error, selected) = call(
        &mut client,
        "zen_select_mode",
        json!({"task_description": "Debug OAuth token persistence issue", "confidence_level": "exploring"}),
    );
    assert!(!error, "{selected}");
    assert_eq!(selected["recommended_mode"], "debug", "{selected}");
    let required: Vec<&str> = selected["required_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(required.contains(&"step"), "{required:?}");
    assert_eq!(
        selected["next_call"]["arguments"]["request"]["confidence"],
        "exploring"
    );

    // Stage 2, verbatim: the request passes validation and runs debug (the
    // file lies outside the allowed roots here, which debug reports).
    let (_, executed) = call(
        &mut client,
        "zen_execute",
        json!({"mode": "debug", "request": {"problem": "OAuth tokens not persisting", "files": ["/src/auth.py"], "confidence": "exploring"}}),
    );
    assert_ne!(executed["error"], "invalid_request", "{executed}");
    assert_eq!(executed["mode"], "debug", "{executed}");

    // The document's mode names: `security` is secaudit.
    let (error, security) = call(&mut client, "zen_select_mode", json!({"mode": "security"}));
    assert!(!error, "{security}");
    assert_eq!(security["mode"], "secaudit");
}
