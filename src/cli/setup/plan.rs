//! Where a client's servers are (for Claude Code: three scopes), and what
//! `--move-servers` does with each of them.
//!
//! Claude Code keeps servers in three places, and a plain `claude mcp add`
//! writes the first: the *local* scope (`projects.<dir>.mcpServers` in
//! `~/.claude.json`, for the folder it runs in), the *project* scope
//! (`.mcp.json` in that folder) and the *user* scope (`mcpServers` in
//! `~/.claude.json`). The others keep theirs in one file. Each moved server
//! remembers its scope, so `--undo` puts it back where it was.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::client::ClientKind;
use crate::gateway::config::{self, UpstreamConfig};

/// One of a client's places for servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Claude Code's servers for one folder, in `~/.claude.json`.
    Local,
    /// A folder's `.mcp.json`, which Claude Code reads there.
    Project,
    /// The client's servers for every folder (the only scope of the others).
    User,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// The servers of one scope as they are now.
#[derive(Debug, Clone)]
pub struct Source {
    pub scope: Scope,
    /// The folder a local or project scope belongs to (`None` for user).
    pub folder: Option<PathBuf>,
    pub servers: Map<String, Value>,
}

impl Source {
    /// "local scope of /work/app", "user scope".
    pub fn describe(&self) -> String {
        describe(self.scope, self.folder.as_deref())
    }
}

pub fn describe(scope: Scope, folder: Option<&Path>) -> String {
    match folder {
        Some(folder) => format!("{} scope of {}", scope.name(), folder.display()),
        None => format!("{} scope", scope.name()),
    }
}

/// The scopes of `client` that `--move-servers` reads, most specific first
/// (a local server shadows a project one of the same name, which shadows a
/// user one). `document` is the client's own file; `folder` the one setup
/// runs in; `project_file` the `.mcp.json` there, read by the caller.
pub fn sources(
    client: ClientKind,
    document: &Value,
    folder: &Path,
    project_file: Option<&Value>,
) -> Vec<Source> {
    let servers_at = |value: Option<&Value>| {
        value
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let user = Source {
        scope: Scope::User,
        folder: None,
        servers: servers_at(document.get(client.servers_key())),
    };
    if client != ClientKind::ClaudeCode {
        return vec![user];
    }
    let local = document
        .get("projects")
        .and_then(|projects| projects.get(folder.to_str()?))
        .and_then(|project| project.get("mcpServers"));
    vec![
        Source {
            scope: Scope::Local,
            folder: Some(folder.to_owned()),
            servers: servers_at(local),
        },
        Source {
            scope: Scope::Project,
            folder: Some(folder.to_owned()),
            servers: servers_at(project_file.and_then(|doc| doc.get("mcpServers"))),
        },
        user,
    ]
}

/// One server leaving the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Move {
    pub name: String,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<PathBuf>,
    /// The entry as it was in the client, put back by `--undo`.
    pub entry: Value,
}

impl Move {
    pub fn describe(&self) -> String {
        describe(self.scope, self.folder.as_deref())
    }
}

/// What `--move-servers` will do with each of the client's servers.
#[derive(Debug, Default)]
pub struct Plan {
    /// To add to the gateway (then removed from the client).
    pub to_add: Map<String, Value>,
    /// Servers to take out of the client, each from its scope; those not in
    /// `to_add` are in the gateway already, as they are.
    pub moves: Vec<Move>,
    /// Left in the client, and why.
    pub kept: Vec<(String, String)>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}

pub fn plan_moves(sources: &[Source], gateway: &Map<String, Value>) -> Plan {
    let mut plan = Plan::default();
    // The entry each name moves with, from the most specific scope.
    let mut chosen: Map<String, Value> = Map::new();
    for source in sources {
        for (name, entry) in &source.servers {
            let label = format!("{name} ({})", source.describe());
            if let Some(first) = chosen.get(name) {
                if first == entry {
                    plan.moves.push(a_move(source, name, entry));
                } else {
                    plan.kept.push((
                        label,
                        "a different server of this name in a more specific scope moves instead"
                            .to_owned(),
                    ));
                }
                continue;
            }
            let checked: Result<UpstreamConfig, String> = config::parse_one(name, entry);
            match checked {
                Err(problem) => plan
                    .kept
                    .push((label, format!("zenmode cannot run it: {problem}"))),
                Ok(checked) if config::runs_zenmode(&checked).is_some() => {}
                Ok(_) if gateway.get(name) == Some(entry) => {
                    chosen.insert(name.clone(), entry.clone());
                    plan.moves.push(a_move(source, name, entry));
                }
                Ok(_) if gateway.contains_key(name) => plan.kept.push((
                    label,
                    "zenmode's gateway has another server of this name".to_owned(),
                )),
                Ok(_) => {
                    chosen.insert(name.clone(), entry.clone());
                    plan.to_add.insert(name.clone(), entry.clone());
                    plan.moves.push(a_move(source, name, entry));
                }
            }
        }
    }
    plan
}

fn a_move(source: &Source, name: &str, entry: &Value) -> Move {
    Move {
        name: name.to_owned(),
        scope: source.scope,
        folder: source.folder.clone(),
        entry: entry.clone(),
    }
}

/// Whether two entries start the same server, once the defaults a client
/// fills in (`"type": "stdio"`, empty `args` and `env`) are set aside.
pub fn same_entry(a: &Value, b: &Value) -> bool {
    normalized(a) == normalized(b)
}

fn normalized(entry: &Value) -> Value {
    let Some(fields) = entry.as_object() else {
        return entry.clone();
    };
    let mut fields = fields.clone();
    if fields.get("type").and_then(Value::as_str) == Some("stdio") {
        fields.shift_remove("type");
    }
    for key in ["args", "env"] {
        let empty = match fields.get(key) {
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            fields.shift_remove(key);
        }
    }
    fields.sort_keys();
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(scope: Scope, servers: Value) -> Source {
        Source {
            scope,
            folder: (scope != Scope::User).then(|| PathBuf::from("/p")),
            servers: servers.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn every_scope_moves_and_remembers_where_it_was() {
        let sources = [
            source(Scope::Local, json!({"a": {"command": "a"}})),
            source(Scope::Project, json!({"b": {"command": "b"}})),
            source(Scope::User, json!({"c": {"command": "c"}})),
        ];
        let plan = plan_moves(&sources, &Map::new());
        let wheres: Vec<(&str, Scope)> = plan
            .moves
            .iter()
            .map(|m| (m.name.as_str(), m.scope))
            .collect();
        assert_eq!(
            wheres,
            [
                ("a", Scope::Local),
                ("b", Scope::Project),
                ("c", Scope::User)
            ]
        );
        assert_eq!(plan.to_add.len(), 3);
    }

    #[test]
    fn a_shadowed_namesake_stays_and_a_twin_moves_too() {
        let sources = [
            source(
                Scope::Local,
                json!({"a": {"command": "a"}, "t": {"command": "t"}}),
            ),
            source(
                Scope::User,
                json!({"a": {"command": "other"}, "t": {"command": "t"}}),
            ),
        ];
        let plan = plan_moves(&sources, &Map::new());
        assert_eq!(plan.to_add.len(), 2);
        assert_eq!(plan.moves.len(), 3, "{plan:?}");
        assert_eq!(plan.kept.len(), 1);
        assert!(plan.kept[0].0.starts_with("a (user scope"), "{plan:?}");
    }

    #[test]
    fn client_defaults_do_not_make_entries_differ() {
        assert!(same_entry(
            &json!({"type": "stdio", "command": "x", "args": [], "env": {}}),
            &json!({"command": "x"})
        ));
        assert!(!same_entry(
            &json!({"command": "x", "args": ["-v"]}),
            &json!({"command": "x"})
        ));
    }
}
