//! The `groups` strategy: progressive discovery. Each inactive group of
//! tools has an `activate_<group>` tool; activating it lists the group's
//! tools in full, and `deactivate` hides them again. Groups are the mode
//! categories; sets of groups can be made mutually exclusive, so activating
//! one deactivates the others of its set.
//!
//! A tool of an inactive group is hidden: calling it answers "tool not
//! found", or, with hints on, an error naming the activator to call.
//! For a 2026-07-28 session the list cannot change: it holds every
//! activator, `activate_<group>` answers with the group's definitions, and
//! every tool is callable by name.

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet},
};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    SessionView, Strategy, UnknownTool, call_mode_by_name, mode_tool, parse_arguments, suggestions,
};
use crate::{
    catalog::Catalog,
    engine::{Engine, Outcome},
    services::CallContext,
};

pub const ACTIVATE_PREFIX: &str = "activate_";
pub const DEACTIVATE: &str = "deactivate";

const INSTRUCTIONS: &str = "Tools come in groups. Call activate_<group> for the group your task needs; its tools then appear in your list. Call deactivate with the group's name when you are done with it.";

struct Group {
    activator: Value,
    /// The group's tools, in catalog order.
    tools: Vec<Value>,
}

pub struct Groups {
    groups: BTreeMap<String, Group>,
    deactivate: Value,
    exclusive: Vec<BTreeSet<String>>,
    hidden_tool_hints: bool,
    /// Tool name -> its group.
    group_of: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeactivateArgs {
    group: String,
}

impl Groups {
    /// Errors name an exclusion set's group that does not exist.
    pub fn new(
        catalog: &Catalog,
        exclusive: &[Vec<String>],
        hidden_tool_hints: bool,
    ) -> Result<Self, String> {
        let mut members: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut group_of = BTreeMap::new();
        for mode in catalog.modes() {
            let group = mode.manifest().category.as_str().to_owned();
            group_of.insert(mode.name().to_owned(), group.clone());
            members.entry(group).or_default().push(mode_tool(mode));
        }
        let groups: BTreeMap<String, Group> = members
            .into_iter()
            .map(|(name, tools)| {
                let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
                let activator = json!({
                    "name": format!("{ACTIVATE_PREFIX}{name}"),
                    "title": format!("Activate the {name} tools"),
                    "description": format!("Show the {} {name} tools: {}.", names.len(), names.join(", ")),
                    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                    "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
                });
                (name, Group { activator, tools })
            })
            .collect();
        let exclusive: Vec<BTreeSet<String>> = exclusive
            .iter()
            .map(|set| set.iter().map(|g| g.trim().to_owned()).collect())
            .collect();
        for group in exclusive.iter().flatten() {
            if !groups.contains_key(group) {
                return Err(format!(
                    "exclusive groups name {group:?}, which is not a group (groups: {})",
                    groups.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let deactivate = json!({
            "name": DEACTIVATE,
            "title": "Deactivate a group",
            "description": "Hide an active group's tools again.",
            "inputSchema": {
                "type": "object",
                "properties": {"group": {"type": "string", "description": "The group's name"}},
                "required": ["group"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
        });
        Ok(Groups {
            groups,
            deactivate,
            exclusive,
            hidden_tool_hints,
            group_of,
        })
    }

    fn activate(&self, session: SessionView<'_>, group: &str) -> Outcome {
        let members = &self.groups[group];
        if !session.list_may_change {
            return Outcome::ok(json!({
                "group": group,
                "tools": members.tools,
                "note": "This session's tool list is fixed; call these tools by name with the schemas above.",
            }));
        }
        let mut deactivated = Vec::new();
        let changed = session.state.update(|active| {
            for set in self.exclusive.iter().filter(|set| set.contains(group)) {
                for other in set.iter().filter(|other| *other != group) {
                    if active.remove(other) {
                        deactivated.push(other.clone());
                    }
                }
            }
            active.insert(group.to_owned());
        });
        let mut reply = json!({
            "group": group,
            "activated": changed,
            "tools": members.tools.iter().map(|t| t["name"].clone()).collect::<Vec<_>>(),
            "note": "Your tool list changed; the group's tools are listed with their schemas.",
        });
        if !deactivated.is_empty() {
            reply["deactivated"] = json!(deactivated);
        }
        Outcome::ok(reply)
    }

    fn deactivate(&self, session: SessionView<'_>, args: DeactivateArgs) -> Outcome {
        let group = args.group.trim();
        if !self.groups.contains_key(group) {
            return self.unknown_group(group);
        }
        let changed = session.state.update(|active| {
            active.remove(group);
        });
        Outcome::ok(json!({"group": group, "deactivated": changed}))
    }

    fn unknown_group(&self, group: &str) -> Outcome {
        let groups: Vec<&String> = self.groups.keys().collect();
        let closest = groups
            .iter()
            .min_by_key(|name| strsim::levenshtein(name, group))
            .map(|name| format!(" Did you mean {name:?}?"))
            .unwrap_or_default();
        Outcome::error(json!({
            "error": "unknown_group",
            "message": format!("There is no group {group:?}.{closest}"),
            "groups": groups,
        }))
    }
}

#[async_trait]
impl Strategy for Groups {
    fn name(&self) -> &'static str {
        "groups"
    }

    fn tools(&self, session: SessionView<'_>) -> Cow<'_, [Value]> {
        if !session.list_may_change {
            return Cow::Owned(self.groups.values().map(|g| g.activator.clone()).collect());
        }
        let active = session.state.active();
        let mut tools: Vec<Value> = Vec::new();
        for (name, group) in &self.groups {
            if active.contains(name) {
                tools.extend(group.tools.iter().cloned());
            } else {
                tools.push(group.activator.clone());
            }
        }
        if !active.is_empty() {
            tools.push(self.deactivate.clone());
        }
        Cow::Owned(tools)
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
        if let Some(group) = name.strip_prefix(ACTIVATE_PREFIX)
            && self.groups.contains_key(group)
        {
            return Ok(self.activate(session, group));
        }
        if name == DEACTIVATE {
            let deactivate = std::slice::from_ref(&self.deactivate);
            return Ok(match parse_arguments(deactivate, name, arguments) {
                Ok(args) => self.deactivate(session, args),
                Err(outcome) => outcome,
            });
        }
        let Some(group) = self.group_of.get(name) else {
            return Err(UnknownTool(name.to_owned()));
        };
        if session.list_may_change && !session.state.is_active(group) {
            if !self.hidden_tool_hints {
                return Err(UnknownTool(name.to_owned()));
            }
            return Ok(Outcome::error(json!({
                "error": "tool_hidden",
                "message": format!("{name} belongs to group {group:?}, which is not active; call {ACTIVATE_PREFIX}{group} first."),
                "activator": format!("{ACTIVATE_PREFIX}{group}"),
                "suggestions": suggestions(engine.catalog(), name),
            })));
        }
        call_mode_by_name(engine, name, arguments, call).await
    }
}
