//! A request that chains steps over servers' tools ("list my notes folder
//! and read the two newest files, then summarize them") is one `script`
//! call rather than a tool per step: select offers `script` among the
//! alternatives then, whatever the ranking put first.

use serde_json::{Map, Value, json};

use crate::catalog::Catalog;

/// The mode that runs several servers' tools in one call.
const SCRIPT_MODE: &str = "script";

/// Words that join one step to the next.
const STEP_JOINERS: &[&str] = &[
    " then ",
    ", then",
    " after that",
    " afterwards",
    " followed by ",
    " and finally ",
    " and for each ",
    " for each of ",
];

/// Whether `task` asks for several steps in a row.
pub fn is_multi_step(task: &str) -> bool {
    let task = format!(" {} ", task.to_lowercase());
    STEP_JOINERS.iter().any(|joiner| task.contains(joiner))
}

/// Adds `script` to the reply's alternatives when the task has several
/// steps and the reply offers servers' tools, unless it is there already.
pub fn offer_script(reply: &mut Value, catalog: &Catalog, task: &str) {
    let Some(script) = catalog.get(SCRIPT_MODE) else {
        return;
    };
    let Some(fields) = reply.as_object_mut() else {
        return;
    };
    if !is_multi_step(task) || fields.get("mode").and_then(Value::as_str) == Some(SCRIPT_MODE) {
        return;
    }
    let offered = |fields: &Map<String, Value>| -> Vec<String> {
        let first = fields
            .get("mode")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let rest = fields
            .get("alternatives")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.get("mode").and_then(Value::as_str).map(str::to_owned));
        first.into_iter().chain(rest).collect()
    };
    let names = offered(fields);
    if names.iter().any(|name| name == SCRIPT_MODE) {
        return;
    }
    let over_servers = names
        .iter()
        .filter_map(|name| catalog.get(name))
        .any(|mode| mode.manifest().server.is_some());
    if !over_servers {
        return;
    }
    let entry = json!({
        "mode": SCRIPT_MODE,
        "summary": script.manifest().summary,
        "required": script.manifest().required(),
        "reason": "the request has several steps over servers' tools: one script runs them all in one call",
    });
    match fields
        .entry("alternatives")
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        Value::Array(list) => list.insert(0, entry),
        other => *other = Value::Array(vec![entry]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_joined_in_a_row_are_told_from_one_step() {
        assert!(is_multi_step(
            "list my notes folder and read the two newest files, then summarize them"
        ));
        assert!(is_multi_step("fetch the page; after that save it"));
        assert!(!is_multi_step(
            "read the two newest files in my notes folder"
        ));
        assert!(!is_multi_step("what happened then?"));
    }
}
