//! `zenmode upstream login NAME` (sign in to an HTTP upstream with a
//! browser, or as a machine) and the hidden `zenmode upstream probe URL`
//! (connect to one server as zenmode's gateway would, signing in without a
//! browser, list its tools and call each; the official conformance suite's
//! client scenarios run it).

use std::{path::Path, process::ExitCode, sync::Arc, time::Duration};

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
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::gateway::{
    config::{self, OAuthSettings, Transport},
    oauth::{
        self,
        keeper::{Keeper, OAuthHttp, SignIn},
        token_file::TokenFile,
    },
};

/// How long `login` waits for the browser to come back.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// `zenmode upstream login NAME [--no-browser]`.
pub fn login(file: &Path, name: &str, no_browser: bool) -> anyhow::Result<ExitCode> {
    let parsed = config::load_each(file)?;
    let Some(entry) = parsed.servers.iter().find(|c| c.name == name) else {
        if let Some((_, problem)) = parsed.bad.iter().find(|(bad, _)| bad == name) {
            bail!("server {name:?} in {}: {problem}", file.display());
        }
        bail!("{}: no server named {name:?}", file.display());
    };
    let entry = entry
        .expanded()
        .map_err(|problem| anyhow::anyhow!("server {name:?}: {problem}"))?;
    let Transport::Http { url, .. } = &entry.transport else {
        bail!("server {name:?} runs a command; only http servers (with \"url\") sign in");
    };
    let tokens = oauth::token_file(name, url);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let challenge = oauth::challenge_of(url).await;
        let signed = match entry.oauth.as_ref().filter(|s| s.client_credentials) {
            Some(settings) => {
                oauth::sign_in_as_machine(url, settings, &tokens, challenge.as_deref(), None).await
            }
            None => browser_sign_in(url, entry.oauth.as_ref(), &tokens, challenge, no_browser).await,
        };
        match signed {
            Ok(_) => {
                println!(
                    "signed in to {name:?}; tokens kept in {} (owner-only) and refreshed as they age",
                    tokens.path().display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(message) => bail!("sign-in to {name:?} failed: {message}"),
        }
    })
}

pub async fn browser_sign_in(
    url: &str,
    settings: Option<&OAuthSettings>,
    tokens: &TokenFile,
    challenge: Option<String>,
    no_browser: bool,
) -> Result<rmcp::transport::AuthorizationManager, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on a loopback port for the callback: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let visit = |authorization_url: String| async move {
        let state = query_value(&authorization_url, "state")
            .ok_or("the authorization URL carries no state")?;
        note(&format!(
            "Open this URL to sign in:\n\n  {authorization_url}\n"
        ));
        if !no_browser && !open_browser(&authorization_url) {
            note(&format!(
                "(no browser found here; open the URL on any machine that can reach 127.0.0.1:{port}, e.g. through an SSH tunnel)"
            ));
        }
        note(&format!(
            "waiting for the sign-in to come back to 127.0.0.1:{port} ..."
        ));
        tokio::time::timeout(LOGIN_WAIT, wait_for_callback(&listener, &state, port))
            .await
            .map_err(|_| format!("no sign-in came back within {}s", LOGIN_WAIT.as_secs()))?
    };
    oauth::sign_in_with_code(
        url,
        settings,
        tokens,
        challenge.as_deref(),
        None,
        &redirect,
        visit,
    )
    .await
}

/// A line on stderr; a closed stderr is no reason to stop signing in.
pub fn note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Opens `url` in a browser when this machine has one; false when not.
pub fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        "xdg-open"
    } else {
        return false;
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// The value of `key` in `url`'s query.
pub fn query_value(url: &str, key: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Answers requests on the loopback port until one is the callback with
/// the expected `state`; returns its full URL. Others get an error page.
pub async fn wait_for_callback(
    listener: &tokio::net::TcpListener,
    state: &str,
    port: u16,
) -> Result<String, String> {
    loop {
        let (mut stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut head = vec![0u8; 8192];
        let read = match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut head)).await
        {
            Ok(Ok(n)) => n,
            _ => continue,
        };
        let text = String::from_utf8_lossy(&head[..read]);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap_or_default()
            .to_owned();
        let full = format!("http://127.0.0.1:{port}{target}");
        let reply = |status: &str, body: &str| {
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
        };
        let (answer, outcome) = if !target.starts_with("/callback") {
            (reply("404 Not Found", "not the sign-in callback"), None)
        } else if query_value(&full, "state").as_deref() != Some(state) {
            (
                reply(
                    "400 Bad Request",
                    "this answer does not belong to the sign-in zenmode started (state differs)",
                ),
                None,
            )
        } else if let Some(error) = query_value(&full, "error") {
            let why = query_value(&full, "error_description").unwrap_or_default();
            (
                reply("200 OK", "sign-in refused; see the terminal"),
                Some(Err(format!(
                    "the authorization server refused: {error} {why}"
                ))),
            )
        } else {
            (
                reply("200 OK", "zenmode is signed in; you can close this tab."),
                Some(Ok(full)),
            )
        };
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
        if let Some(outcome) = outcome {
            return outcome;
        }
    }
}

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

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_callback_is_taken_only_with_the_expected_state() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait_for_callback(&listener, "s1", port).await });
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let forged = get(port, "/callback?code=c0&state=other").await;
        assert!(forged.starts_with("HTTP/1.1 400"), "{forged}");
        let good = get(port, "/callback?code=c1&state=s1").await;
        assert!(good.starts_with("HTTP/1.1 200"), "{good}");
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(query_value(&url, "code").as_deref(), Some("c1"));

        // A refusal from the authorization server ends the wait with its reason.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait_for_callback(&listener, "s2", port).await });
        get(port, "/callback?error=access_denied&state=s2").await;
        let error = waiting.await.unwrap().unwrap_err();
        assert!(error.contains("access_denied"), "{error}");
    }

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
