//! The MCP tools this server lists and answers, one file per tool.
//!
//! - `zen_select_mode` ([`select_mode`]): rank modes for a task, or describe one.
//! - `zen_execute` ([`execute`]): validate a request and run a mode's executor.
//! - every mode under its own name: the same path as `zen_execute`.
//!
//! [`ToolCall`] is the single dispatch point; [`tool_list`] builds the exact
//! JSON of `tools/list` from the meta-tool definitions and the manifests.

pub mod execute;
pub mod select_mode;

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::{
    catalog::{Catalog, Mode},
    engine::Engine,
    services::CallContext,
};

pub const SELECT_MODE: &str = "zen_select_mode";
pub const EXECUTE: &str = "zen_execute";

/// The two meta tools, defined as data beside this file.
static META_TOOLS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("meta_tools.json")).expect("meta_tools.json is valid JSON")
});

/// Which tools `tools/list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The two meta tools (plus pinned modes): the default.
    Optimized,
    /// Every mode as its own tool, as the original suite listed them.
    Full,
}

impl Listing {
    pub fn as_str(self) -> &'static str {
        match self {
            Listing::Optimized => "optimized",
            Listing::Full => "full",
        }
    }
}

/// The `tools/list` entry for a mode: everything comes from its manifest.
pub fn mode_tool(mode: &Mode) -> Value {
    let manifest = mode.manifest();
    let mut tool = Map::new();
    tool.insert("name".into(), json!(manifest.name));
    tool.insert("title".into(), json!(manifest.title));
    tool.insert("description".into(), json!(manifest.description));
    tool.insert("inputSchema".into(), mode.schema().clone());
    if !manifest.annotations.is_empty() {
        tool.insert(
            "annotations".into(),
            Value::Object(manifest.annotations.clone()),
        );
    }
    Value::Object(tool)
}

/// The exact `tools/list` entries for a listing; `pinned` modes join the optimized list.
///
/// Callers check that pinned names exist ([`Engine::new`] does).
pub fn tool_list(catalog: &Catalog, listing: Listing, pinned: &[String]) -> Vec<Value> {
    match listing {
        Listing::Optimized => META_TOOLS
            .iter()
            .cloned()
            .chain(
                pinned
                    .iter()
                    .filter_map(|name| catalog.get(name))
                    .map(|mode| mode_tool(mode)),
            )
            .collect(),
        Listing::Full => catalog.modes().iter().map(|mode| mode_tool(mode)).collect(),
    }
}

/// What a client hands the model: `[{name, description, input_schema}]`.
pub fn model_facing(tools: &[Value]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool["name"],
                    "description": tool["description"],
                    "input_schema": tool["inputSchema"],
                })
            })
            .collect(),
    )
}

/// The answer to one tool call: a JSON body, flagged as an error or not.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub is_error: bool,
    pub body: Value,
}

impl ToolOutcome {
    pub fn ok(body: Value) -> Self {
        ToolOutcome {
            is_error: false,
            body,
        }
    }

    pub fn error(body: Value) -> Self {
        ToolOutcome {
            is_error: true,
            body,
        }
    }

    /// An error body with the usual `error` / `message` keys.
    pub fn failure(kind: &str, message: impl Into<String>) -> Self {
        Self::error(json!({"error": kind, "message": message.into()}))
    }
}

/// A parsed tool call: the one place tool names are dispatched.
#[derive(Debug)]
pub enum ToolCall {
    SelectMode(Map<String, Value>),
    Execute(Map<String, Value>),
    /// A mode called under its own name; the arguments are its request.
    Mode {
        name: String,
        request: Map<String, Value>,
    },
}

impl ToolCall {
    /// `None` when no tool has that name.
    pub fn parse(engine: &Engine, name: &str, arguments: Map<String, Value>) -> Option<Self> {
        match name {
            SELECT_MODE => Some(ToolCall::SelectMode(arguments)),
            EXECUTE => Some(ToolCall::Execute(arguments)),
            _ if engine.catalog().get(name).is_some() => Some(ToolCall::Mode {
                name: name.to_owned(),
                request: arguments,
            }),
            _ => None,
        }
    }

    pub async fn run(self, engine: &Engine, call: &CallContext) -> ToolOutcome {
        match self {
            ToolCall::SelectMode(arguments) => select_mode::call(engine, arguments),
            ToolCall::Execute(arguments) => execute::call(engine, arguments, call).await,
            ToolCall::Mode { name, request } => {
                engine
                    .execute(&name, Value::Object(request), None, call)
                    .await
            }
        }
    }
}

/// The reply for a mode name nobody defined: the nearest names and the full list.
pub fn unknown_mode(catalog: &Catalog, name: &str) -> ToolOutcome {
    let closest = catalog.closest_names(name, 3);
    let hint = match closest.first() {
        Some(best) => format!(" Did you mean {best:?}?"),
        None => String::new(),
    };
    ToolOutcome::error(json!({
        "error": "unknown_mode",
        "message": format!("There is no mode named {name:?}.{hint} Call zen_select_mode with your task to find the right one."),
        "closest": closest,
        "modes": catalog.names().collect::<Vec<_>>(),
    }))
}

/// Parses meta-tool arguments into `T`, or explains what was wrong.
fn parse_arguments<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, ToolOutcome> {
    serde_json::from_value(Value::Object(arguments)).map_err(|e| {
        let schema = META_TOOLS
            .iter()
            .find(|t| t["name"] == tool)
            .map(|t| t["inputSchema"].clone())
            .unwrap_or(Value::Null);
        ToolOutcome::error(json!({
            "error": "invalid_arguments",
            "message": format!("{tool}: {e}"),
            "input_schema": schema,
        }))
    })
}
