//! The `groups` strategy: progressive discovery. Each inactive group of
//! tools has an `activate_<group>` tool; activating it lists the group's
//! tools in full, and `deactivate` hides them again. zenmode's own modes are
//! grouped by category, imported tools by the server they come from; when a
//! server sorts its tools into several topics, each topic is a group inside
//! the server's, whose activator shows only while the server's group is
//! active. Sets of groups can be made mutually exclusive, so activating one
//! deactivates the others of its set.
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
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
};

pub const ACTIVATE_PREFIX: &str = "activate_";
pub const DEACTIVATE: &str = "deactivate";

const INSTRUCTIONS: &str = "Tools come in groups. Call activate_<group> for the group your task needs; its tools then appear in your list. Call deactivate with the group's name when you are done with it.";

struct Group {
    /// The group this one sits in; its activator shows only while the parent
    /// is active.
    parent: Option<String>,
    children: Vec<String>,
    activator: Value,
    /// The group's own tools (not its children's), in catalog order.
    tools: Vec<Value>,
}

pub struct Groups {
    groups: BTreeMap<String, Group>,
    deactivate: Value,
    exclusive: Vec<BTreeSet<String>>,
    hidden_tool_hints: bool,
    /// Tool name -> the group that holds it.
    group_of: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeactivateArgs {
    group: String,
}

/// How many tool names an activator's description spells out.
const NAMES_IN_ACTIVATOR: usize = 8;

/// A group name usable inside a tool name: lower case, `[a-z0-9_]`.
fn group_name(text: &str) -> String {
    let mut name = String::new();
    for c in text.trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else if !name.ends_with('_') && !name.is_empty() {
            name.push('_');
        }
    }
    let name = name.trim_end_matches('_');
    let name: String = name.chars().take(48).collect();
    if name.is_empty() {
        "other".to_owned()
    } else {
        name
    }
}

/// Where a mode belongs: zenmode's own modes by category; imported tools by
/// server, and, when the server groups its tools in more than one topic, by
/// topic inside the server.
fn placement(catalog: &Catalog) -> Vec<(String, Option<String>, String)> {
    let mut topics: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for mode in catalog.modes() {
        let manifest = mode.manifest();
        if let (Some(server), Some(topic)) = (&manifest.server, &manifest.topic) {
            topics
                .entry(group_name(server))
                .or_default()
                .insert(group_name(topic));
        }
    }
    catalog
        .modes()
        .iter()
        .map(|mode| {
            let manifest = mode.manifest();
            let (top, child) = match &manifest.server {
                None => (manifest.category.as_str().to_owned(), None),
                Some(server) => {
                    let server = group_name(server);
                    let split = topics.get(&server).is_some_and(|t| t.len() > 1);
                    let child = manifest
                        .topic
                        .as_deref()
                        .filter(|_| split)
                        .map(|topic| format!("{server}_{}", group_name(topic)));
                    (server, child)
                }
            };
            (top, child, mode.name().to_owned())
        })
        .collect()
}

fn activator(name: &str, what: String) -> Value {
    json!({
        "name": format!("{ACTIVATE_PREFIX}{name}"),
        "title": format!("Activate {name}"),
        "description": what,
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    })
}

/// "a, b, c and 4 more"
fn some_names(names: &[&str]) -> String {
    let shown = names
        .iter()
        .take(NAMES_IN_ACTIVATOR)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(NAMES_IN_ACTIVATOR) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

impl Groups {
    /// Errors name an exclusion set's group that does not exist.
    pub fn new(
        catalog: &Catalog,
        exclusive: &[Vec<String>],
        hidden_tool_hints: bool,
    ) -> Result<Self, String> {
        let mut members: BTreeMap<String, (Option<String>, Vec<Value>)> = BTreeMap::new();
        let mut group_of = BTreeMap::new();
        for (top, child, tool) in placement(catalog) {
            let Some(mode) = catalog.get(&tool) else {
                continue;
            };
            members.entry(top.clone()).or_default();
            let holder = match child {
                Some(child) => {
                    members.entry(child.clone()).or_default().0 = Some(top);
                    child
                }
                None => top,
            };
            if let Some((_, tools)) = members.get_mut(&holder) {
                tools.push(mode_tool(mode));
            }
            group_of.insert(tool, holder);
        }
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, (parent, _)) in &members {
            if let Some(parent) = parent {
                children
                    .entry(parent.clone())
                    .or_default()
                    .push(name.clone());
            }
        }
        let groups: BTreeMap<String, Group> = members
            .into_iter()
            .map(|(name, (parent, tools))| {
                let kids = children.remove(&name).unwrap_or_default();
                let tool_names: Vec<&str> =
                    tools.iter().filter_map(|t| t["name"].as_str()).collect();
                let mut what = String::new();
                if !tool_names.is_empty() {
                    what.push_str(&format!(
                        "Show the {} {name} tools: {}.",
                        tool_names.len(),
                        some_names(&tool_names)
                    ));
                }
                if !kids.is_empty() {
                    let kid_names: Vec<&str> = kids.iter().map(String::as_str).collect();
                    what.push_str(&format!(
                        "{}Show {name}'s {} tool groups: {}.",
                        if what.is_empty() { "" } else { " " },
                        kids.len(),
                        some_names(&kid_names)
                    ));
                }
                let group = Group {
                    activator: activator(&name, what),
                    parent,
                    children: kids,
                    tools,
                };
                (name, group)
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
                    groups
                        .iter()
                        .filter(|(_, g)| g.parent.is_none())
                        .map(|(name, _)| name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        let deactivate = json!({
            "name": DEACTIVATE,
            "title": "Deactivate a group",
            "description": "Hide an active group's tools (and its inner groups') again.",
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

    /// The groups to activate, outermost first, before `tool` is listed.
    pub fn activation_path(&self, tool: &str) -> Vec<String> {
        let mut path = self
            .group_of
            .get(tool)
            .map(|group| self.lineage(group))
            .unwrap_or_default();
        path.reverse();
        path
    }

    /// The group, then its parent, and so on up.
    fn lineage(&self, group: &str) -> Vec<String> {
        let mut chain = vec![group.to_owned()];
        while let Some(parent) = self
            .groups
            .get(chain.last().unwrap())
            .and_then(|g| g.parent.clone())
        {
            chain.push(parent);
        }
        chain
    }

    /// Whether the group's tools are visible: it and every group above it active.
    fn is_open(&self, active: &BTreeSet<String>, group: &str) -> bool {
        self.lineage(group).iter().all(|g| active.contains(g))
    }

    /// A group and everything inside it.
    fn subtree(&self, group: &str) -> Vec<String> {
        let mut all = vec![group.to_owned()];
        let mut index = 0;
        while index < all.len() {
            if let Some(g) = self.groups.get(&all[index]) {
                all.extend(g.children.iter().cloned());
            }
            index += 1;
        }
        all
    }

    fn activate(&self, session: SessionView<'_>, group: &str) -> Outcome {
        let members = &self.groups[group];
        let inner: Vec<String> = members
            .children
            .iter()
            .map(|c| format!("{ACTIVATE_PREFIX}{c}"))
            .collect();
        if !session.list_may_change {
            let mut reply = json!({
                "group": group,
                "tools": members.tools,
                "note": "This session's tool list is fixed; call these tools by name with the schemas above.",
            });
            if !inner.is_empty() {
                reply["inner_groups"] = json!(inner);
            }
            return Outcome::ok(reply);
        }
        let lineage = self.lineage(group);
        let mut deactivated = Vec::new();
        let changed = session.state.update(|active| {
            for member in &lineage {
                for set in self.exclusive.iter().filter(|set| set.contains(member)) {
                    for other in set.iter().filter(|other| !lineage.contains(other)) {
                        for hidden in self.subtree(other) {
                            if active.remove(&hidden) && &hidden == other {
                                deactivated.push(other.clone());
                            }
                        }
                    }
                }
            }
            active.extend(lineage.iter().cloned());
        });
        let mut reply = json!({
            "group": group,
            "activated": changed,
            "tools": members.tools.iter().map(|t| t["name"].clone()).collect::<Vec<_>>(),
            "note": "Your tool list changed; the group's tools are listed with their schemas.",
        });
        if !inner.is_empty() {
            reply["inner_groups"] = json!(inner);
        }
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
        let hidden = self.subtree(group);
        let changed = session.state.update(|active| {
            for g in &hidden {
                active.remove(g);
            }
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
        let top = self.groups.values().filter(|g| g.parent.is_none());
        if !session.list_may_change {
            return Cow::Owned(top.map(|g| g.activator.clone()).collect());
        }
        let active = session.state.active();
        let mut tools: Vec<Value> = Vec::new();
        for (name, group) in &self.groups {
            let parent_open = group
                .parent
                .as_deref()
                .is_none_or(|parent| self.is_open(&active, parent));
            if !parent_open {
                continue;
            }
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
        if session.list_may_change && !self.is_open(&session.state.active(), group) {
            if !self.hidden_tool_hints {
                return Err(UnknownTool(name.to_owned()));
            }
            return Ok(Outcome::error(json!({
                "error": "tool_hidden",
                "message": format!("{name} belongs to group {group:?}, which is not active; call {ACTIVATE_PREFIX}{group} first."),
                "activator": format!("{ACTIVATE_PREFIX}{group}"),
                "suggestions": suggestions(&engine.catalog(), name),
            })));
        }
        call_mode_by_name(engine, name, arguments, call).await
    }
}
