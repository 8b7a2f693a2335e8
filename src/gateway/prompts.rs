//! Prompts and completion of every upstream, offered as if they were
//! zenmode's own. A prompt is named like a tool, `<prefix>__<prompt>`, and
//! is got from the server of that prefix; completion of a prompt's or a
//! resource template's argument is asked of the server that owns the
//! prompt or template (a template routed as in [`super::resources`]).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{
    connection::Upstream,
    error::GatewayError,
    hub::Gateway,
    resource_hub::{Route, lock},
    resources::{explicit_route, invalid},
};
use crate::gateway::error::FailureKind;

impl Gateway {
    /// `prompts/list`: every server's prompts, named `<prefix>__<prompt>`.
    pub async fn list_prompts(&self) -> Value {
        let mut listed = Vec::new();
        for (upstream, items) in self.list_all("prompts", "prompts/list", "prompts").await {
            for mut prompt in items {
                if let Some(name) = prompt["name"].as_str() {
                    prompt["name"] = Value::String(crate::catalog::gateway_modes::mode_name(
                        &upstream.config.prefix,
                        name,
                    ));
                    listed.push(prompt);
                }
            }
        }
        json!({"prompts": listed})
    }

    /// The server a prefixed prompt name belongs to, and its own name there.
    fn prompt_owner(&self, name: &str) -> Result<(Arc<Upstream>, String), GatewayError> {
        let unknown = || {
            invalid(
                FailureKind::UnknownPrompt,
                format!(
                    "no prompt named {name:?}: prompts are named <server prefix>__<prompt>, as prompts/list shows"
                ),
            )
        };
        let (prefix, prompt) = name
            .split_once(crate::catalog::gateway_modes::SEPARATOR)
            .ok_or_else(unknown)?;
        let upstream = self
            .all_upstreams()
            .into_iter()
            .find(|u| u.config.prefix == prefix)
            .ok_or_else(unknown)?;
        Ok((upstream, prompt.to_owned()))
    }

    /// `prompts/get` of a prefixed prompt, from its server.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Value, GatewayError> {
        let (upstream, prompt) = self.prompt_owner(name)?;
        let mut params = json!({"name": prompt});
        if let Some(arguments) = arguments {
            params["arguments"] = Value::Object(arguments);
        }
        upstream.request("prompts/get", params).await
    }

    /// `completion/complete` for a prompt's or a resource template's
    /// argument, asked of the server that owns the prompt or template.
    pub async fn complete(&self, mut params: Value) -> Result<Value, GatewayError> {
        let reference = &params["ref"];
        let (upstream, reference) = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let name = reference["name"].as_str().unwrap_or_default();
                let (upstream, prompt) = self.prompt_owner(name)?;
                let mut reference = reference.clone();
                reference["name"] = Value::String(prompt);
                (upstream, reference)
            }
            Some("ref/resource") => {
                let uri = reference["uri"].as_str().unwrap_or_default().to_owned();
                let route = match self.template_route(&uri) {
                    Some(route) => route,
                    None => {
                        self.list_resource_templates().await;
                        match self.template_route(&uri) {
                            Some(route) => route,
                            None => self.route_of(&uri).await?,
                        }
                    }
                };
                let mut reference = reference.clone();
                reference["uri"] = Value::String(route.uri);
                (self.upstream(&route.server)?, reference)
            }
            _ => {
                return Err(invalid(
                    FailureKind::InvalidReference,
                    "completion needs a ref of type ref/prompt or ref/resource".to_owned(),
                ));
            }
        };
        params["ref"] = reference;
        upstream.request("completion/complete", params).await
    }

    fn template_route(&self, uri: &str) -> Option<Route> {
        explicit_route(uri).or_else(|| lock(&self.hub.templates).get(uri).cloned())
    }
}
