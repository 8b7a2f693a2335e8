//! What a server's tools become: each definition checked against its pin
//! (a server seen for the first time approved as it is, its pins written),
//! the approved ones made modes, the others quarantined with the message a
//! call to them answers; and the report of how the server was opened
//! ([`ServerReport`]), which `zenmode upstream list` and start-up show.

use std::{collections::BTreeMap, sync::Arc};

use serde_json::Value;

use super::{
    catalog_cache::ListedTool,
    config::UpstreamConfig,
    connection::Upstream,
    disk::GatewayDirs,
    pins::{self, Pins, Verdict, quarantine_message},
};
use crate::catalog::{
    self, Mode, gateway_modes::upstream_mode_from_text, tool_examples::ExampleSource,
};

/// What [`approve`] makes of a server's tools.
pub(super) struct Approved {
    pub(super) modes: Vec<Arc<Mode>>,
    pub(super) report: ServerReport,
    /// Mode name -> the quarantine message.
    pub(super) quarantined: BTreeMap<String, String>,
}

/// How one server's catalog was obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum CatalogSource {
    Cache,
    Fetched,
    Disabled,
    /// Not cached and could not be fetched (yet): the server offers no modes.
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

/// Checks a server's tools against its pins (approving a server seen for
/// the first time) and makes modes of the approved ones.
pub(super) fn approve(
    dirs: &GatewayDirs,
    upstream: &Upstream,
    pins: Option<Pins>,
    tools: Vec<ListedTool>,
    source: CatalogSource,
) -> Approved {
    let config = &upstream.config;
    let (pins, first_use) = match pins {
        Some(pins) => (pins, false),
        None => {
            let values: Vec<Value> = tools.iter().map(ListedTool::value).collect();
            let pins = Pins::of(&values);
            if let Err(error) = pins::save_pins(dirs, &config.name, &pins) {
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
    let mut modes = Vec::new();
    let mut quarantined = BTreeMap::new();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let examples = ExampleSource::for_server(&[config.name.as_str()], &names);
    let learned = crate::catalog::learned::LearnedStore::of_user().for_server(&config.name);
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
            Verdict::Approved => {
                let mut tool_examples = examples.examples(name);
                if let Some(more) = learned.get(name) {
                    tool_examples.examples =
                        tool_examples.examples.iter().chain(more).cloned().collect();
                }
                match upstream_mode_from_text(
                    &config.name,
                    &config.prefix,
                    name,
                    definition,
                    tool_examples,
                ) {
                    Ok(mode) => {
                        modes.push(Arc::new(mode));
                        server_report.offered += 1;
                    }
                    Err(problem) => {
                        tracing::warn!(server = config.name, "tool left out: {problem}");
                        server_report.filtered += 1;
                    }
                }
            }
            verdict => {
                tracing::warn!(
                    server = config.name,
                    tool = name,
                    "tool quarantined: {}",
                    verdict.reason()
                );
                quarantined.insert(
                    catalog::gateway_modes::mode_name(&config.prefix, name),
                    quarantine_message(&config.name, name, verdict.reason()),
                );
                server_report
                    .quarantined
                    .push((name.to_owned(), verdict.reason()));
            }
        }
    }
    upstream.set_pins(pins);
    Approved {
        modes,
        report: server_report,
        quarantined,
    }
}

pub(super) fn report(config: &UpstreamConfig, source: CatalogSource) -> ServerReport {
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
