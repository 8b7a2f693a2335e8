//! The tool surface: how the catalog is shown to MCP clients.
//!
//! A [`Strategy`] decides which tools `tools/list` holds and maps a call to
//! each of them onto the engine. One file per strategy:
//! - [`zen`]: the two meta tools `zen_select_mode` and `zen_execute`, plus
//!   any pinned modes (the default);
//! - [`full`]: every mode as its own tool, as the original suite listed them.
//!
//! The surface knows nothing about servers or transports; the server above
//! asks it for the list and hands it each call.

pub mod full;
pub mod zen;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::{
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome},
    services::{CallContext, Presentation},
};

/// A tool name the strategy does not list or answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool {0:?}")]
pub struct UnknownTool(pub String);

/// One way of presenting the catalog as MCP tools.
#[async_trait]
pub trait Strategy: Send + Sync {
    /// The name `version` and `zenmode tokens` report.
    fn name(&self) -> &'static str;

    /// The exact `tools/list` entries; fixed for the life of the process.
    fn tools(&self) -> &[Value];

    /// Server instructions for clients that show them to the model.
    fn instructions(&self) -> &'static str;

    /// Answers a `tools/call`; `Err` when no tool has that name.
    async fn call(
        &self,
        engine: &Engine,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool>;

    /// The listed tool names, in list order.
    fn tool_names(&self) -> Vec<&str> {
        self.tools()
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect()
    }
}

/// The strategies this build offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyKind {
    /// The two meta tools (plus pinned modes): the default.
    Zen,
    /// Every mode as its own tool.
    Full,
}

impl StrategyKind {
    /// Every strategy, in the order `zenmode tokens` prints them.
    pub const ALL: [StrategyKind; 2] = [StrategyKind::Zen, StrategyKind::Full];

    /// A strategy of this kind over `catalog`.
    ///
    /// `pinned` modes join the zen list as native tools; errors name a pinned
    /// mode that does not exist.
    pub fn over(self, catalog: &Catalog, pinned: &[String]) -> Result<Arc<dyn Strategy>, String> {
        Ok(match self {
            StrategyKind::Zen => Arc::new(zen::Zen::new(catalog, pinned)?),
            StrategyKind::Full => Arc::new(full::Full::new(catalog)),
        })
    }
}

/// Builds the strategy that serves the engine's catalog and records it as
/// the process's presentation (which `version` reports).
pub fn build(
    kind: StrategyKind,
    engine: &Engine,
    pinned: &[String],
) -> Result<Arc<dyn Strategy>, String> {
    let strategy = kind.over(engine.catalog(), pinned)?;
    engine.services().process.set_presentation(Presentation {
        strategy: strategy.name().to_owned(),
        listed_tools: strategy
            .tool_names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
    });
    Ok(strategy)
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

/// A mode called under its own tool name: its arguments are the request.
async fn call_mode_by_name(
    engine: &Engine,
    name: &str,
    arguments: Map<String, Value>,
    call: &CallContext,
) -> Result<Outcome, UnknownTool> {
    engine
        .execute(name, Value::Object(arguments), None, call)
        .await
        .map_err(|_| UnknownTool(name.to_owned()))
}
