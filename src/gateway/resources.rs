//! Resources of every upstream, offered as if they were zenmode's own
//! (prompts and completion are in `prompts.rs`).
//!
//! Only the tool list carries zenmode's token promise: clients do not put
//! resources or prompts into the model's context, so these are listed in
//! full (resources page by page).
//!
//! A resource (or template) keeps its upstream URI, so a client sees what
//! it would see connected directly. Which server owns a URI is learnt from
//! the listings: the first server, in name order, that lists it. When a
//! second server lists the same URI (or template), its copy is listed as
//! `zenmode://<server>/<its URI>`, and any URI of that form is read from
//! that server. A URI no listing named (one filled from a template) goes to
//! the server whose templates match it; templates of two or more servers
//! matching it is an error naming them, however specific each template
//! is (a narrower template must not capture another server's reads). What is learnt is kept in the gateway's
//! [`super::resource_hub::Hub`]; a server's complete listing drops what it
//! no longer lists, and a URI nobody is known to list makes the gateway
//! read every listing again at most once per [`RELEARN_EVERY`].
//!
//! `resources/list` is paginated with an opaque cursor naming the server
//! and that server's own cursor, so the pages are the upstreams' pages one
//! after another. A server that fails is left out of listings (logged) and
//! a read of its resources gets its start error.
//!
//! Upstreams are started lazily, as for tools. Their capabilities are
//! cached beside their catalog ([`super::capabilities`]), so `initialize`
//! can advertise resources, prompts and completion without starting anyone.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::{
    capabilities::{Offered, load_capabilities},
    connection::Upstream,
    error::GatewayError,
    events::UpstreamEvent,
    hub::Gateway,
    resource_hub::{Claim, Route, lock},
};
use crate::gateway::error::FailureKind;

/// Listings followed per server, at most (a server that keeps answering
/// with a next cursor does not hold a request forever).
const MAX_PAGES: usize = 100;

/// The shortest time between two readings of every listing made to find a
/// URI nobody is known to list (a client reading unknown URIs in a loop
/// would otherwise have every server list everything each time).
pub const RELEARN_EVERY: Duration = Duration::from_secs(10);

/// The scheme of a URI addressed to one server explicitly.
pub const SERVER_SCHEME: &str = "zenmode://";

/// The page position in `resources/list`: a server and its own cursor.
#[derive(Debug, PartialEq)]
struct Cursor {
    server: String,
    upstream: Option<String>,
}

impl Cursor {
    fn encode(&self) -> String {
        let json = json!({"s": self.server, "c": self.upstream}).to_string();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    fn decode(text: &str) -> Option<Cursor> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        let value: Value = serde_json::from_slice(&bytes).ok()?;
        Some(Cursor {
            server: value["s"].as_str()?.to_owned(),
            upstream: match &value["c"] {
                Value::Null => None,
                other => Some(other.as_str()?.to_owned()),
            },
        })
    }
}

/// `zenmode://<server>/<uri>` split into its parts.
pub(super) fn explicit_route(uri: &str) -> Option<Route> {
    let rest = uri.strip_prefix(SERVER_SCHEME)?;
    let (server, uri) = rest.split_once('/')?;
    Some(Route {
        server: server.to_owned(),
        uri: uri.to_owned(),
    })
}

/// The one server whose templates match `uri`, if any. Templates of two
/// servers matching it is an error naming them, however specific either
/// is: a server publishing a narrower template must not capture reads of
/// another's resources.
fn route_by_templates(
    templates: &BTreeMap<String, Route>,
    uri: &str,
) -> Result<Option<Route>, String> {
    let mut servers: Vec<&str> = templates
        .iter()
        .filter(|(listed, _)| template_matches(listed, uri))
        .map(|(_, route)| route.server.as_str())
        .collect();
    servers.sort_unstable();
    servers.dedup();
    match servers.as_slice() {
        [] => Ok(None),
        [server] => Ok(Some(Route {
            server: (*server).to_owned(),
            uri: uri.to_owned(),
        })),
        several => Err(format!(
            "the resource {uri:?} matches templates of several servers ({}), so zenmode does not pick one; address one as {SERVER_SCHEME}<server>/<uri>, e.g. {SERVER_SCHEME}{}/{uri}",
            several.join(", "),
            several[0]
        )),
    }
}

/// Whether `uri` could have been filled in from `template` (RFC 6570
/// expressions in braces; each matches any text, literals must agree).
fn template_matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return false,
        }
    }
    let last = rest;
    let Some((first, middle)) = literals.split_first() else {
        return template == uri;
    };
    let Some(mut left) = uri.strip_prefix(first) else {
        return false;
    };
    for literal in middle {
        match left.find(literal) {
            Some(at) => left = &left[at + literal.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// Notes who owns a listed resource; a URI another server owns already is
/// rewritten to the explicit form (which names its server, so it needs no
/// entry).
fn claim_resource(owners: &mut super::resource_hub::Owners, server: &str, resource: &mut Value) {
    let Some(uri) = resource["uri"].as_str().map(str::to_owned) else {
        return;
    };
    if let Claim::Taken = owners.claim(server, &uri) {
        resource["uri"] = Value::String(format!("{SERVER_SCHEME}{server}/{uri}"));
    }
}

pub(super) fn invalid(kind: FailureKind, message: String) -> GatewayError {
    GatewayError {
        kind,
        server: String::new(),
        message,
    }
}

impl Gateway {
    /// What the enabled upstreams offer besides tools, from the running
    /// servers and the cached capabilities of the others (none started).
    pub fn offered(&self) -> Offered {
        let mut offered = Offered::default();
        for upstream in self.read().upstreams.values() {
            let capabilities = upstream
                .live_capabilities()
                .or_else(|| load_capabilities(&self.dirs, &upstream.config));
            if let Some(capabilities) = capabilities {
                offered.add(&capabilities);
            }
        }
        offered
    }

    /// Notifications from the upstreams, for one session.
    pub fn upstream_events(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.hub.events.subscribe()
    }

    pub(super) fn upstream(&self, server: &str) -> Result<Arc<Upstream>, GatewayError> {
        self.read().upstreams.get(server).cloned().ok_or_else(|| {
            invalid(
                FailureKind::UnknownUpstream,
                format!("no upstream server named {server:?} is configured"),
            )
        })
    }

    /// Upstreams in name order.
    pub(super) fn all_upstreams(&self) -> Vec<Arc<Upstream>> {
        self.read().upstreams.values().cloned().collect()
    }

    /// Whether `upstream` offers `section` (`resources`, `prompts`,
    /// `completions`), starting it if needed; a server that fails to start
    /// offers nothing (logged).
    async fn offers(&self, upstream: &Upstream, section: &str) -> bool {
        match upstream.capabilities().await {
            Ok(capabilities) => capabilities.get(section).is_some(),
            Err(error) => {
                // Debug only: its failure is logged where it starts, and a
                // client that lists in a loop would repeat this line.
                tracing::debug!(
                    server = upstream.name(),
                    "left out of the {section} listing: {}",
                    error.message
                );
                false
            }
        }
    }

    /// One page of `resources/list`: the next page of one server.
    pub async fn list_resources(&self, cursor: Option<&str>) -> Result<Value, GatewayError> {
        let upstreams = self.all_upstreams();
        let (mut index, mut upstream_cursor) = match cursor {
            None => (0, None),
            Some(text) => Cursor::decode(text)
                .and_then(|c| {
                    let at = upstreams.iter().position(|u| u.name() == c.server)?;
                    Some((at, c.upstream))
                })
                .ok_or_else(|| {
                    invalid(
                        FailureKind::InvalidCursor,
                        "the cursor is not one this server gave, or its server is gone".to_owned(),
                    )
                })?,
        };
        while let Some(upstream) = upstreams.get(index) {
            let next_server = upstreams.get(index + 1).map(|u| u.name().to_owned());
            if !self.offers(upstream, "resources").await {
                index += 1;
                upstream_cursor = None;
                continue;
            }
            let params = match &upstream_cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = match upstream.request("resources/list", params).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(
                        server = upstream.name(),
                        "left out of resources/list: {}",
                        error.message
                    );
                    index += 1;
                    upstream_cursor = None;
                    continue;
                }
            };
            let mut resources = page["resources"].as_array().cloned().unwrap_or_default();
            let mut owners = lock(&self.hub.owners);
            if upstream_cursor.is_none() {
                owners.begin(upstream.name());
            }
            for resource in &mut resources {
                claim_resource(&mut owners, upstream.name(), resource);
            }
            if page["nextCursor"].as_str().is_none() {
                owners.end(upstream.name());
            }
            drop(owners);
            let next = match page["nextCursor"].as_str() {
                Some(c) => Some(Cursor {
                    server: upstream.name().to_owned(),
                    upstream: Some(c.to_owned()),
                }),
                None => next_server.map(|server| Cursor {
                    server,
                    upstream: None,
                }),
            };
            let mut result = Map::new();
            result.insert("resources".into(), Value::Array(resources));
            if let Some(next) = next {
                result.insert("nextCursor".into(), Value::String(next.encode()));
            }
            return Ok(Value::Object(result));
        }
        Ok(json!({"resources": []}))
    }

    /// Every page of `method` from every upstream offering `section`; the
    /// items of `key` of each, tagged with their server.
    pub(super) async fn list_all(
        &self,
        section: &str,
        method: &str,
        key: &str,
    ) -> Vec<(Arc<Upstream>, Vec<Value>)> {
        let mut all = Vec::new();
        for upstream in self.all_upstreams() {
            if !self.offers(&upstream, section).await {
                continue;
            }
            let mut items = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..MAX_PAGES {
                let params = match &cursor {
                    Some(c) => json!({"cursor": c}),
                    None => json!({}),
                };
                match upstream.request(method, params).await {
                    Ok(page) => {
                        items.extend(page[key].as_array().cloned().unwrap_or_default());
                        cursor = page["nextCursor"].as_str().map(str::to_owned);
                    }
                    Err(error) => {
                        tracing::warn!(
                            server = upstream.name(),
                            "left out of {method}: {}",
                            error.message
                        );
                        cursor = None;
                    }
                }
                if cursor.is_none() {
                    break;
                }
            }
            all.push((upstream, items));
        }
        all
    }

    /// `resources/templates/list`: every server's templates, in one page.
    pub async fn list_resource_templates(&self) -> Value {
        let mut listed = Vec::new();
        let mut templates = BTreeMap::new();
        for (upstream, items) in self
            .list_all("resources", "resources/templates/list", "resourceTemplates")
            .await
        {
            for mut template in items {
                let Some(text) = template["uriTemplate"].as_str().map(str::to_owned) else {
                    continue;
                };
                let route = Route {
                    server: upstream.name().to_owned(),
                    uri: text.clone(),
                };
                if templates.contains_key(&text) {
                    let explicit = format!("{SERVER_SCHEME}{}/{text}", upstream.name());
                    template["uriTemplate"] = Value::String(explicit.clone());
                    templates.insert(explicit, route);
                } else {
                    templates.insert(text, route);
                }
                listed.push(template);
            }
        }
        *lock(&self.hub.templates) = templates;
        json!({"resourceTemplates": listed})
    }

    /// Where `uri` (as a client sees it) lives: an explicit URI, a listed
    /// one, one a template could have made, or the only server with
    /// resources. A URI no server is known to list has every listing read
    /// again first, at most once per [`RELEARN_EVERY`].
    pub async fn route_of(&self, uri: &str) -> Result<Route, GatewayError> {
        if let Some(route) = explicit_route(uri) {
            self.upstream(&route.server)?;
            return Ok(route);
        }
        if let Some(route) = lock(&self.hub.owners).get(uri) {
            return Ok(route);
        }
        self.relearn().await;
        if let Some(route) = lock(&self.hub.owners).get(uri) {
            return Ok(route);
        }
        if let Some(route) = self.matching_template(uri)? {
            return Ok(route);
        }
        let with_resources: Vec<Arc<Upstream>> = {
            let mut found = Vec::new();
            for upstream in self.all_upstreams() {
                let declared = upstream
                    .live_capabilities()
                    .or_else(|| load_capabilities(&self.dirs, &upstream.config));
                if declared.is_some_and(|c| c.get("resources").is_some()) {
                    found.push(upstream);
                }
            }
            found
        };
        if let [only] = with_resources.as_slice() {
            return Ok(Route {
                server: only.name().to_owned(),
                uri: uri.to_owned(),
            });
        }
        Err(invalid(
            FailureKind::UnknownResource,
            format!(
                "no upstream lists the resource {uri:?} (nor a template that makes it); address one server's resource as {SERVER_SCHEME}<server>/<uri>"
            ),
        ))
    }

    /// Reads every server's listing and templates again, unless that was
    /// done less than [`RELEARN_EVERY`] ago; one reading at a time (the
    /// others wait for it and use what it learnt).
    async fn relearn(&self) {
        let mut learnt = self.hub.learnt.lock().await;
        if learnt.is_some_and(|at| at.elapsed() < RELEARN_EVERY) {
            return;
        }
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            match self.list_resources(cursor.as_deref()).await {
                Ok(page) => cursor = page["nextCursor"].as_str().map(str::to_owned),
                Err(_) => break,
            }
            if cursor.is_none() {
                break;
            }
        }
        self.list_resource_templates().await;
        *learnt = Some(std::time::Instant::now());
    }

    /// The server whose templates match `uri`; an error when templates of
    /// two or more servers do.
    fn matching_template(&self, uri: &str) -> Result<Option<Route>, GatewayError> {
        route_by_templates(&lock(&self.hub.templates), uri)
            .map_err(|message| invalid(FailureKind::UnknownResource, message))
    }

    /// `resources/read`, from the server that owns `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, GatewayError> {
        let route = self.route_of(uri).await?;
        let mut result = self
            .upstream(&route.server)?
            .request("resources/read", json!({"uri": route.uri}))
            .await?;
        // A rewritten URI reads back under the name the client used.
        if route.uri != uri
            && let Some(contents) = result["contents"].as_array_mut()
        {
            for content in contents {
                if content["uri"].as_str() == Some(route.uri.as_str()) {
                    content["uri"] = Value::String(uri.to_owned());
                }
            }
        }
        Ok(result)
    }

    /// Subscribes to `uri` upstream (once, however many sessions ask).
    pub async fn subscribe_resource(self: &Arc<Self>, uri: &str) -> Result<Route, GatewayError> {
        self.renew_after_restarts();
        let route = self.route_of(uri).await?;
        let first = {
            let mut subscriptions = lock(&self.hub.subscriptions);
            let count = subscriptions.entry(route.clone()).or_default();
            *count += 1;
            *count == 1
        };
        if first {
            if let Err(error) = self.send_subscription("resources/subscribe", &route).await {
                self.release(&route);
                return Err(error);
            }
            if let Ok(upstream) = self.upstream(&route.server) {
                upstream.hold(true);
            }
        }
        Ok(route)
    }

    /// A server that restarts has forgotten its subscriptions: once one is
    /// made, a task sends them again after each restart.
    fn renew_after_restarts(self: &Arc<Self>) {
        if self
            .hub
            .renewing
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let gateway = Arc::downgrade(self);
        let mut events = self.hub.events.subscribe();
        tokio::spawn(async move {
            loop {
                let server = match events.recv().await {
                    Ok(UpstreamEvent::Restarted { server }) => server,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(gateway) = gateway.upgrade() else {
                    return;
                };
                let routes: Vec<Route> = lock(&gateway.hub.subscriptions)
                    .keys()
                    .filter(|route| route.server == server)
                    .cloned()
                    .collect();
                for route in routes {
                    if let Err(error) = gateway
                        .send_subscription("resources/subscribe", &route)
                        .await
                    {
                        tracing::warn!(
                            server,
                            "could not renew a subscription after a restart: {}",
                            error.message
                        );
                    }
                }
            }
        });
    }

    /// Drops one session's hold on `route`; the last one unsubscribes upstream.
    pub async fn unsubscribe_resource(&self, route: &Route) -> Result<(), GatewayError> {
        if self.release(route) {
            if let Ok(upstream) = self.upstream(&route.server) {
                upstream.hold(false);
            }
            self.send_subscription("resources/unsubscribe", route)
                .await?;
        }
        Ok(())
    }

    /// Whether that was the last hold.
    fn release(&self, route: &Route) -> bool {
        let mut subscriptions = lock(&self.hub.subscriptions);
        match subscriptions.get_mut(route) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                subscriptions.remove(route);
                true
            }
            None => false,
        }
    }

    async fn send_subscription(&self, method: &str, route: &Route) -> Result<(), GatewayError> {
        self.upstream(&route.server)?
            .request(method, json!({"uri": route.uri}))
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let cursor = Cursor {
            server: "everything".into(),
            upstream: Some("abc".into()),
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        assert_eq!(Cursor::decode("not a cursor!"), None);
        assert_eq!(Cursor::decode(""), None);
    }

    #[test]
    fn templates_match_what_they_could_have_made() {
        assert!(template_matches(
            "demo://resource/dynamic/text/{id}",
            "demo://resource/dynamic/text/7"
        ));
        assert!(!template_matches(
            "demo://resource/dynamic/text/{id}",
            "demo://other/7"
        ));
        assert!(template_matches("a://{x}/b/{y}.json", "a://1/b/2.json"));
        assert!(!template_matches("a://{x}/b/{y}.json", "a://1/b/2.txt"));
        assert!(template_matches("plain://x", "plain://x"));
        assert!(!template_matches("broken://{x", "broken://x"));
    }

    #[test]
    fn a_uri_that_templates_of_two_servers_match_goes_to_neither() {
        let route = |server: &str| Route {
            server: server.into(),
            uri: String::new(),
        };
        let mut templates = BTreeMap::new();
        templates.insert("file:///{path}".to_owned(), route("files"));
        // A narrower template of another server does not capture the read.
        templates.insert("file:///h{x}".to_owned(), route("grabber"));
        let refused = route_by_templates(&templates, "file:///home/me/notes.txt")
            .expect_err("two servers match");
        assert!(
            refused.contains("files")
                && refused.contains("grabber")
                && refused.contains("zenmode://files/file:///home/me/notes.txt"),
            "{refused}"
        );
        // Only one server's templates match: that server, even with two.
        templates.insert("file:///{a}/{b}".to_owned(), route("files"));
        let routed = route_by_templates(&templates, "file:///etc/hosts").unwrap();
        assert_eq!(routed.map(|r| r.server), Some("files".to_owned()));
        assert_eq!(route_by_templates(&templates, "db://x"), Ok(None));
    }

    #[test]
    fn a_later_complete_listing_drops_what_it_no_longer_holds() {
        let mut owners = crate::gateway::resource_hub::Owners::default();
        owners.begin("a");
        for n in 0..3 {
            assert!(matches!(owners.claim("a", &format!("x://{n}")), Claim::Own));
        }
        owners.end("a");
        owners.begin("b");
        assert!(matches!(owners.claim("b", "x://0"), Claim::Taken));
        owners.end("b");
        owners.begin("a");
        owners.claim("a", "x://2");
        owners.end("a");
        assert_eq!(owners.len(), 1);
        assert_eq!(owners.get("x://2").unwrap().server, "a");
        assert!(owners.get("x://0").is_none());
    }

    #[test]
    fn explicit_uris_name_their_server() {
        assert_eq!(
            explicit_route("zenmode://git/file:///a/b"),
            Some(Route {
                server: "git".into(),
                uri: "file:///a/b".into()
            })
        );
        assert_eq!(explicit_route("file:///a"), None);
    }
}
