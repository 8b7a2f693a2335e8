//! The two meta tools as data (names and definitions), and the replies
//! both give: an unknown or quarantined mode, and arguments that do not
//! fit the tool.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::super::meta_tools;
use crate::engine::{Outcome, UnknownMode};

pub const SELECT_MODE: &str = "zen_select_mode";
pub const EXECUTE: &str = "zen_execute";

/// The two meta tools, defined as data beside this file.
pub(super) static META_TOOLS: LazyLock<Vec<Value>> =
    LazyLock::new(|| meta_tools(include_str!("meta_tools.json")));

/// The reply for a mode name that cannot run: a quarantined upstream tool
/// says so; an unknown name gets a few close names and the catalog's size,
/// never the whole list (behind a thousand upstream tools that list alone
/// would cost a model more than ten thousand tokens).
pub fn unknown_mode(unknown: UnknownMode) -> Outcome {
    let UnknownMode {
        name,
        closest,
        mode_count,
        quarantined,
    } = unknown;
    if let Some(message) = quarantined {
        return Outcome::error(json!({
            "error": "quarantined",
            "message": message,
            "mode": name,
        }));
    }
    let hint = match closest.first() {
        Some(best) => format!(" Did you mean {best:?}?"),
        None => String::new(),
    };
    Outcome::error(json!({
        "error": "unknown_mode",
        "message": format!("There is no mode named {name:?} among the {mode_count} modes.{hint} Call {SELECT_MODE} with your task to find the right one."),
        "closest": closest,
        "mode_count": mode_count,
    }))
}

/// Parses meta-tool arguments into `T`, or explains what was wrong.
pub(super) fn parse_arguments<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, Outcome> {
    super::super::parse_arguments(&META_TOOLS, tool, arguments)
}
