//! Every mode for real, over the built binary: a fake model provider on
//! loopback, a temporary project as the allowed root, real git and a fake CLI.

mod common;

use std::{path::Path, process::Command};

use common::{
    Client,
    fake_provider::{BackgroundFake, Reply},
    structured, zenmode,
};
use serde_json::{Value, json};

/// A project directory (the server's working directory, so its only root).
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("orders.py"),
            "def total(items):\n    return items[0].price  # crashes on an empty cart\n",
        )
        .unwrap();
        Project { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// `zenmode serve` in this project, optionally with the fake as OpenAI.
    fn serve(&self, fake: Option<&BackgroundFake>, extra_env: &[(&str, String)]) -> Client {
        let mut command = zenmode(&["serve"]);
        command.current_dir(self.dir.path());
        if let Some(fake) = fake {
            command
                .env("OPENAI_API_KEY", "sk-e2e-secret")
                .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
        }
        for (name, value) in extra_env {
            command.env(name, value);
        }
        let mut client = Client::spawn_command(command);
        client.initialize();
        client
    }
}

fn execute(client: &mut Client, mode: &str, request: Value) -> Value {
    client.tool("zen_execute", json!({"mode": mode, "request": request}))
}

/// All text the model was sent in one recorded chat-completions request.
fn sent_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn chat_needs_a_provider_and_says_how_to_configure_one() {
    let project = Project::new();
    let mut client = project.serve(None, &[]);
    let reply = structured(
        &execute(
            &mut client,
            "chat",
            json!({"prompt": "hi", "working_directory_absolute_path": project.path("")}),
        ),
        true,
    );
    assert_eq!(reply["error"], "no_provider", "{reply}");
    assert!(
        reply["message"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY")
    );

    let models = structured(&execute(&mut client, "listmodels", json!({})), false);
    assert_eq!(models["providers"], json!([]));
    assert!(
        models["note"]
            .as_str()
            .unwrap()
            .contains("No model provider")
    );
}

#[test]
fn chat_sends_prompt_and_files_and_continues_the_thread() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[]);
    let file = project.path("orders.py");
    let first = structured(
        &execute(
            &mut client,
            "chat",
            json!({"prompt": "Is total() safe?", "absolute_file_paths": [file],
                   "working_directory_absolute_path": project.path(""), "model": "gpt-5"}),
        ),
        false,
    );
    assert_eq!(first["status"], "continuation_available");
    assert!(first["content"].as_str().unwrap().starts_with("echo:"));
    let thread = first["continuation_id"].as_str().unwrap().to_owned();

    let requests = fake.fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["messages"][0]["role"], "system");
    let text = sent_text(body);
    assert!(text.contains("Is total() safe?"), "{text}");
    assert!(
        text.contains("return items[0].price"),
        "file embedded: {text}"
    );
    assert!(text.contains("2│"), "line-numbered: {text}");
    assert!(!requests[0].headers["authorization"].is_empty());

    structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "chat", "continuation_id": thread,
                   "request": {"prompt": "And with an empty cart?", "working_directory_absolute_path": project.path("")}}),
        ),
        false,
    );
    let second = sent_text(&fake.fake.requests()[1].body);
    assert!(
        second.contains("Is total() safe?"),
        "history carried: {second}"
    );
    assert!(second.contains("And with an empty cart?"));
}

#[test]
fn files_outside_the_roots_are_refused_and_never_read() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        project.dir.path().join("link.txt"),
    )
    .unwrap();
    let mut client = project.serve(Some(&fake), &[]);
    let escaping = [
        outside.path().join("secret.txt").display().to_string(),
        format!(
            "{}/../{}/secret.txt",
            project.path(""),
            outside.path().file_name().unwrap().to_str().unwrap()
        ),
        project.path("link.txt"),
        project.path("missing.py"),
    ];
    for path in escaping {
        let reply = structured(
            &execute(
                &mut client,
                "chat",
                json!({"prompt": "read it", "absolute_file_paths": [&path],
                       "working_directory_absolute_path": project.path("")}),
            ),
            true,
        );
        assert_eq!(reply["error"], "file_access", "{path}: {reply}");
        let message = reply["message"].as_str().unwrap();
        assert!(message.contains(&path), "the error names {path}: {message}");
    }
    assert!(
        fake.fake.requests().is_empty(),
        "nothing was sent to the model"
    );

    // --allow-root opens another directory.
    let mut command = zenmode(&["serve", "--allow-root", outside.path().to_str().unwrap()]);
    command
        .current_dir(project.dir.path())
        .env("OPENAI_API_KEY", "sk-e2e-secret")
        .env("OPENAI_BASE_URL", format!("{}/v1", fake.fake.base));
    let mut client = Client::spawn_command(command);
    client.initialize();
    let secret = outside.path().join("secret.txt").display().to_string();
    structured(
        &execute(
            &mut client,
            "chat",
            json!({"prompt": "read it", "absolute_file_paths": [secret],
                   "working_directory_absolute_path": project.path("")}),
        ),
        false,
    );
    assert!(sent_text(&fake.fake.requests()[0].body).contains("TOP-SECRET"));
}

#[test]
fn consensus_consults_each_model_with_its_stance() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[]);
    let reply = structured(
        &execute(
            &mut client,
            "consensus",
            json!({"step": "Adopt a message broker", "step_number": 1, "total_steps": 1,
                   "next_step_required": false, "findings": "Jobs are lost on restart",
                   "models": [{"model": "gpt-5", "stance": "for"}, {"model": "gpt-5-mini", "stance": "against"},
                              {"model": "gpt-5"}]}),
        ),
        false,
    );
    assert_eq!(reply["models_consulted"], 3, "{reply}");
    let stances: Vec<&str> = reply["responses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["stance"].as_str().unwrap())
        .collect();
    // A seat without a stance gets the manifest's default.
    assert_eq!(stances, ["for", "against", "neutral"]);
    // The models are asked concurrently: match requests by content, not order.
    let sent: Vec<String> = fake
        .fake
        .requests()
        .iter()
        .map(|r| sent_text(&r.body))
        .collect();
    assert_eq!(sent.len(), 3);
    for brief in ["case FOR", "case AGAINST", "Weigh the proposal evenly"] {
        assert_eq!(
            sent.iter().filter(|text| text.contains(brief)).count(),
            1,
            "{brief}"
        );
    }
    assert!(
        sent.iter()
            .all(|text| text.contains("Jobs are lost on restart"))
    );
}

#[test]
fn consensus_reports_total_failure_as_an_error_and_caps_the_panel() {
    let bad_key = Reply::json(401, json!({"error": {"message": "bad key"}}));
    let fake = BackgroundFake::start(vec![bad_key.clone(), bad_key]);
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[]);
    let step = |models: Value| {
        json!({"step": "Adopt a message broker", "step_number": 1, "total_steps": 1,
               "next_step_required": false, "findings": "f", "models": models})
    };
    let failed = structured(
        &execute(
            &mut client,
            "consensus",
            step(json!([{"model": "gpt-5"}, {"model": "gpt-5-mini"}])),
        ),
        true,
    );
    assert_eq!(failed["error"], "all_models_failed", "{failed}");
    assert_eq!(failed["responses"].as_array().unwrap().len(), 2);

    let panel: Vec<Value> = (0..11).map(|_| json!({"model": "gpt-5"})).collect();
    let refused = structured(&execute(&mut client, "consensus", step(json!(panel))), true);
    assert_eq!(refused["error"], "too_many_models", "{refused}");
    assert_eq!(
        fake.fake.requests().len(),
        2,
        "a refused panel asks no model"
    );
}

#[test]
fn provider_errors_reach_the_agent_clearly() {
    let fake = BackgroundFake::start(vec![Reply::json(
        401,
        json!({"error": {"message": "bad key"}}),
    )]);
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[]);
    let reply = structured(
        &execute(
            &mut client,
            "chat",
            json!({"prompt": "hi", "working_directory_absolute_path": project.path("")}),
        ),
        true,
    );
    assert_eq!(reply["error"], "provider_auth", "{reply}");
    let message = reply["message"].as_str().unwrap();
    assert!(
        message.contains("OPENAI_API_KEY") && !message.contains("sk-e2e-secret"),
        "{message}"
    );
}

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path.display().to_string()
}

#[cfg(unix)]
#[test]
fn clink_runs_the_configured_cli_and_reports_failures() {
    let project = Project::new();
    let bin = tempfile::tempdir().unwrap();
    let ok = write_script(bin.path(), "ok.sh", "echo \"fake-cli got: $(cat)\"");
    let fails = write_script(
        bin.path(),
        "fails.sh",
        "cat >/dev/null; echo 'quota exceeded' >&2; exit 3",
    );
    let slow = write_script(bin.path(), "slow.sh", "sleep 5; echo late");
    let config = bin.path().join("clink.json");
    std::fs::write(
        &config,
        json!({"clis": {"okcli": {"command": ok}, "failcli": {"command": fails}, "slowcli": {"command": slow}},
               "default_cli": "okcli"})
        .to_string(),
    )
    .unwrap();
    let env = [
        ("ZEN_CLINK_CONFIG", config.display().to_string()),
        ("ZEN_CLINK_TIMEOUT_SECS", "1".to_owned()),
    ];
    let mut client = project.serve(None, &env);

    let reply = structured(
        &execute(
            &mut client,
            "clink",
            json!({"prompt": "summarise the repo", "role": "planner"}),
        ),
        false,
    );
    assert_eq!(reply["cli"], "okcli");
    let output = reply["output"].as_str().unwrap();
    assert!(
        output.contains("fake-cli got: Act as a planner") && output.contains("summarise the repo"),
        "{output}"
    );

    let failed = structured(
        &execute(
            &mut client,
            "clink",
            json!({"prompt": "x", "cli_name": "failcli"}),
        ),
        true,
    );
    assert_eq!(failed["error"], "cli_failed");
    assert_eq!(failed["exit_code"], 3);
    assert!(
        failed["stderr"]
            .as_str()
            .unwrap()
            .contains("quota exceeded")
    );

    let timed_out = structured(
        &execute(
            &mut client,
            "clink",
            json!({"prompt": "x", "cli_name": "slowcli"}),
        ),
        true,
    );
    assert_eq!(timed_out["error"], "cli_timeout", "{timed_out}");

    let unknown = structured(
        &execute(
            &mut client,
            "clink",
            json!({"prompt": "x", "cli_name": "nope"}),
        ),
        true,
    );
    assert_eq!(unknown["error"], "unknown_cli");
    assert!(
        unknown["available"]
            .as_array()
            .unwrap()
            .contains(&json!("okcli"))
    );
}

fn debug_step(number: u64, total: u64, more: bool, file: &str, confidence: &str) -> Value {
    json!({
        "step": format!("Investigate step {number}"), "step_number": number, "total_steps": total,
        "next_step_required": more, "findings": format!("finding {number}: total() indexes items[0]"),
        "files_checked": [file], "relevant_files": [file], "relevant_context": ["total"],
        "hypothesis": "empty cart raises IndexError", "confidence": confidence,
        "issues_found": [{"severity": "high", "description": "IndexError on empty cart"}]
    })
}

#[test]
fn debug_investigation_continues_and_ends_with_expert_analysis_then_chat() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let file = project.path("orders.py");
    let mut client = project.serve(Some(&fake), &[]);

    let first = structured(
        &execute(
            &mut client,
            "debug",
            debug_step(1, 2, true, &file, "medium"),
        ),
        false,
    );
    assert_eq!(first["status"], "pause_for_debug");
    assert!(!first["required_actions"].as_array().unwrap().is_empty());
    assert!(
        fake.fake.requests().is_empty(),
        "no model call before the final step"
    );
    let thread = first["continuation_id"].as_str().unwrap().to_owned();

    let mut last = debug_step(2, 2, false, &file, "high");
    last["continuation_id"] = json!(thread);
    let done = structured(&execute(&mut client, "debug", last), false);
    assert_eq!(done["status"], "debug_complete");
    assert_eq!(
        done["consolidated_findings"]["steps"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        done["consolidated_findings"]["issues_found"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(done["expert_analysis"]["status"], "complete", "{done}");
    let sent = sent_text(&fake.fake.requests()[0].body);
    assert!(
        sent.contains("finding 1") && sent.contains("finding 2"),
        "{sent}"
    );
    assert!(
        sent.contains("return items[0].price"),
        "relevant file embedded: {sent}"
    );

    // The same thread goes on in chat, with the investigation as history.
    structured(
        &client.tool(
            "chat",
            json!({"prompt": "Summarise the bug", "continuation_id": thread,
                   "working_directory_absolute_path": project.path("")}),
        ),
        false,
    );
    let chat_sent = sent_text(&fake.fake.requests()[1].body);
    assert!(
        chat_sent.contains("finding 2"),
        "debug history reached chat: {chat_sent}"
    );
}

#[test]
fn workflows_finish_without_a_provider_and_respect_skip_rules() {
    let project = Project::new();
    let file = project.path("orders.py");
    let mut client = project.serve(None, &[]);
    let done = structured(
        &execute(&mut client, "debug", debug_step(1, 1, false, &file, "high")),
        false,
    );
    assert_eq!(done["expert_analysis"]["status"], "skipped");
    assert!(
        done["expert_analysis"]["reason"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY")
    );

    let fake = BackgroundFake::start(Vec::new());
    let mut client = project.serve(Some(&fake), &[]);
    let certain = structured(
        &execute(
            &mut client,
            "debug",
            debug_step(1, 1, false, &file, "certain"),
        ),
        false,
    );
    assert_eq!(certain["expert_analysis"]["status"], "skipped");
    let mut opted_out = debug_step(1, 1, false, &file, "high");
    opted_out["use_assistant_model"] = json!(false);
    let opted_out = structured(&execute(&mut client, "debug", opted_out), false);
    assert_eq!(opted_out["expert_analysis"]["status"], "skipped");
    assert!(fake.fake.requests().is_empty());

    let expired = structured(
        &client.tool(
            "zen_execute",
            json!({"mode": "debug", "continuation_id": "00000000-0000-4000-8000-000000000000",
            "request": debug_step(2, 2, false, &file, "high")}),
        ),
        true,
    );
    assert_eq!(expired["error"], "unknown_continuation");
    assert!(
        expired["message"]
            .as_str()
            .unwrap()
            .contains("continuation_id")
    );
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn precommit_reviews_staged_and_unstaged_changes() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let dir = project.dir.path();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "orders.py"]);
    git(dir, &["commit", "-qm", "first"]);
    std::fs::write(
        dir.join("orders.py"),
        "def total(items):\n    return sum(i.price for i in items)\n",
    )
    .unwrap();
    git(dir, &["add", "orders.py"]);
    std::fs::write(dir.join("notes.md"), "draft\n").unwrap();
    git(dir, &["add", "-N", "notes.md"]);
    std::fs::write(dir.join("notes.md"), "draft notes about UNSTAGED-MARKER\n").unwrap();

    let mut client = project.serve(Some(&fake), &[]);
    let step = |number: u64, more: bool| {
        json!({"step": "review the pending changes", "step_number": number, "total_steps": 2,
               "next_step_required": more, "findings": "checked", "path": project.path("")})
    };
    let first = structured(&execute(&mut client, "precommit", step(1, true)), false);
    let changes = &first["changes"];
    assert!(
        changes["staged"].to_string().contains("orders.py"),
        "{first}"
    );
    assert!(
        changes["unstaged"].to_string().contains("notes.md"),
        "{first}"
    );

    let mut last = step(2, false);
    last["continuation_id"] = first["continuation_id"].clone();
    let done = structured(&execute(&mut client, "precommit", last), false);
    assert_eq!(done["expert_analysis"]["status"], "complete", "{done}");
    let sent = sent_text(&fake.fake.requests()[0].body);
    assert!(
        sent.contains("sum(i.price for i in items)"),
        "staged diff sent: {sent}"
    );
    assert!(sent.contains("UNSTAGED-MARKER"), "unstaged diff sent");
}

#[test]
fn local_workflows_tracer_and_docgen() {
    let project = Project::new();
    let mut client = project.serve(None, &[]);
    let ask = structured(
        &execute(
            &mut client,
            "tracer",
            json!({"step": "s", "step_number": 1, "total_steps": 2,
            "next_step_required": true, "findings": "f", "target_description": "total()", "trace_mode": "ask"}),
        ),
        false,
    );
    assert_eq!(ask["status"], "trace_mode_selection_required");
    assert!(ask["options"]["precision"].is_string());

    let traced = structured(
        &execute(
            &mut client,
            "tracer",
            json!({"step": "s", "step_number": 1, "total_steps": 1,
            "next_step_required": false, "findings": "total is called by checkout", "target_description": "total()",
            "trace_mode": "precision"}),
        ),
        false,
    );
    assert_eq!(traced["status"], "tracer_complete");
    assert_eq!(traced["expert_analysis"]["status"], "not_applicable");

    let unfinished = structured(
        &execute(
            &mut client,
            "docgen",
            json!({"step": "document orders.py", "step_number": 1, "total_steps": 1,
            "next_step_required": false, "findings": "done one", "num_files_documented": 1, "total_files_to_document": 2}),
        ),
        false,
    );
    assert_eq!(unfinished["status"], "pause_for_docgen", "{unfinished}");
    assert!(
        unfinished["required_actions"][0]
            .as_str()
            .unwrap()
            .contains("1 of 2")
    );
}

/// Every built-in mode runs its manifest's example request for real.
#[test]
fn every_mode_runs_its_example() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[]);
    let catalog = zenmode::catalog::Catalog::builtin().unwrap();
    assert_eq!(catalog.len(), 19);
    for mode in catalog.modes() {
        let mut request = zenmode::catalog::describe::example_request(mode.manifest());
        // Examples name files of an imaginary project; use ours.
        for key in ["relevant_files", "absolute_file_paths", "files_checked"] {
            if request.get(key).is_some() {
                request[key] = json!([project.path("orders.py")]);
            }
        }
        if request.get("path").is_some() || request.get("working_directory_absolute_path").is_some()
        {
            for key in ["path", "working_directory_absolute_path"] {
                if request.get(key).is_some() {
                    request[key] = json!(project.path(""));
                }
            }
        }
        if mode.name() == "clink" {
            continue; // needs a CLI; covered above with a fake one
        }
        if mode.name() == "precommit" {
            git(project.dir.path(), &["init", "-q"]);
        }
        let result = execute(&mut client, mode.name(), request);
        let body = &result["structuredContent"];
        assert_ne!(result["isError"], true, "{}: {body}", mode.name());
    }
}

#[test]
fn progress_is_reported_and_cancellation_stops_a_stalled_model_call() {
    let fake = BackgroundFake::start(vec![Reply::Stall]);
    let project = Project::new();
    let mut client = project.serve(Some(&fake), &[("ZEN_MODEL_TIMEOUT_SECS", "60".to_owned())]);
    client.send(&json!({
        "jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {
            "_meta": {"progressToken": "p-77"},
            "name": "zen_execute",
            "arguments": {"mode": "chat", "request": {"prompt": "slow question",
                          "working_directory_absolute_path": project.path("")}}
        }
    }));
    let progress = client.wait_for(|m| m["method"] == "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "p-77");
    assert!(
        progress["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Waiting for")
    );

    // Cancel once the model call is really in flight.
    for _ in 0..100 {
        if !fake.fake.requests().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        fake.fake.requests().len(),
        1,
        "the call reached the provider"
    );
    let started = std::time::Instant::now();
    client.send(&json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 77, "reason": "user gave up"}
    }));
    // The session keeps serving, promptly, after the cancelled call.
    assert_eq!(client.tool_names().len(), 2);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // No retry after the cancel.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(fake.fake.requests().len(), 1);
    // Whatever rmcp does with the cancelled id, it is not a successful answer.
    assert!(
        client
            .stray
            .iter()
            .all(|m| m["id"] != 77 || m.get("result").is_none() || m["result"]["isError"] == true),
        "{:?}",
        client.stray
    );
}

#[test]
fn chat_sends_images_and_refuses_bad_ones() {
    let fake = BackgroundFake::start(Vec::new());
    let project = Project::new();
    // The 8-byte PNG signature is enough: the server checks type and size, not pixels.
    std::fs::write(project.dir.path().join("screen.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    std::fs::write(project.dir.path().join("notes.txt"), "not an image").unwrap();
    let mut client = project.serve(Some(&fake), &[]);
    let chat = |client: &mut Client, images: Value| {
        execute(
            client,
            "chat",
            json!({"prompt": "what is on screen?", "images": images, "model": "gpt-5",
                   "working_directory_absolute_path": project.path("")}),
        )
    };
    let reply = structured(
        &chat(
            &mut client,
            json!([project.path("screen.png"), "data:image/gif;base64,R0lGOA=="]),
        ),
        false,
    );
    assert_eq!(reply["images_sent"], 2, "{reply}");
    let content = &fake.fake.requests()[0].body["messages"][1]["content"];
    let urls: Vec<&str> = content
        .as_array()
        .expect("content parts")
        .iter()
        .filter_map(|part| part["image_url"]["url"].as_str())
        .collect();
    assert_eq!(
        urls,
        [
            "data:image/png;base64,iVBORw0KGgo=",
            "data:image/gif;base64,R0lGOA=="
        ]
    );

    // A FIFO named like an image must be refused at once, not read forever.
    #[cfg(unix)]
    {
        let fifo = project.dir.path().join("pipe.png");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let refused = structured(&chat(&mut client, json!([project.path("pipe.png")])), true);
        assert_eq!(refused["error"], "image", "{refused}");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("not a regular file"),
            "{refused}"
        );
    }
    for (image, kind) in [
        (project.path("notes.txt"), "image"),
        ("/etc/hostname".to_owned(), "file_access"),
        ("data:text/plain;base64,aGk=".to_owned(), "image"),
    ] {
        let refused = structured(&chat(&mut client, json!([image])), true);
        assert_eq!(refused["error"], kind, "{image}: {refused}");
    }
    assert_eq!(fake.fake.requests().len(), 1, "refused images send nothing");
}
