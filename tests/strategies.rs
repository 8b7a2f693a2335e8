//! Every `--strategy` over stdio and TCP, driven as a client would: what
//! `tools/list` shows, how a call reaches a mode, when the list changes (and
//! that the client is told), and what bad input gets.

mod common;

use std::process::Stdio;

use common::{Client, TcpServer, stateless_meta, structured, zenmode};
use serde_json::{Value, json};

fn names(client: &mut Client) -> Vec<String> {
    client.tool_names()
}

fn serve(args: &[&str]) -> Client {
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let mut client = Client::spawn(&all);
    client.initialize();
    client
}

/// A tool result's JSON, sent as structured content or (arrays) as text.
fn json_of(result: &Value) -> Value {
    result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| serde_json::from_str(&common::text_of(result)).expect("a JSON answer"))
}

fn list_changed(message: &Value) -> bool {
    message["method"] == "notifications/tools/list_changed"
}

#[test]
fn lazy_enables_and_disables_tools_and_says_the_list_changed() {
    let mut client = serve(&["--strategy", "lazy"]);
    let info = client.call("initialize", json!({"protocolVersion": common::LEGACY_VERSION, "capabilities": {}, "clientInfo": {"name": "again", "version": "1"}}));
    assert_eq!(info["capabilities"]["tools"]["listChanged"], true, "{info}");
    assert_eq!(names(&mut client), ["manage_tools"]);

    let listed = structured(
        &client.tool("manage_tools", json!({"action": "list"})),
        false,
    );
    assert_eq!(listed["total"], 19);
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["enabled"] == false)
    );
    assert!(
        listed["tools"][0].get("inputSchema").is_none(),
        "list carries no schemas"
    );

    // A hidden tool is refused with the way to enable it.
    let hidden = structured(&client.tool("challenge", json!({"prompt": "x"})), true);
    assert_eq!(hidden["error"], "tool_not_enabled");

    let enabled = structured(
        &client.tool(
            "manage_tools",
            json!({"action": "enable", "names": ["challenge", "planner"]}),
        ),
        false,
    );
    assert_eq!(enabled["changed"], true);
    client.wait_for(list_changed);
    assert_eq!(names(&mut client), ["manage_tools", "challenge", "planner"]);
    let tools = client.call("tools/list", Value::Null)["tools"].clone();
    assert!(
        tools[1]["inputSchema"]["properties"]["prompt"].is_object(),
        "full schema: {tools}"
    );
    let answer = structured(
        &client.tool("challenge", json!({"prompt": "the sky is green"})),
        false,
    );
    assert_eq!(answer["status"], "challenge_accepted");

    // Unknown names change nothing, and say which were wrong.
    let unknown = structured(
        &client.tool(
            "manage_tools",
            json!({"action": "disable", "names": ["challenge", "chalenge"]}),
        ),
        true,
    );
    assert_eq!(unknown["unknown"][0]["name"], "chalenge");
    assert_eq!(unknown["unknown"][0]["suggestions"][0], "challenge");
    assert_eq!(names(&mut client), ["manage_tools", "challenge", "planner"]);

    structured(
        &client.tool(
            "manage_tools",
            json!({"action": "disable", "names": "challenge"}),
        ),
        false,
    );
    client.wait_for(list_changed);
    assert_eq!(names(&mut client), ["manage_tools", "planner"]);

    // Bad arguments.
    let bad = structured(
        &client.tool("manage_tools", json!({"action": "explode"})),
        true,
    );
    assert_eq!(bad["error"], "invalid_arguments");
    let no_names = structured(
        &client.tool("manage_tools", json!({"action": "enable"})),
        true,
    );
    assert_eq!(no_names["error"], "invalid_arguments");
}

#[test]
fn lazy_mode_env_selects_lazy_and_stateless_sessions_keep_a_fixed_list() {
    let mut command = zenmode(&["serve"]);
    command.env("LAZY_MODE", "true");
    let mut client = Client::spawn_command(command);
    // A 2026-07-28 client: no initialize, _meta on every request.
    let listed = client.call("tools/list", json!({"_meta": stateless_meta()}));
    assert_eq!(listed["tools"].as_array().unwrap().len(), 1);
    let enabled = client.call(
        "tools/call",
        json!({"_meta": stateless_meta(), "name": "manage_tools", "arguments": {"action": "enable", "names": ["challenge"]}}),
    );
    let body = structured(&enabled, false);
    assert_eq!(
        body["tools"][0]["name"], "challenge",
        "definitions handed over: {body}"
    );
    let listed = client.call("tools/list", json!({"_meta": stateless_meta()}));
    assert_eq!(
        listed["tools"].as_array().unwrap().len(),
        1,
        "the list never changes"
    );
    let answer = client.call(
        "tools/call",
        json!({"_meta": stateless_meta(), "name": "challenge", "arguments": {"prompt": "p"}}),
    );
    assert_eq!(structured(&answer, false)["status"], "challenge_accepted");
    assert!(
        !client.stray.iter().any(list_changed),
        "no list_changed for a stateless client"
    );
}

#[test]
fn categories_browse_then_fetch_in_every_sub_mode() {
    let mut client = serve(&["--strategy", "categories"]);
    assert_eq!(
        names(&mut client),
        [
            "list_tool_categories",
            "get_category_tools",
            "get_tool_schema"
        ]
    );
    let categories = json_of(&client.tool("list_tool_categories", json!({})));
    let workflow = categories
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["category"] == "workflow")
        .unwrap()
        .clone();
    assert_eq!(workflow["toolCount"], 11);
    assert!(!workflow["description"].as_str().unwrap().is_empty());
    let tools = json_of(&client.tool("get_category_tools", json!({"category": "utility"})));
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "challenge")
    );
    let schema = structured(
        &client.tool("get_tool_schema", json!({"toolName": "challenge"})),
        false,
    );
    assert_eq!(schema["inputSchema"]["required"], json!(["prompt"]));
    // Hidden but callable by name.
    let answer = structured(&client.tool("challenge", json!({"prompt": "p"})), false);
    assert_eq!(answer["status"], "challenge_accepted");
    // Bad input: suggestions.
    let unknown = structured(
        &client.tool("get_category_tools", json!({"category": "utilty"})),
        true,
    );
    assert!(
        unknown["message"].as_str().unwrap().contains("\"utility\""),
        "{unknown}"
    );
    let missing = structured(
        &client.tool("get_tool_schema", json!({"toolName": "chalenge"})),
        true,
    );
    assert_eq!(missing["suggestions"][0], "challenge");
    let wrong = structured(&client.tool("get_tool_schema", json!({"tool": "x"})), true);
    assert_eq!(wrong["error"], "invalid_arguments");

    let mut stripped = serve(&["--strategy", "categories", "--tool-loading", "stripped"]);
    let tools = stripped.call("tools/list", Value::Null)["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 3 + 19);
    assert_eq!(tools[3]["inputSchema"], json!({"type": "object"}));
    let mut eager = serve(&["--strategy", "categories", "--tool-loading", "eager"]);
    let tools = eager.call("tools/list", Value::Null)["tools"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 3 + 19);
    assert!(
        tools[3]["inputSchema"]["properties"].is_object(),
        "full schemas"
    );

    let mut command = zenmode(&["serve", "--pin", "planner"]);
    command.env("TOOL_LOADING", "core");
    let mut core = Client::spawn_command(command);
    core.initialize();
    assert_eq!(
        names(&mut core),
        [
            "list_tool_categories",
            "get_category_tools",
            "get_tool_schema",
            "planner"
        ]
    );
}

#[test]
fn groups_activate_deactivate_and_exclude() {
    let mut client = serve(&[
        "--strategy",
        "groups",
        "--exclusive-groups",
        "workflow,conversation",
    ]);
    let initial = names(&mut client);
    assert_eq!(
        initial,
        [
            "activate_conversation",
            "activate_planning",
            "activate_utility",
            "activate_workflow"
        ]
    );
    // A hidden tool is "not found" by default.
    let hidden = client.request(
        "tools/call",
        json!({"name": "challenge", "arguments": {"prompt": "p"}}),
    );
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");

    let activated = structured(&client.tool("activate_utility", json!({})), false);
    assert!(
        activated["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("challenge"))
    );
    client.wait_for(list_changed);
    let now = names(&mut client);
    assert!(now.contains(&"challenge".to_owned()) && now.contains(&"deactivate".to_owned()));
    assert!(!now.contains(&"activate_utility".to_owned()));
    let answer = structured(&client.tool("challenge", json!({"prompt": "p"})), false);
    assert_eq!(answer["status"], "challenge_accepted");

    // Exclusion: workflow replaces conversation.
    structured(&client.tool("activate_conversation", json!({})), false);
    client.wait_for(list_changed);
    let swapped = structured(&client.tool("activate_workflow", json!({})), false);
    assert_eq!(swapped["deactivated"], json!(["conversation"]));
    client.wait_for(list_changed);
    let now = names(&mut client);
    assert!(now.contains(&"debug".to_owned()) && !now.contains(&"chat".to_owned()));
    assert!(now.contains(&"activate_conversation".to_owned()));

    let off = structured(
        &client.tool("deactivate", json!({"group": "utility"})),
        false,
    );
    assert_eq!(off["deactivated"], true);
    let unknown = structured(&client.tool("deactivate", json!({"group": "utilty"})), true);
    assert!(unknown["message"].as_str().unwrap().contains("\"utility\""));

    let mut hinted = serve(&["--strategy", "groups", "--hidden-tool-hints"]);
    let hint = structured(&hinted.tool("challenge", json!({"prompt": "p"})), true);
    assert_eq!(hint["activator"], "activate_utility");
}

#[test]
fn a_servers_topics_are_groups_inside_its_group() {
    let huly = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/catalogs/huly_v0.1.35.json"
    );
    let mut client = serve(&["--strategy", "groups", "--catalog", huly]);
    let top = names(&mut client);
    assert!(top.contains(&"activate_huly_v0_1_35".to_owned()), "{top:?}");
    assert!(
        !top.iter().any(|n| n.starts_with("activate_huly_v0_1_35_")),
        "children hidden: {top:?}"
    );

    let opened = structured(&client.tool("activate_huly_v0_1_35", json!({})), false);
    assert!(
        opened["inner_groups"]
            .as_array()
            .unwrap()
            .contains(&json!("activate_huly_v0_1_35_issues"))
    );
    client.wait_for(list_changed);
    let now = names(&mut client);
    assert!(
        now.contains(&"activate_huly_v0_1_35_issues".to_owned()),
        "{now:?}"
    );
    assert!(!now.contains(&"activate_huly_v0_1_35".to_owned()));

    let issues = structured(
        &client.tool("activate_huly_v0_1_35_issues", json!({})),
        false,
    );
    let issue_tools = issues["tools"].as_array().unwrap().clone();
    assert!(issue_tools.len() > 5, "{issues}");
    client.wait_for(list_changed);
    let now = names(&mut client);
    assert!(now.contains(&issue_tools[0].as_str().unwrap().to_owned()));

    // Closing the server's group closes its inner groups too.
    structured(
        &client.tool("deactivate", json!({"group": "huly_v0_1_35"})),
        false,
    );
    client.wait_for(list_changed);
    let now = names(&mut client);
    assert!(!now.contains(&issue_tools[0].as_str().unwrap().to_owned()));
    assert!(!now.iter().any(|n| n.starts_with("activate_huly_v0_1_35_")));
}

#[test]
fn groups_refuse_an_unknown_exclusive_group_at_start() {
    let output = zenmode(&[
        "serve",
        "--strategy",
        "groups",
        "--exclusive-groups",
        "workflow,nope",
    ])
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"nope\""), "{stderr}");
}

#[test]
fn discover_detail_call_batch_and_pipe() {
    let mut client = serve(&["--strategy", "discover"]);
    assert_eq!(
        names(&mut client),
        ["discover", "detail", "call", "batch", "pipe"]
    );

    let all = structured(&client.tool("discover", json!({"limit": 5})), false)["data"].clone();
    assert_eq!(all["total"], 19);
    assert_eq!(all["returned"], 5);
    assert_eq!(all["hasMore"], true);
    assert!(
        all["availableCategories"]
            .as_array()
            .unwrap()
            .contains(&json!("workflow"))
    );
    assert!(
        all["availableTags"]
            .as_array()
            .unwrap()
            .contains(&json!("read-only"))
    );
    let found = structured(
        &client.tool("discover", json!({"search": "Plan STEP"})),
        false,
    )["data"]
        .clone();
    // Every word appears (any case) in each result's name or description.
    let found = found["commands"].as_array().unwrap();
    assert!(found.iter().any(|c| c["name"] == "planner"), "{found:?}");
    assert!(found.len() < 19);
    let flagged = structured(
        &client.tool(
            "discover",
            json!({"includeMutation": true, "category": "utility"}),
        ),
        false,
    )["data"]
        .clone();
    let commands = flagged["commands"].as_array().unwrap();
    assert!(commands.iter().all(|t| t["mutation"].is_boolean()));
    assert!(commands.iter().any(|t| t["mutation"] == false));
    let tagged = structured(
        &client.tool(
            "discover",
            json!({"tag": ["workflow", "read-only"], "tagMode": "all"}),
        ),
        false,
    );
    assert!(tagged["data"]["filtered"].as_u64().unwrap() > 0);
    let nothing = structured(&client.tool("discover", json!({"category": "nope"})), false);
    assert_eq!(nothing["data"]["filtered"], 0);

    let detail = structured(
        &client.tool("detail", json!({"names": ["planner", "plannr"]})),
        false,
    )["data"]
        .clone();
    assert_eq!(detail[0]["name"], "planner");
    assert_eq!(detail[0]["callable"], true);
    assert_eq!(detail[1]["found"], false);
    assert_eq!(detail[1]["error"]["code"], "COMMAND_NOT_FOUND");
    assert!(
        detail[1]["error"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("'planner'")
    );

    let ran = structured(
        &client.tool(
            "call",
            json!({"command": "challenge", "input": {"prompt": "p"}}),
        ),
        false,
    );
    assert_eq!(ran["data"]["status"], "challenge_accepted");
    let invalid = structured(
        &client.tool("call", json!({"command": "challenge", "input": {}})),
        true,
    );
    assert_eq!(invalid["error"]["code"], "VALIDATION_ERROR");
    assert!(
        invalid["error"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("detail"),
        "{invalid}"
    );
    let unknown = structured(&client.tool("call", json!({"command": "chalenge"})), true);
    assert!(
        unknown["error"]["suggestion"]
            .as_str()
            .unwrap()
            .contains("'challenge'")
    );

    let batch = structured(
        &client.tool(
            "batch",
            json!({"calls": [{"command": "challenge", "input": {"prompt": "a"}}, {"command": "nope"}]}),
        ),
        false,
    )["data"]
        .clone();
    assert_eq!(batch["succeeded"], 1);
    assert_eq!(batch["failed"], 1);
    assert_eq!(batch["results"][1]["ok"], false);

    let step = |n: u64, next: bool, cid: Option<&str>| {
        let mut input = json!({"step": format!("step {n}"), "step_number": n, "total_steps": 2, "next_step_required": next});
        if let Some(cid) = cid {
            input["continuation_id"] = json!(cid);
        }
        json!({"command": "planner", "input": input})
    };
    let piped = structured(
        &client.tool(
            "pipe",
            json!({"steps": [step(1, true, None), step(2, false, Some("$1/continuation_id"))]}),
        ),
        false,
    )["data"]
        .clone();
    assert_eq!(piped["steps"], 2);
    assert_eq!(
        piped["results"][1]["continuation_id"],
        piped["results"][0]["continuation_id"]
    );
    let bad_reference = structured(
        &client.tool(
            "pipe",
            json!({"steps": [step(1, true, Some("$3/continuation_id"))]}),
        ),
        true,
    );
    assert_eq!(bad_reference["error"]["code"], "BAD_REFERENCE");
    assert_eq!(bad_reference["error"]["details"]["failed_step"], 1);
    let failing = structured(
        &client.tool("pipe", json!({"steps": [{"command": "challenge", "input": {"prompt": "a"}}, {"command": "challenge"}, step(1, true, None)]})),
        true,
    );
    assert_eq!(failing["error"]["details"]["failed_step"], 2);
    assert_eq!(failing["error"]["details"]["completed"], 1);

    for (tool, args) in [
        ("discover", json!({"limit": 0})),
        ("discover", json!({"limit": 201})),
        ("discover", json!({"offset": -1})),
        ("detail", json!({"names": []})),
        ("detail", json!({"command": []})),
        ("batch", json!({"calls": []})),
    ] {
        let refused = structured(&client.tool(tool, args.clone()), true);
        assert!(
            refused["error"].is_string() || refused["error"]["code"].is_string(),
            "{tool} {args}: {refused}"
        );
    }
}

#[test]
fn every_strategy_answers_over_tcp() {
    for (strategy, tool, arguments, first_listed) in [
        (
            "zen",
            "zen_execute",
            json!({"mode": "challenge", "request": {"prompt": "p"}}),
            "zen_select_mode",
        ),
        ("full", "challenge", json!({"prompt": "p"}), "analyze"),
        (
            "lazy",
            "manage_tools",
            json!({"action": "list"}),
            "manage_tools",
        ),
        (
            "categories",
            "challenge",
            json!({"prompt": "p"}),
            "list_tool_categories",
        ),
        (
            "groups",
            "activate_utility",
            json!({}),
            "activate_conversation",
        ),
        (
            "discover",
            "call",
            json!({"command": "challenge", "input": {"prompt": "p"}}),
            "discover",
        ),
    ] {
        let server = TcpServer::start(&["--strategy", strategy]);
        let mut client = Client::connect(&server.address);
        client.initialize();
        assert_eq!(client.tool_names()[0], first_listed, "{strategy}");
        structured(&client.tool(tool, arguments), false);
    }
}

#[test]
fn groups_keep_a_fixed_list_for_stateless_sessions() {
    let mut client = Client::spawn(&["serve", "--strategy", "groups"]);
    let before = client.call("tools/list", json!({"_meta": stateless_meta()}))["tools"].clone();
    let activated = client.call(
        "tools/call",
        json!({"_meta": stateless_meta(), "name": "activate_utility", "arguments": {}}),
    );
    let body = structured(&activated, false);
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "challenge" && t["inputSchema"].is_object())
    );
    let after = client.call("tools/list", json!({"_meta": stateless_meta()}))["tools"].clone();
    assert_eq!(
        before, after,
        "the list never changes for a stateless client"
    );
    let answer = client.call(
        "tools/call",
        json!({"_meta": stateless_meta(), "name": "challenge", "arguments": {"prompt": "p"}}),
    );
    assert_eq!(structured(&answer, false)["status"], "challenge_accepted");
}

#[test]
fn every_strategy_serves_over_tcp_with_separate_session_state() {
    let server = TcpServer::start(&["--strategy", "lazy"]);
    let mut first = Client::connect(&server.address);
    first.initialize();
    let mut second = Client::connect(&server.address);
    second.initialize();
    structured(
        &first.tool(
            "manage_tools",
            json!({"action": "enable", "names": ["planner"]}),
        ),
        false,
    );
    first.wait_for(list_changed);
    assert_eq!(first.tool_names(), ["manage_tools", "planner"]);
    assert_eq!(
        second.tool_names(),
        ["manage_tools"],
        "sessions do not share state"
    );
}

#[test]
fn conflicting_or_bogus_strategy_settings_are_refused() {
    let output = zenmode(&["serve", "--full", "--strategy", "lazy"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--full"));
    let mut command = zenmode(&["serve"]);
    command
        .env("ZEN_TOKEN_OPTIMIZATION", "bogus")
        .stdin(Stdio::null());
    let output = command.output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("ZEN_TOKEN_OPTIMIZATION"));
}

#[test]
fn meta_and_pinned_tools_are_always_loaded_unless_turned_off() {
    let mut client = serve(&["--pin", "planner"]);
    let tools = client.call("tools/list", Value::Null)["tools"].clone();
    for tool in tools.as_array().unwrap() {
        assert_eq!(tool["_meta"]["anthropic/alwaysLoad"], true, "{tool}");
    }
    let mut full = serve(&["--full"]);
    let tools = full.call("tools/list", Value::Null)["tools"].clone();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("_meta").is_none())
    );
    let mut lazy = serve(&["--strategy", "lazy"]);
    structured(
        &lazy.tool(
            "manage_tools",
            json!({"action": "enable", "names": ["planner"]}),
        ),
        false,
    );
    let tools = lazy.call("tools/list", Value::Null)["tools"].clone();
    assert_eq!(tools[0]["_meta"]["anthropic/alwaysLoad"], true);
    assert!(
        tools[1].get("_meta").is_none(),
        "an enabled mode is not pinned: {}",
        tools[1]
    );
    let mut off = serve(&["--no-always-load"]);
    let tools = off.call("tools/list", Value::Null)["tools"].clone();
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("_meta").is_none())
    );
}

/// Claude Code cuts descriptions and server instructions longer than 2 KB.
#[test]
fn every_description_and_instruction_fits_in_two_kilobytes() {
    for strategy in ["zen", "full", "lazy", "categories", "groups", "discover"] {
        let mut client = Client::spawn(&["serve", "--strategy", strategy]);
        let info = client.initialize();
        let instructions = info["instructions"].as_str().unwrap();
        assert!(
            instructions.len() < 2048,
            "{strategy}: {} bytes",
            instructions.len()
        );
        assert!(
            instructions.len() > 40,
            "{strategy}: instructions say what to do"
        );
        for tool in client.call("tools/list", Value::Null)["tools"]
            .as_array()
            .unwrap()
        {
            let description = tool["description"].as_str().unwrap();
            assert!(
                description.len() < 2048,
                "{strategy} {}: {} bytes",
                tool["name"],
                description.len()
            );
        }
    }
}

#[test]
fn stateless_tool_lists_say_they_can_be_cached() {
    let mut client = Client::spawn(&["serve"]);
    let listed = client.call("tools/list", json!({"_meta": stateless_meta()}));
    assert!(listed["ttlMs"].as_u64().unwrap() >= 3_600_000, "{listed}");
    assert_eq!(listed["cacheScope"], "public");
    let mut legacy = serve(&[]);
    let listed = legacy.call("tools/list", Value::Null);
    assert!(
        listed.get("ttlMs").is_none(),
        "2025 sessions get no cache hints: {listed}"
    );
}
