//! Gateway modes: a validated request goes to the upstream server as
//! `tools/call`, and its result comes back unchanged.

use async_trait::async_trait;
use serde_json::Value;

use super::{ExecContext, ExecError, Executor};
use crate::catalog::Mode;

pub struct UpstreamCall {
    server: String,
    tool: String,
}

impl UpstreamCall {
    pub fn for_mode(mode: &Mode) -> Result<Self, String> {
        let manifest = mode.manifest();
        match (&manifest.server, &manifest.upstream_tool) {
            (Some(server), Some(tool)) => Ok(UpstreamCall {
                server: server.clone(),
                tool: tool.clone(),
            }),
            _ => Err(format!(
                "mode {:?} names the upstream executor but no server and upstream_tool",
                mode.name()
            )),
        }
    }
}

#[async_trait]
impl Executor for UpstreamCall {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let Value::Object(arguments) = request else {
            return Err(ExecError::new(
                "invalid_request",
                "the request must be an object",
            ));
        };
        context
            .services
            .gateway
            .call(&self.server, &self.tool, arguments, context.call)
            .await
            .map_err(|error| {
                ExecError::new(error.kind.as_str(), error.message).with("server", error.server)
            })
    }

    fn passes_through(&self) -> bool {
        true
    }
}
