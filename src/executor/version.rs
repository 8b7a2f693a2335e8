//! `version`: the server's version and what this process has loaded so far.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

pub struct Version;

#[async_trait]
impl Executor for Version {
    async fn execute(&self, _: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let process = &context.services.process;
        let presentation = process.presentation();
        let mut reply = json!({
            "name": env!("CARGO_PKG_NAME"),
            "version": env!("CARGO_PKG_VERSION"),
            "tool_list": presentation.map_or("none", |p| p.strategy.as_str()),
            "modes": context.catalog.len(),
            "listed_tools": presentation.map(|p| p.listed_tools.clone()).unwrap_or_default(),
            "manifests_parsed": context.catalog.parsed_modes(),
            "schemas_compiled": context.catalog.compiled_modes(),
            "executors_started": process.executors_started(),
            "uptime_seconds": process.uptime().as_secs(),
        });
        if !context.services.gateway.is_empty() {
            // Names, targets and state only: entries' env and headers stay hidden.
            reply["upstreams"] = context.services.gateway.summary();
        }
        Ok(reply)
    }
}
