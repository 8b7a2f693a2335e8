//! `zenmode connect [--profile NAME]`: what a client runs to reach the
//! user's shared instance. A stdio bridge: each JSON-RPC message from the
//! client goes to the instance over Streamable HTTP (rmcp's client
//! transport, with the instance's token), and each message from the
//! instance (replies, progress, requests to the client such as elicitation
//! or roots) comes back on stdout. The instance is started when none runs.
//!
//! When the instance goes away mid-session, every request waiting for an
//! answer, and every later one, gets an error saying so; the client's next
//! `connect` starts a new instance.

use std::{collections::HashSet, path::Path, process::ExitCode, time::Duration};

use anyhow::Context;
use rmcp::{
    RoleServer,
    model::{ClientJsonRpcMessage, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage},
    transport::{
        StreamableHttpClientTransport, Transport, async_rw::AsyncRwTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use crate::{
    gateway::profiles::{self, Profiles},
    server::shared::{InstanceRecord, SharedDir},
};

/// How often the bridge checks that the instance's process still lives.
const LIVENESS_EVERY: Duration = Duration::from_millis(500);

/// `zenmode connect`.
pub fn run(
    upstreams: &Path,
    profile: Option<&str>,
    idle_stop_secs: Option<u64>,
    stop: bool,
) -> anyhow::Result<ExitCode> {
    if stop {
        return stop_instance();
    }
    if let Some(profile) = profile {
        profiles::check_name(profile).map_err(anyhow::Error::msg)?;
        Profiles::load(&profiles::profiles_file(upstreams))
            .and_then(|all| all.get(profile).map(|_| ()))
            .map_err(anyhow::Error::msg)?;
    }
    let record = crate::cli::shared::ensure_instance(upstreams, idle_stop_secs)?;
    let token = SharedDir::of_user()
        .token()
        .context("cannot read the shared instance's token")?;
    let runtime = crate::cli::runtime::runtime(false)?;
    runtime.block_on(bridge(record, profile, token))?;
    // stdin's blocking read may still be waiting for a line.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::SUCCESS)
}

/// `connect --stop`: ends the running instance (its clients get errors).
fn stop_instance() -> anyhow::Result<ExitCode> {
    let dir = SharedDir::of_user();
    let Some(record) = dir.live_record() else {
        println!("no shared instance runs");
        return Ok(ExitCode::SUCCESS);
    };
    crate::platform::process::terminate(record.pid);
    for _ in 0..100 {
        if !crate::platform::process::is_alive(record.pid) {
            println!("stopped the shared instance (pid {})", record.pid);
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!(
        "the shared instance (pid {}) did not stop within 5 s",
        record.pid
    )
}

/// The error a request gets once the instance is gone.
fn gone(id: RequestId, why: &str) -> ServerJsonRpcMessage {
    JsonRpcMessage::error(
        ErrorData::internal_error(
            format!(
                "zenmode's shared instance is gone ({why}); restart this MCP server in your client, and its next `zenmode connect` starts a new instance"
            ),
            None,
        ),
        Some(id),
    )
}

async fn bridge(
    record: InstanceRecord,
    profile: Option<&str>,
    token: String,
) -> anyhow::Result<()> {
    let client = crate::cli::shared::loopback_client(None)?;
    let config =
        StreamableHttpClientTransportConfig::with_uri(record.mcp_url(profile)).auth_header(token);
    let mut instance = StreamableHttpClientTransport::with_client(client, config);
    let mut local =
        AsyncRwTransport::<RoleServer, _, _>::new_server(tokio::io::stdin(), tokio::io::stdout());
    // The requests sent to the instance and not yet answered.
    let mut pending: HashSet<RequestId> = HashSet::new();
    let (failed_tx, mut failed_rx) = tokio::sync::mpsc::unbounded_channel::<ServerJsonRpcMessage>();
    let mut gone_why: Option<String> = None;
    let mut liveness = tokio::time::interval(LIVENESS_EVERY);
    loop {
        tokio::select! {
            from_client = local.receive() => {
                let Some(message) = from_client else { break };
                let id = match &message {
                    ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
                    _ => None,
                };
                if let Some(why) = &gone_why {
                    if let Some(id) = id {
                        local.send(gone(id, why)).await?;
                    }
                    continue;
                }
                if let Some(id) = &id {
                    pending.insert(id.clone());
                }
                let sending = instance.send(message);
                let failed = failed_tx.clone();
                tokio::spawn(async move {
                    if let Err(error) = sending.await
                        && let Some(id) = id
                    {
                        let _ = failed.send(gone(id, &format!("it could not be reached: {error}")));
                    }
                });
            }
            from_instance = instance.receive(), if gone_why.is_none() => {
                match from_instance {
                    Some(message) => {
                        if let ServerJsonRpcMessage::Response(response) = &message {
                            pending.remove(&response.id);
                        }
                        if let ServerJsonRpcMessage::Error(error) = &message
                            && let Some(id) = &error.id
                        {
                            pending.remove(id);
                        }
                        local.send(message).await?;
                    }
                    None => {
                        let why = "its connection closed".to_owned();
                        answer_pending(&mut local, &mut pending, &why).await?;
                        gone_why = Some(why);
                    }
                }
            }
            Some(failure) = failed_rx.recv() => {
                if let ServerJsonRpcMessage::Error(error) = &failure
                    && let Some(id) = &error.id
                    && pending.remove(id)
                {
                    local.send(failure).await?;
                }
            }
            _ = liveness.tick(), if gone_why.is_none() => {
                if !crate::platform::process::is_alive(record.pid) {
                    let why = format!("its process {} ended", record.pid);
                    crate::server::logging::print(&format!("zenmode connect: the shared instance is gone ({why})"));
                    answer_pending(&mut local, &mut pending, &why).await?;
                    gone_why = Some(why);
                }
            }
        }
    }
    if gone_why.is_none() {
        // Ends the session at the instance (DELETE), so it stops counting it.
        let _ = tokio::time::timeout(Duration::from_secs(2), instance.close()).await;
    }
    Ok(())
}

async fn answer_pending(
    local: &mut AsyncRwTransport<RoleServer, tokio::io::Stdin, tokio::io::Stdout>,
    pending: &mut HashSet<RequestId>,
    why: &str,
) -> anyhow::Result<()> {
    let waiting: Vec<RequestId> = pending.drain().collect();
    for id in waiting {
        local.send(gone(id, why)).await?;
    }
    Ok(())
}
