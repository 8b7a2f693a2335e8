//! The `lazy` strategy: one `manage_tools` tool lists every tool in a line
//! and enables or disables them; enabled tools join the session's list with
//! their full schemas, and the client is told the list changed.
//!
//! Only sessions that may see their list change get that behaviour. For a
//! 2026-07-28 session the list stays `manage_tools` alone, `enable` answers
//! with the tools' full definitions, and the tools are callable by name.

use std::{borrow::Cow, collections::BTreeSet};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    SessionView, Strategy, UnknownTool, call_mode_by_name, mode_tool, one_line, parse_arguments,
    suggestions,
};
use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
};

pub const MANAGE_TOOLS: &str = "manage_tools";

const INSTRUCTIONS: &str = "Tools start hidden. Call manage_tools with action \"list\" to see them, then \"enable\" the ones your task needs; they appear in your tool list. \"disable\" hides them again.";

pub struct Lazy {
    manage_tools: Vec<Value>,
    /// Every mode as a tool, in catalog order.
    tools: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    List,
    Enable,
    Disable,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManageArgs {
    action: Action,
    /// Design 000's name for the list.
    #[serde(default)]
    tools: Names,
    /// zenmode's first name for it, still accepted.
    #[serde(default)]
    names: Names,
}

/// One name or several.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum Names {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl Names {
    fn into_vec(self) -> Vec<String> {
        match self {
            Names::None => Vec::new(),
            Names::One(name) => vec![name],
            Names::Many(names) => names,
        }
    }
}

impl Lazy {
    pub fn new(catalog: &Catalog) -> Self {
        let manage_tools = vec![json!({
            "name": MANAGE_TOOLS,
            "title": "Enable or disable tools",
            "description": "List every available tool in one line each, or enable / disable tools by name. Enabled tools join your tool list with their full schemas.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "enable", "disable"], "description": "list, enable or disable"},
                    "tools": {
                        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                        "description": "Tool name(s) to enable or disable"
                    },
                    "names": {"description": "Same as tools"}
                },
                "required": ["action"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
        })];
        Lazy {
            manage_tools,
            tools: catalog.modes().iter().map(|mode| mode_tool(mode)).collect(),
        }
    }

    fn manage(&self, engine: &Engine, session: SessionView<'_>, args: ManageArgs) -> Outcome {
        let catalog = engine.catalog();
        let mut names = args.tools.into_vec();
        names.extend(args.names.into_vec());
        if matches!(args.action, Action::List) {
            let tools: Vec<Value> = catalog
                .modes()
                .iter()
                .map(|mode| {
                    json!({
                        "name": mode.name(),
                        "description": one_line(&mode.manifest().summary, 120),
                        "enabled": session.state.is_active(mode.name()),
                    })
                })
                .collect();
            return Outcome::ok(json!({"tools": tools, "total": catalog.len()}));
        }
        if names.is_empty() {
            return Outcome::failure(
                "invalid_arguments",
                "tools is required for enable and disable: one tool name or a list",
            );
        }
        let unknown: Vec<Value> = names
            .iter()
            .filter(|name| catalog.get(name).is_none())
            .map(|name| json!({"name": name, "suggestions": suggestions(&catalog, name)}))
            .collect();
        if !unknown.is_empty() {
            // Nothing changes when any name is wrong.
            return Outcome::error(json!({
                "error": "unknown_tool",
                "message": "Some names are not tools; nothing was changed. Call manage_tools with action \"list\" to see them.",
                "unknown": unknown,
            }));
        }
        // Aliases (`security`) stand for the mode's own name.
        let wanted: BTreeSet<String> = names
            .iter()
            .filter_map(|name| catalog.get(name))
            .map(|mode| mode.name().to_owned())
            .collect();
        let enable = matches!(args.action, Action::Enable);
        let changed = session.state.update(|active| {
            if enable {
                active.extend(wanted.iter().cloned());
            } else {
                active.retain(|name| !wanted.contains(name));
            }
        });
        let enabled: Vec<String> = session.state.active().into_iter().collect();
        let mut reply = Map::new();
        reply.insert("enabled".into(), json!(enabled));
        reply.insert("changed".into(), json!(changed));
        if session.list_may_change {
            reply.insert(
                "note".into(),
                json!(if changed {
                    "Your tool list changed; the enabled tools are listed with their schemas."
                } else {
                    "Nothing changed."
                }),
            );
        } else if enable {
            // The list cannot change for this session: hand over the definitions.
            let definitions: Vec<Value> = wanted
                .iter()
                .filter_map(|name| self.tool(name).cloned())
                .collect();
            reply.insert("tools".into(), Value::Array(definitions));
            reply.insert(
                "note".into(),
                json!("This session's tool list is fixed; call these tools by name with the schemas above."),
            );
        }
        Outcome::ok(Value::Object(reply))
    }

    fn tool(&self, name: &str) -> Option<&Value> {
        self.tools.iter().find(|tool| tool["name"] == name)
    }
}

#[async_trait]
impl Strategy for Lazy {
    fn name(&self) -> &'static str {
        "lazy"
    }

    fn tools(&self, session: SessionView<'_>) -> Cow<'_, [Value]> {
        if !session.list_may_change {
            return Cow::Borrowed(&self.manage_tools);
        }
        let active = session.state.active();
        if active.is_empty() {
            return Cow::Borrowed(&self.manage_tools);
        }
        let enabled = self
            .tools
            .iter()
            .filter(|tool| tool["name"].as_str().is_some_and(|n| active.contains(n)));
        Cow::Owned(self.manage_tools.iter().chain(enabled).cloned().collect())
    }

    fn is_dynamic(&self) -> bool {
        true
    }

    fn instructions(&self) -> &'static str {
        INSTRUCTIONS
    }

    async fn call(
        &self,
        engine: &Engine,
        session: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        if name == MANAGE_TOOLS {
            return Ok(
                match parse_arguments::<ManageArgs>(&self.manage_tools, name, arguments) {
                    Ok(args) => self.manage(engine, session, args),
                    Err(outcome) => outcome,
                },
            );
        }
        let catalog = engine.catalog();
        let Some(mode) = catalog.get(name) else {
            return Err(UnknownTool(name.to_owned()));
        };
        if session.list_may_change && !session.state.is_active(mode.name()) {
            return Ok(Outcome::failure(
                "tool_not_enabled",
                format!(
                    "{name} is not enabled; call {MANAGE_TOOLS} with {{\"action\": \"enable\", \"tools\": [\"{name}\"]}} first"
                ),
            ));
        }
        call_mode_by_name(engine, name, arguments, call).await
    }
}
