//! The dashboard's pages: what each shows, gathered from the engine, the
//! gateway's files and the activity feed, rendered with the templates.

use std::{collections::BTreeMap, path::Path};

use serde::Serialize;
use serde_json::{Value, json};

use crate::{
    catalog::Origin,
    engine::Engine,
    gateway::{CatalogSource, catalog_cache, pins, profiles::Profiles, status_file},
    server::activity_feed::CallRecord,
};

/// The script every page loads.
pub const SCRIPT: &str = include_str!("templates/dashboard.js");
/// Log lines shown per server.
const LOG_LINES: usize = 12;

/// The templates, checked when the dashboard is made (a broken template
/// fails the tests, never a user).
pub fn templates() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    for (name, source) in [
        ("base.html", include_str!("templates/base.html")),
        ("message.html", include_str!("templates/message.html")),
        ("servers.html", include_str!("templates/servers.html")),
        ("tools.html", include_str!("templates/tools.html")),
        ("profiles.html", include_str!("templates/profiles.html")),
        ("calls.html", include_str!("templates/calls.html")),
    ] {
        if let Err(error) = env.add_template(name, source) {
            tracing::error!(%error, template = name, "a dashboard template does not parse");
        }
    }
    env
}

fn render(
    env: &minijinja::Environment<'static>,
    name: &str,
    context: Value,
) -> Result<String, String> {
    env.get_template(name)
        .and_then(|template| template.render(minijinja::value::Serde(&context)))
        .map_err(|error| error.to_string())
}

/// Text shown on a page, with any secret the process knows hidden.
fn clean(text: &str) -> String {
    crate::platform::redact::for_log(text).unwrap_or_else(|| text.to_owned())
}

pub fn message(
    env: &minijinja::Environment<'static>,
    title: &str,
    text: &str,
) -> Result<String, String> {
    render(
        env,
        "message.html",
        json!({"title": title, "page": "message", "text": text}),
    )
}

/// One server's row on the servers page.
#[derive(Debug, Serialize)]
pub struct ServerRow {
    name: String,
    target: String,
    enabled: bool,
    state: String,
    /// The state's first word, for the page's colours.
    state_class: String,
    tools: usize,
    quarantined: usize,
    last_error: String,
    log: Vec<String>,
}

/// Every configured server, as the servers page and its live refresh show it.
pub fn server_rows(engine: &Engine) -> Vec<ServerRow> {
    let gateway = &engine.services().gateway;
    let dirs = gateway.dirs();
    let reports: BTreeMap<String, _> = gateway
        .reports()
        .into_iter()
        .map(|report| (report.name.clone(), report))
        .collect();
    let unavailable = gateway.unavailable();
    gateway
        .server_names()
        .into_iter()
        .map(|name| {
            let report = reports.get(&name);
            let enabled = !matches!(report.map(|r| &r.source), Some(CatalogSource::Disabled));
            // Another process's record (an instance that has stopped, a
            // client's own zenmode) says nothing of this one's server.
            let recorded =
                status_file::load(dirs, &name).filter(|r| r.zenmode_pid == std::process::id());
            let waiting = unavailable
                .iter()
                .find(|line| line.starts_with(&format!("{name}:")));
            let state = if !enabled {
                "disabled".to_owned()
            } else if let Some(recorded) = &recorded {
                recorded.state.clone()
            } else if let Some(line) = waiting {
                line.trim_start_matches(&format!("{name}:"))
                    .trim()
                    .to_owned()
            } else {
                "not started (starts on first use)".to_owned()
            };
            let last_error = recorded
                .as_ref()
                .filter(|recorded| recorded.state != "running")
                .and_then(|recorded| recorded.last_error.clone())
                .or_else(|| match report.map(|r| &r.source) {
                    Some(CatalogSource::Unavailable(why)) => Some(why.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            ServerRow {
                target: report.map(|r| clean(&r.target)).unwrap_or_default(),
                enabled,
                state_class: state
                    .split_whitespace()
                    .next()
                    .unwrap_or("unknown")
                    .to_owned(),
                state,
                tools: report.map_or(0, |r| r.offered),
                quarantined: report.map_or(0, |r| r.quarantined.len()),
                last_error: clean(&last_error),
                log: status_file::tail(dirs, &name, LOG_LINES)
                    .iter()
                    .map(|line| clean(line))
                    .collect(),
                name,
            }
        })
        .collect()
}

pub fn servers(env: &minijinja::Environment<'static>, engine: &Engine) -> Result<String, String> {
    render(
        env,
        "servers.html",
        json!({"title": "Servers", "page": "servers", "servers": server_rows(engine)}),
    )
}

pub fn tools(env: &minijinja::Environment<'static>, engine: &Engine) -> Result<String, String> {
    let gateway = &engine.services().gateway;
    let dirs = gateway.dirs();
    let catalog = engine.catalog();
    let reports = gateway.reports();
    let servers: Vec<Value> = gateway
        .server_names()
        .into_iter()
        .map(|name| {
            let approved: Vec<Value> = catalog
                .modes()
                .iter()
                .filter(|mode| matches!(&mode.origin, Origin::Upstream(server) if *server == name))
                .map(|mode| {
                    let manifest = mode.manifest();
                    json!({
                        "name": manifest.upstream_tool.as_deref().unwrap_or(mode.name()),
                        "mode": mode.name(),
                        "destructive": manifest.destructive(),
                        "description": first_sentence(&manifest.description),
                    })
                })
                .collect();
            let held = reports
                .iter()
                .find(|report| report.name == name)
                .map(|report| report.quarantined.clone())
                .unwrap_or_default();
            let definitions = (!held.is_empty()).then(|| {
                let pins = pins::load_pins_with_definitions(dirs, &name);
                let current = gateway
                    .config_of(&name)
                    .and_then(|config| catalog_cache::load_catalog(dirs, &config));
                (pins, current)
            });
            let quarantined: Vec<Value> = held
                .iter()
                .map(|(tool, reason)| {
                    let mut entry = json!({"name": tool, "reason": reason});
                    if let Some((Some(pins), Some(current))) = &definitions
                        && let Some(now) = current.iter().find(|t| pins::tool_name(t) == Some(tool))
                    {
                        entry["changes"] = json!(pins.changes(now).join(", "));
                        entry["now"] = json!(clean(&description_of(now)));
                        if let Some(before) = pins.definitions.get(tool) {
                            entry["before"] = json!(clean(&description_of(before)));
                        }
                    }
                    entry
                })
                .collect();
            json!({"name": name, "tools": approved, "quarantined": quarantined})
        })
        .collect();
    render(
        env,
        "tools.html",
        json!({"title": "Tools", "page": "tools", "servers": servers}),
    )
}

fn description_of(tool: &Value) -> String {
    first_sentence(tool["description"].as_str().unwrap_or_default())
}

/// A description's first sentence (at most 200 characters).
fn first_sentence(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    let end = line.find(". ").map_or(line.len(), |at| at + 1);
    line[..end].chars().take(200).collect()
}

pub fn profiles(
    env: &minijinja::Environment<'static>,
    file: &Path,
    engine: &Engine,
) -> Result<String, String> {
    let known = engine.services().gateway.server_names();
    let (profiles, problem) = match Profiles::load(file) {
        Ok(profiles) => (profiles, None),
        Err(problem) => (Profiles::default(), Some(problem)),
    };
    let rows: Vec<Value> = profiles
        .profiles
        .iter()
        .map(|(name, profile)| {
            let servers: Vec<Value> = profile
                .servers
                .iter()
                .map(|server| json!({"name": server, "known": known.contains(server)}))
                .collect();
            json!({
                "name": name,
                "servers": servers,
                "strategy": profile.strategy.as_deref().unwrap_or("zen"),
            })
        })
        .collect();
    let mut page = render(
        env,
        "profiles.html",
        json!({
            "title": "Profiles",
            "page": "profiles",
            "file": file.display().to_string(),
            "profiles": rows,
        }),
    )?;
    if let Some(problem) = problem {
        page = page.replace(
            "<p id=\"notice\" role=\"status\"></p>",
            &format!(
                "<p id=\"notice\" role=\"status\" class=\"bad\">{}</p>",
                escape(&problem)
            ),
        );
    }
    Ok(page)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn calls(
    env: &minijinja::Environment<'static>,
    recent: &[CallRecord],
) -> Result<String, String> {
    let mut clients: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for call in recent {
        let entry = clients
            .entry((call.client.clone(), call.profile.clone()))
            .or_default();
        entry.0 += 1;
        entry.1 += call.tokens_saved;
    }
    let clients: Vec<Value> = clients
        .into_iter()
        .map(|((client, profile), (calls, saved))| {
            json!({"client": client, "profile": profile, "calls": calls, "tokens_saved": saved})
        })
        .collect();
    render(
        env,
        "calls.html",
        json!({"title": "Calls", "page": "calls", "clients": clients, "calls": recent}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_renders_and_escapes_what_it_shows() {
        let env = templates();
        let page = message(&env, "Title", "<script>alert(1)</script>").unwrap();
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(!page.contains("<script>alert"));
        let call = CallRecord {
            at_ms: 1,
            client: "<b>client</b>".into(),
            profile: "work".into(),
            tool: "zen_execute".into(),
            mode: "time__now".into(),
            server: "time".into(),
            ms: 3,
            outcome: "ok".into(),
            bytes: 10,
            tokens_saved: 100,
        };
        let page = calls(&env, &[call.clone(), call]).unwrap();
        assert!(page.contains("&lt;b&gt;client"), "{page}");
        assert!(page.contains("<td>200</td>"), "per-client sums: {page}");
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::new(crate::catalog::Catalog::builtin().unwrap()).unwrap();
        assert!(
            servers(&env, &engine)
                .unwrap()
                .contains("No upstream servers")
        );
        assert!(
            tools(&env, &engine)
                .unwrap()
                .contains("No upstream servers")
        );
        let page = profiles(&env, &dir.path().join("profiles.json"), &engine).unwrap();
        assert!(page.contains("No profiles"), "{page}");
    }

    #[test]
    fn first_sentences_are_short() {
        assert_eq!(first_sentence("Reads a file. Then more."), "Reads a file.");
        assert_eq!(first_sentence("\n\nNo stop"), "No stop");
        assert_eq!(first_sentence(&"é".repeat(300)).chars().count(), 200);
    }
}
