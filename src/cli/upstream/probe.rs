//! The hidden `zenmode upstream probe URL`: connect to one server as
//! zenmode's gateway would, sign in without a browser, list its tools and
//! call each. The official conformance suite's client scenarios run it.

use std::{process::ExitCode, sync::Arc, time::Duration};

use anyhow::{Context, bail};
use rmcp::{
    ClientHandler, ServiceExt,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ErrorData, Implementation,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::{Map, Value, json};

use crate::gateway::{
    config::OAuthSettings,
    oauth::{
        keeper::{Keeper, OAuthHttp, SignIn},
        token_file::TokenFile,
    },
};

/// zenmode as the client of one server in `probe`: it accepts an
/// elicitation with the defaults of the requested fields.
pub struct ProbeClient;

impl ClientHandler for ProbeClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap_or_default();
        // The newest version that opens with `initialize`, the one the
        // suite's client scenarios test.
        let mut config = ClientConfig::new(
            capabilities,
            Implementation::new("zenmode-probe", env!("CARGO_PKG_VERSION")),
        );
        config.protocol_version = rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap_or_default();
        let mut content = Map::new();
        if let Some(properties) = request["requestedSchema"]["properties"].as_object() {
            for (name, field) in properties {
                if let Some(default) = field.get("default") {
                    content.insert(name.clone(), default.clone());
                }
            }
        }
        serde_json::from_value(json!({"action": "accept", "content": content}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// Arguments for a tool from its input schema: a plain value of each
/// required (or, when none is required, each) property's type.
pub fn sample_arguments(schema: &Value) -> Map<String, Value> {
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .filter(|(name, _)| required.is_empty() || required.contains(&name.as_str()))
        .map(|(name, field)| {
            let value = match field["type"].as_str() {
                Some("number" | "integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            (name.clone(), value)
        })
        .collect()
}

/// What the conformance suite passes in `MCP_CONFORMANCE_CONTEXT`: a
/// pre-registered client, or one for client credentials.
pub fn settings_from_context(client_metadata_url: Option<String>) -> OAuthSettings {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let text = |key: &str| context[key].as_str().map(str::to_owned);
    OAuthSettings {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        scopes: Vec::new(),
        client_credentials: context["name"]
            .as_str()
            .is_some_and(|name| name.contains("client-credentials")),
        client_metadata_url,
    }
}

/// `zenmode upstream probe URL`: connect, sign in without a browser when
/// asked, list the tools and call each once; exit 1 on any failure.
pub fn probe(url: &str, client_metadata_url: Option<String>) -> anyhow::Result<ExitCode> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("probe needs an http:// or https:// URL, got {url:?}");
    }
    let settings = settings_from_context(client_metadata_url);
    let sign_in = if settings.client_credentials {
        SignIn::Machine
    } else {
        SignIn::Headless
    };
    // A private, throwaway token file: the probe leaves no sign-in behind.
    let dir = tempfile_dir()?;
    let tokens = TokenFile::new(dir.join("tokens.json"), url);
    let keeper = Arc::new(Keeper::new("probe", url, Some(settings), tokens, sign_in));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = runtime.block_on(probe_calls(url, keeper));
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => {
            eprintln!("probe: {message}");
            Ok(ExitCode::FAILURE)
        }
    }
}

pub fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "zenmode-probe-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// How long `probe` waits for the standing stream before its first call.
pub const STANDING_STREAM_WAIT: Duration = Duration::from_secs(5);

pub async fn probe_calls(url: &str, keeper: Arc<Keeper>) -> Result<(), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let standing_stream = Arc::new(tokio::sync::Notify::new());
    let client = OAuthHttp::new(reqwest::Client::default(), keeper)
        .signal_standing_stream(standing_stream.clone());
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url);
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
    let service = ProbeClient
        .serve(transport)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    // A server that elicits outside the call's own stream loses the request
    // when the standing stream is not open yet; a server that never answers
    // the GET costs this wait once.
    let _ = tokio::time::timeout(STANDING_STREAM_WAIT, standing_stream.notified()).await;
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    println!("{} tools", tools.len());
    for tool in tools {
        let schema = Value::Object((*tool.input_schema).clone());
        let mut params = CallToolRequestParams::new(tool.name.clone());
        params.arguments = Some(sample_arguments(&schema));
        let result = service
            .peer()
            .call_tool(params)
            .await
            .map_err(|e| format!("tools/call {}: {e}", tool.name))?;
        println!(
            "{}: {}",
            tool.name,
            serde_json::to_string(&result).unwrap_or_default()
        );
    }
    let _ = service.cancel().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_arguments_fill_the_required_fields_by_type() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
            "required": ["a", "b"]});
        assert_eq!(
            Value::Object(sample_arguments(&schema)),
            json!({"a": 1, "b": "test"})
        );
    }
}
