//! `version`: the server's version and what this process has loaded so far.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

pub struct Version;

#[async_trait]
impl Executor for Version {
    async fn execute(&self, _: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let engine = context.engine;
        Ok(json!({
            "name": env!("CARGO_PKG_NAME"),
            "version": env!("CARGO_PKG_VERSION"),
            "tool_list": engine.listing().as_str(),
            "modes": engine.catalog().len(),
            "listed_tools": engine.tool_names(),
            "manifests_parsed": engine.catalog().parsed_modes(),
            "schemas_compiled": engine.catalog().compiled_modes(),
            "executors_started": engine.started_executors(),
            "uptime_seconds": engine.uptime().as_secs(),
        }))
    }
}
