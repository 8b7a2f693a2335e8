//! The engine: one per process, shared by every connection.
//!
//! It owns the catalog, the fixed tool list, the lazily built selection index
//! and the lazily started executors. Transports and the CLI both call into it,
//! so `zenmode select` / `zenmode exec` run exactly what the tools run.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};

use crate::{
    catalog::{Catalog, Mode},
    describe,
    executor::{self, ExecContext, Executor},
    select::Index,
    services::{CallContext, Services},
    tools::{self, Listing, ToolCall, ToolOutcome},
};

/// How the engine presents itself; fixed for the life of the process.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub listing: Listing,
    /// Modes listed as native tools beside the meta tools (optimized listing).
    pub pinned: Vec<String>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            listing: Listing::Optimized,
            pinned: Vec::new(),
        }
    }
}

/// A tool name the server does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool {0:?}")]
pub struct UnknownTool(pub String);

pub struct Engine {
    catalog: Catalog,
    listing: Listing,
    /// The `tools/list` entries, computed once: the list never changes.
    tool_list: Vec<Value>,
    index: OnceLock<Index>,
    /// One cell per mode; filled with its executor on the mode's first request.
    executors: HashMap<String, OnceLock<Option<StartedExecutor>>>,
    services: Services,
    started: Instant,
}

/// An executor, or why the mode's manifest cannot be run.
type StartedExecutor = Result<Arc<dyn Executor>, String>;

impl Engine {
    /// An engine with [`Services::offline`]: no providers, files confined to the
    /// working directory. Errors name any pinned mode that does not exist.
    pub fn new(catalog: Catalog, config: EngineConfig) -> Result<Self, String> {
        Self::with_services(catalog, config, Services::offline())
    }

    pub fn with_services(
        catalog: Catalog,
        config: EngineConfig,
        services: Services,
    ) -> Result<Self, String> {
        for name in &config.pinned {
            if catalog.get(name).is_none() {
                let closest = catalog.closest_names(name, 3);
                return Err(format!(
                    "cannot pin unknown mode {name:?}{}",
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                ));
            }
        }
        let mut pinned = config.pinned.clone();
        pinned.dedup();
        let tool_list = tools::tool_list(&catalog, config.listing, &pinned);
        let executors = catalog
            .names()
            .map(|name| (name.to_owned(), OnceLock::new()))
            .collect();
        Ok(Engine {
            catalog,
            listing: config.listing,
            tool_list,
            index: OnceLock::new(),
            executors,
            services,
            started: Instant::now(),
        })
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn listing(&self) -> Listing {
        self.listing
    }

    /// The exact `tools/list` entries.
    pub fn tool_list(&self) -> &[Value] {
        &self.tool_list
    }

    pub fn tool_names(&self) -> Vec<&str> {
        self.tool_list
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect()
    }

    /// The selection index, built on first use.
    pub fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::build(&self.catalog))
    }

    pub fn services(&self) -> &Services {
        &self.services
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Modes whose executor has been instantiated, sorted.
    pub fn started_executors(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .executors
            .iter()
            .filter(|(_, cell)| matches!(cell.get(), Some(Some(Ok(_)))))
            .map(|(name, _)| name.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    /// Answers a `tools/call`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<ToolOutcome, UnknownTool> {
        let tool =
            ToolCall::parse(self, name, arguments).ok_or_else(|| UnknownTool(name.into()))?;
        Ok(tool.run(self, call).await)
    }

    /// Validates `request` against the mode's schema and runs its executor.
    ///
    /// `continuation_id` (from `zen_execute`'s top level) is copied into the
    /// request when the mode's schema has that field.
    pub async fn execute(
        &self,
        mode_name: &str,
        mut request: Value,
        continuation_id: Option<&str>,
        call: &CallContext,
    ) -> ToolOutcome {
        let Some(mode) = self.catalog.get(mode_name) else {
            return tools::unknown_mode(&self.catalog, mode_name);
        };
        if let Err(outcome) = merge_continuation(mode, &mut request, continuation_id) {
            return outcome;
        }
        match describe::violations(mode, &request) {
            Err(problem) => return ToolOutcome::failure("broken_mode", problem),
            Ok(violations) if !violations.is_empty() => {
                return invalid_request(mode, &violations);
            }
            Ok(_) => {}
        }
        let executor = match self.executor_for(mode) {
            None => return no_executor(mode),
            Some(Err(problem)) => return ToolOutcome::failure("broken_mode", problem),
            Some(Ok(executor)) => executor,
        };
        let context = ExecContext {
            mode,
            engine: self,
            call,
        };
        match executor.execute(request, &context).await {
            Ok(body) => ToolOutcome::ok(body),
            Err(error) => {
                let mut body = error.to_body();
                body["mode"] = json!(mode.name());
                ToolOutcome::error(body)
            }
        }
    }

    fn executor_for(&self, mode: &Mode) -> Option<StartedExecutor> {
        let key = mode.manifest().executor.as_deref()?;
        let cell = self.executors.get(mode.name())?;
        cell.get_or_init(|| {
            tracing::debug!(mode = mode.name(), executor = key, "starting executor");
            executor::construct(key, mode)
        })
        .clone()
    }
}

fn merge_continuation(
    mode: &Mode,
    request: &mut Value,
    continuation_id: Option<&str>,
) -> Result<(), ToolOutcome> {
    let Some(id) = continuation_id else {
        return Ok(());
    };
    let Value::Object(fields) = request else {
        return Ok(()); // the validator reports the wrong type
    };
    let accepts = mode
        .manifest()
        .properties()
        .is_some_and(|p| p.contains_key("continuation_id"));
    match fields.get("continuation_id").and_then(Value::as_str) {
        Some(existing) if existing != id => Err(ToolOutcome::failure(
            "conflicting_continuation",
            format!(
                "continuation_id is {id:?} at the top level but {existing:?} inside request; give it once"
            ),
        )),
        Some(_) => Ok(()),
        None if accepts => {
            fields.insert("continuation_id".into(), json!(id));
            Ok(())
        }
        None => Err(ToolOutcome::failure(
            "unsupported_continuation",
            format!(
                "mode {:?} does not continue threads; drop continuation_id",
                mode.name()
            ),
        )),
    }
}

fn invalid_request(mode: &Mode, violations: &[describe::Violation]) -> ToolOutcome {
    ToolOutcome::error(json!({
        "error": "invalid_request",
        "message": format!(
            "The request for mode {:?} has {} problem(s); fix them and call again.",
            mode.name(),
            violations.len()
        ),
        "mode": mode.name(),
        "violations": violations,
        "required": mode.manifest().required(),
        "example_request": describe::example_request(mode.manifest()),
    }))
}

fn no_executor(mode: &Mode) -> ToolOutcome {
    let message = match mode.manifest().executor.as_deref() {
        None => format!(
            "Mode {:?} comes from {} and has no executor in zenmode; call the original server's tool instead.",
            mode.name(),
            mode.origin
        ),
        Some(_) => format!(
            "Mode {:?} has no executor in this build of zenmode ({}); the request was valid but nothing ran. Executors available: {}.",
            mode.name(),
            env!("CARGO_PKG_VERSION"),
            executor::REGISTRY
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    ToolOutcome::error(json!({
        "error": "no_executor",
        "message": message,
        "mode": mode.name(),
    }))
}
