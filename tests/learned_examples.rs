//! Examples learned from use: a select followed by a successful call of an
//! upstream tool keeps the task as that tool's example, a correction
//! changes the next ranking, and `zenmode examples` lists and forgets them.

mod common;

use common::gateway::{Setup, execute, flaky};
use serde_json::{Value, json};

fn learned(setup: &Setup) -> Value {
    let (code, out, err) = setup.run(&["examples", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn recommended(client: &mut common::Client, task: &str) -> String {
    let reply = client.tool("zen_select_mode", json!({"task_description": task}));
    reply["structuredContent"]["mode"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

const TASK: &str = "tell me the tally of requests handled so far by the helper";

#[test]
fn a_correction_becomes_an_example_that_changes_the_next_ranking() {
    let setup = Setup::new(json!({"helper": flaky(&[])}));
    let mut client = setup.serve(&["--learn-examples", "on"]);
    let first = recommended(&mut client, TASK);
    // The session runs another tool than the one recommended: a correction.
    let wanted = if first == "helper__echo" {
        "helper__count"
    } else {
        "helper__echo"
    };
    let request = if wanted == "helper__echo" {
        json!({"text": "hi"})
    } else {
        json!({})
    };
    let ran = execute(&mut client, wanted, request);
    assert_ne!(ran["isError"], true, "{ran}");
    assert!(
        common::gateway::wait_until(std::time::Duration::from_secs(10), || {
            learned(&setup)
                .as_array()
                .is_some_and(|all| !all.is_empty())
        }),
        "nothing was learned"
    );
    let all = learned(&setup);
    assert_eq!(all[0]["mode"], wanted, "{all}");
    assert_eq!(all[0]["task"], TASK);
    assert_eq!(all[0]["correction"], true);
    client.finish();

    // From the next start the example ranks its tool first for that task.
    let mut client = setup.serve(&[]);
    assert_eq!(recommended(&mut client, TASK), wanted);
    client.finish();

    let (code, out, _) = setup.run(&["examples", "forget", "--server", "helper"]);
    assert_eq!(code, 0);
    assert!(out.contains("forgot 1"), "{out}");
    assert_eq!(learned(&setup), json!([]));
}

#[test]
fn nothing_is_learned_when_it_is_off_or_the_call_fails() {
    let setup = Setup::new(json!({"helper": flaky(&[])}));
    let mut client = setup.serve(&["--learn-examples", "off"]);
    recommended(&mut client, TASK);
    execute(&mut client, "helper__echo", json!({"text": "hi"}));
    client.finish();
    assert_eq!(learned(&setup), json!([]), "learned while off");
    let mut client = setup.serve(&["--learn-examples", "on"]);
    recommended(&mut client, TASK);
    // A call that fails teaches nothing; the retry that succeeds does, and
    // a later call with no select before it does not.
    let failed = execute(&mut client, "helper__echo", json!({"wrong": 1}));
    assert_eq!(failed["isError"], true, "{failed}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(learned(&setup), json!([]), "a failed call taught");
    execute(&mut client, "helper__echo", json!({"text": "hi"}));
    execute(&mut client, "helper__count", json!({}));
    client.finish();
    assert!(common::gateway::wait_until(
        std::time::Duration::from_secs(10),
        || {
            learned(&setup)
                .as_array()
                .is_some_and(|all| !all.is_empty())
        }
    ));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let all = learned(&setup);
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all[0]["mode"], "helper__echo", "{all}");
    let (code, _, err) = setup.run(&["examples", "forget"]);
    assert_ne!(code, 0);
    assert!(err.contains("--all"), "{err}");
}
