//! The gateway: the user's other MCP servers ("upstreams"), whose tools
//! become modes behind the same two tools.
//!
//! - [`config`]: the `mcpServers` file and zenmode's per-server options;
//! - [`store`]: cached catalogs and the pins of approved tool definitions;
//! - [`upstream`]: one server's process (or HTTP session), started lazily;
//! - [`http_errors`]: a remote server's failures explained, with what to do;
//! - [`reply_guard`]: a stdio server's replies held to its size limit;
//! - [`state`]: each server's state file and stderr log, for `zenmode status`;
//! - [`supervisor`]: the guard process that takes a stdio server's whole
//!   process group down with zenmode, even when zenmode is SIGKILLed.
//!
//! Opening the gateway reads cached catalogs and spawns nothing; a server
//! without a cached catalog is started once, in parallel with the others
//! and within a bounded wait, to learn its tools. Every tool's definition is
//! compared with the approved pins: a changed or new one is quarantined
//! (offered nowhere, refused if called) until `zenmode upstream approve`.
//! A server never seen before is approved on first use (its pins written).

pub mod config;
pub mod http_errors;
pub mod reply_guard;
pub mod state;
pub mod store;
pub mod supervisor;
pub mod upstream;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use serde_json::{Map, Value, json};

pub use config::{ConfigError, UpstreamConfig, UpstreamsFile};
pub use store::{GatewayDirs, ListedTool, Pins, Verdict};
use upstream::Upstream;

use crate::{
    catalog::{self, Mode, upstream::upstream_mode_from_text},
    services::CallContext,
};

/// A failed upstream call; becomes an `isError` result naming the server.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    pub kind: &'static str,
    pub server: String,
    pub message: String,
}

/// A server's tools and where they came from, or why there are none.
type FoundCatalog = Result<(Vec<ListedTool>, CatalogSource), String>;

/// Every configured upstream of this process (none without `--upstreams`).
#[derive(Default)]
pub struct Gateway {
    upstreams: BTreeMap<String, Arc<Upstream>>,
    /// Mode names of quarantined tools -> what to tell a caller, so a call
    /// to one is answered as quarantined rather than as an unknown mode.
    quarantined: BTreeMap<String, String>,
}

/// What a call to a quarantined tool answers: why, and how to review and
/// approve it.
pub fn quarantine_message(server: &str, tool: &str, reason: &str) -> String {
    format!(
        "tool {tool:?} of server {server:?} is quarantined ({reason}); nothing was sent. Review the change with `zenmode upstream diff {server} {tool}` and approve it with `zenmode upstream approve {server}`."
    )
}

/// How one server's catalog was obtained at start-up.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogSource {
    Cache,
    Fetched,
    Disabled,
    /// Not cached and could not be fetched: the server offers no modes.
    Unavailable(String),
}

/// One server as opened: what it offers and what is held back.
#[derive(Debug, Clone)]
pub struct ServerReport {
    pub name: String,
    pub prefix: String,
    /// Command or URL, secrets hidden.
    pub target: String,
    pub source: CatalogSource,
    pub offered: usize,
    /// Tools left out by the entry's allow / deny lists.
    pub filtered: usize,
    /// Tool name and why it is held back.
    pub quarantined: Vec<(String, &'static str)>,
    /// Whether this start approved the server on first use.
    pub first_use: bool,
}

/// An opened gateway with the modes it contributes.
pub struct Opened {
    pub gateway: Gateway,
    pub modes: Vec<Mode>,
    pub reports: Vec<ServerReport>,
}

impl Gateway {
    /// Opens every enabled server of `file`: cached catalogs as they are,
    /// missing ones fetched in parallel for at most `wait`.
    pub async fn open(file: &UpstreamsFile, dirs: &GatewayDirs, wait: Duration) -> Opened {
        let mut gateway = Gateway::default();
        let mut catalogs: Vec<(Arc<Upstream>, Option<Pins>, FoundCatalog)> = Vec::new();
        let mut fetches = tokio::task::JoinSet::new();
        let mut reports = Vec::new();
        for config in &file.servers {
            if !config.enabled {
                reports.push(report(config, CatalogSource::Disabled));
                continue;
            }
            let pins = store::load_pins(dirs, &config.name);
            let upstream = Arc::new(
                Upstream::new(config.clone(), dirs.clone(), pins.clone()).recording_state(),
            );
            gateway
                .upstreams
                .insert(config.name.clone(), upstream.clone());
            match store::load_listed(dirs, config) {
                Some(cached) => catalogs.push((upstream, pins, Ok((cached, CatalogSource::Cache)))),
                None => {
                    fetches.spawn(async move {
                        let fetched = match tokio::time::timeout(wait, upstream.tools()).await {
                            Ok(Ok(tools)) => Ok((store::listed(&tools), CatalogSource::Fetched)),
                            Ok(Err(error)) => Err(error.message),
                            Err(_) => Err(format!(
                                "its catalog is not cached and it did not list its tools within {}s",
                                wait.as_secs_f64()
                            )),
                        };
                        (upstream, pins, fetched)
                    });
                }
            }
        }
        while let Some(joined) = fetches.join_next().await {
            if let Ok(pair) = joined {
                catalogs.push(pair);
            }
        }
        let mut modes = Vec::new();
        for (upstream, pins, catalog) in catalogs {
            let config = &upstream.config;
            let (cached, source) = match catalog {
                Ok(found) => found,
                Err(problem) => {
                    tracing::warn!(server = config.name, "upstream offers no modes: {problem}");
                    reports.push(report(config, CatalogSource::Unavailable(problem)));
                    continue;
                }
            };
            let tools = cached;
            let (pins, first_use) = match pins {
                Some(pins) => (pins, false),
                None => {
                    let values: Vec<Value> = tools.iter().map(ListedTool::value).collect();
                    let pins = Pins::of(&values);
                    if let Err(error) = store::save_pins(dirs, &config.name, &pins) {
                        tracing::warn!(server = config.name, %error, "could not save approvals");
                    }
                    tracing::info!(
                        server = config.name,
                        tools = tools.len(),
                        "new upstream: its tool definitions are approved as first seen"
                    );
                    (pins, true)
                }
            };
            let mut server_report = report(config, source);
            server_report.first_use = first_use;
            for tool in tools {
                let ListedTool {
                    name,
                    hash,
                    definition,
                } = tool;
                let name = name.as_str();
                if !config.allows(name) {
                    server_report.filtered += 1;
                    continue;
                }
                match pins.verdict_of(name, &hash) {
                    Verdict::Approved => match upstream_mode_from_text(
                        &config.name,
                        &config.prefix,
                        name,
                        definition,
                    ) {
                        Ok(mode) => {
                            modes.push(mode);
                            server_report.offered += 1;
                        }
                        Err(problem) => {
                            tracing::warn!(server = config.name, "tool left out: {problem}");
                            server_report.filtered += 1;
                        }
                    },
                    verdict => {
                        tracing::warn!(
                            server = config.name,
                            tool = name,
                            "tool quarantined: {}",
                            verdict.reason()
                        );
                        gateway.quarantined.insert(
                            catalog::upstream::mode_name(&config.prefix, name),
                            quarantine_message(&config.name, name, verdict.reason()),
                        );
                        server_report
                            .quarantined
                            .push((name.to_owned(), verdict.reason()));
                    }
                }
            }
            upstream.set_pins(pins);
            reports.push(server_report);
        }
        reports.sort_by(|a, b| a.name.cmp(&b.name));
        for upstream in gateway.upstreams.values() {
            if upstream.config.startup == config::Startup::Eager && !upstream.is_running() {
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Err(error) = upstream.tools().await {
                        tracing::warn!(
                            server = error.server,
                            "eager start failed: {}",
                            error.message
                        );
                    }
                });
            }
        }
        Opened {
            gateway,
            modes,
            reports,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.upstreams.is_empty()
    }

    /// Why the mode `name` is held back, if it is a quarantined upstream tool.
    pub fn quarantined(&self, name: &str) -> Option<&str> {
        self.quarantined.get(name).map(String::as_str)
    }

    /// Forwards a call to `tool` of `server`; the result is the upstream's, unchanged.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Value, GatewayError> {
        let Some(upstream) = self.upstreams.get(server) else {
            return Err(GatewayError {
                kind: "unknown_upstream",
                server: server.to_owned(),
                message: format!("no upstream server named {server:?} is configured"),
            });
        };
        upstream.call(tool, arguments, call).await
    }

    /// Stops every running upstream (and its process group).
    pub async fn shutdown(&self) {
        let stops = self.upstreams.values().map(|upstream| upstream.stop());
        futures_util::future::join_all(stops).await;
    }

    /// What `version` may show: names, targets and whether each runs; no secrets.
    pub fn summary(&self) -> Value {
        Value::Array(
            self.upstreams
                .values()
                .map(|upstream| {
                    json!({
                        "server": upstream.name(),
                        "prefix": upstream.config.prefix,
                        "target": upstream.config.describe(),
                        "running": upstream.uptime().is_some(),
                    })
                })
                .collect(),
        )
    }
}

fn report(config: &UpstreamConfig, source: CatalogSource) -> ServerReport {
    ServerReport {
        name: config.name.clone(),
        prefix: config.prefix.clone(),
        target: config.describe(),
        source,
        offered: 0,
        filtered: 0,
        quarantined: Vec::new(),
        first_use: false,
    }
}

/// rustls needs one process-wide crypto provider; the providers use ring too.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
