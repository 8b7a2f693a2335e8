//! The engine: one per process, shared by every session.
//!
//! It owns the catalog, the lazily built selection index and the lazily
//! started executors, and it turns a mode name and a request into an
//! [`Outcome`]: validation, dispatch to the mode's executor, and failures as
//! readable error bodies. It knows no MCP tool name: the surface above maps
//! tools onto it, and the CLI calls it directly, so `zenmode select` and
//! `zenmode exec` run exactly what the tools run.
//!
//! The catalog, its index and the executor cells form a [`Snapshot`]. The
//! gateway's modes can change while a server runs (an upstream answers
//! late, the upstreams file is reloaded): [`Engine::follow_gateway`] then
//! builds a new snapshot off the request path and swaps it in. A request
//! takes the snapshot current at its start and keeps it to its end.

use std::{
    collections::{BTreeSet, HashMap},
    ops::Deref,
    sync::{Arc, OnceLock, RwLock},
};

use serde_json::{Value, json};

use crate::{
    call::CallContext,
    catalog::describe,
    catalog::{Catalog, Mode, Origin},
    executor::{self, ExecContext, Executor},
    select::Index,
    services::Services,
};

/// The answer to one call: a JSON body, flagged as an error or not.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub is_error: bool,
    pub body: Value,
    /// `body` is another server's whole tool result (gateway modes): the
    /// surface passes it on unchanged instead of wrapping it.
    pub passthrough: bool,
}

impl Outcome {
    pub fn ok(body: Value) -> Self {
        Outcome {
            is_error: false,
            body,
            passthrough: false,
        }
    }

    pub fn error(body: Value) -> Self {
        Outcome {
            is_error: true,
            body,
            passthrough: false,
        }
    }

    /// An upstream's tool result, to pass on as it is.
    pub fn passthrough(result: Value) -> Self {
        Outcome {
            is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
            body: result,
            passthrough: true,
        }
    }

    /// An error body with the usual `error` / `message` keys.
    pub fn failure(kind: &str, message: impl Into<String>) -> Self {
        Self::error(json!({"error": kind, "message": message.into()}))
    }
}

/// A mode name the catalog does not have, with the nearest names it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMode {
    pub name: String,
    /// At most [`MAX_SUGGESTIONS`] names, never another server's
    /// destructive tool.
    pub closest: Vec<String>,
    /// How many modes the catalog has (the list itself is never sent).
    pub mode_count: usize,
    /// Set when the name is an upstream tool held in quarantine: why, and
    /// the commands to review and approve it.
    pub quarantined: Option<String>,
}

/// The most names an unknown mode's answer suggests.
pub const MAX_SUGGESTIONS: usize = 5;

pub struct Engine {
    /// The catalog without the gateway's modes; each snapshot adds them.
    base: Catalog,
    current: RwLock<Arc<Snapshot>>,
    /// Build the full model's index on another thread
    /// ([`Index::build_model_later`]): set by servers, not one-shot commands.
    model_later: bool,
    /// Shared with every profile's engine (see [`Engine::for_servers`]).
    services: Arc<Services>,
    /// The upstream servers whose modes this engine serves; `None`: all.
    servers: Option<Arc<BTreeSet<String>>>,
}

/// One executor cell per mode; filled with its executor on the mode's
/// first request, and carried over to the next snapshot while the mode is
/// the same.
type ExecutorCell = Arc<OnceLock<Option<StartedExecutor>>>;

/// The catalog a request sees, with its selection index (built on first
/// use) and its executors. Derefs to the [`Catalog`].
pub struct Snapshot {
    catalog: Catalog,
    index: OnceLock<Index>,
    model_later: bool,
    executors: HashMap<String, ExecutorCell>,
    /// The gateway's version these modes come from.
    gateway_version: u64,
}

impl Deref for Snapshot {
    type Target = Catalog;

    fn deref(&self) -> &Catalog {
        &self.catalog
    }
}

impl Snapshot {
    fn new(
        catalog: Catalog,
        model_later: bool,
        gateway_version: u64,
        before: Option<&Snapshot>,
    ) -> Self {
        let executors = catalog
            .modes()
            .iter()
            .map(|mode| {
                let kept = before.and_then(|before| {
                    let same = before
                        .catalog
                        .get(mode.name())
                        .is_some_and(|old| Arc::ptr_eq(old, mode));
                    same.then(|| before.executors.get(mode.name()).cloned())
                        .flatten()
                });
                (mode.name().to_owned(), kept.unwrap_or_default())
            })
            .collect();
        Snapshot {
            catalog,
            index: OnceLock::new(),
            model_later,
            executors,
            gateway_version,
        }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The selection index, built on first use.
    pub fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            if self.model_later {
                Index::build_model_later(&self.catalog)
            } else {
                Index::build(&self.catalog)
            }
        })
    }

    /// Whether the index has been built (a rebuilt snapshot then builds its
    /// own before it is swapped in).
    fn has_index(&self) -> bool {
        self.index.get().is_some()
    }
}

/// The modes of `modes` whose upstream server is in `servers` (all when
/// `servers` is `None`).
fn visible(servers: &Option<Arc<BTreeSet<String>>>, modes: Vec<Arc<Mode>>) -> Vec<Arc<Mode>> {
    let Some(servers) = servers else {
        return modes;
    };
    modes
        .into_iter()
        .filter(|mode| matches!(&mode.origin, Origin::Upstream(server) if servers.contains(server)))
        .collect()
}

/// How long a call waits for a gateway server that is still starting.
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a call then waits for the follower to install the snapshot
/// with that server's modes.
const SWAP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// An executor, or why the mode's manifest cannot be run.
type StartedExecutor = Result<Arc<dyn Executor>, String>;

impl Engine {
    /// An engine with [`Services::offline`]: no providers, files confined to
    /// the working directory (tests, benches and the measuring commands).
    pub fn new(catalog: Catalog) -> Result<Self, String> {
        Self::with_services(catalog, Services::offline())
    }

    /// [`Engine::new`] as if a model provider were configured (it is never
    /// called): select then answers as where the AI modes can run, which
    /// is what `zenmode eval`, `zenmode tokens` and the ranking's tests
    /// measure.
    pub fn with_assumed_provider(catalog: Catalog) -> Result<Self, String> {
        let mut services = Services::offline();
        services.providers = crate::providers::Providers::from_env(&|name| {
            (name == "OPENAI_API_KEY").then(|| "assumed-for-measuring".to_owned())
        });
        Self::with_services(catalog, services)
    }

    /// Fails when a mode read from `--modes-dir` names an executor whose
    /// configuration in the manifest cannot run: such errors belong to
    /// start-up, like the manifest's other errors. Embedded modes are checked
    /// by `modes check` and the tests instead, so start-up stays lazy.
    ///
    /// `catalog` may hold gateway modes already; the engine serves the
    /// gateway's current modes beside the rest.
    pub fn with_services(catalog: Catalog, services: Services) -> Result<Self, String> {
        for mode in catalog.modes() {
            if let Origin::ModesDir(path) = &mode.origin
                && let Some(key) = mode.manifest().executor.as_deref()
                && let Some(Err(problem)) = executor::construct(key, mode)
            {
                return Err(format!("{}: {problem}", path.display()));
            }
        }
        let base = catalog.without_origin(|origin| matches!(origin, Origin::Upstream(_)));
        let (version, modes) = services.gateway.modes();
        let catalog = if modes.is_empty() {
            catalog
        } else {
            base.clone().with_shared_modes(modes)
        };
        Ok(Engine {
            base,
            current: RwLock::new(Arc::new(Snapshot::new(catalog, false, version, None))),
            model_later: false,
            services: Arc::new(services),
            servers: None,
        })
    }

    /// An engine over the same services (one gateway, one process per
    /// upstream server) whose catalog holds only `servers`' upstream modes
    /// beside zenmode's own: what a profile's sessions see, select among
    /// and can call. Its snapshots follow the gateway once
    /// [`Engine::follow_gateway`] runs for it.
    pub fn for_servers(&self, servers: BTreeSet<String>) -> Engine {
        let servers = Some(Arc::new(servers));
        let (version, modes) = self.services.gateway.modes();
        let modes = visible(&servers, modes);
        let catalog = self.base.clone().with_shared_modes(modes);
        Engine {
            base: self.base.clone(),
            current: RwLock::new(Arc::new(Snapshot::new(
                catalog,
                self.model_later,
                version,
                None,
            ))),
            model_later: self.model_later,
            services: self.services.clone(),
            servers,
        }
    }

    /// Whether the upstream server `name` is one this engine serves.
    pub fn serves(&self, server: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|servers| servers.contains(server))
    }

    /// Whether `name` is a mode of an upstream server this engine does not
    /// serve (another profile's): it is then answered as unknown, with no
    /// word of its quarantine or availability.
    fn hidden_here(&self, name: &str) -> bool {
        let Some(servers) = &self.servers else {
            return false;
        };
        let Some((prefix, _)) = name.split_once("__") else {
            return false;
        };
        let reports = self.services.gateway.reports();
        let mut owners = reports.iter().filter(|report| report.prefix == prefix);
        owners.any(|report| !servers.contains(&report.name))
    }

    /// The gateway's modes this engine serves, with the gateway's version.
    fn gateway_modes(&self) -> (u64, Vec<Arc<Mode>>) {
        let (version, modes) = self.services.gateway.modes();
        (version, visible(&self.servers, modes))
    }

    /// The snapshot current now: its catalog (through `Deref`) and index.
    pub fn catalog(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// For a server: the first select does not wait for the full model to
    /// encode every tool (the table answers alone until it has). One-shot
    /// commands keep waiting, since they exit after one answer.
    pub fn build_model_later(mut self) -> Self {
        self.model_later = true;
        let current = self.current.get_mut().unwrap_or_else(|p| p.into_inner());
        let snapshot = Snapshot::new(
            current.catalog.clone(),
            true,
            current.gateway_version,
            Some(current),
        );
        *current = Arc::new(snapshot);
        self
    }

    /// The selection index of the current snapshot, built on first use.
    pub fn index(&self) -> Arc<Snapshot> {
        let snapshot = self.catalog();
        snapshot.index();
        snapshot
    }

    /// Keeps the catalog in step with the gateway for as long as the
    /// server runs: on each change, a new snapshot (with its index, when
    /// the old one had built one) is made on a blocking thread and swapped
    /// in. Requests under way finish on the snapshot they started with.
    pub async fn follow_gateway(self: Arc<Self>) {
        let mut changes = self.services.gateway.subscribe();
        loop {
            let before = self.catalog();
            let (version, modes) = self.gateway_modes();
            if version != before.gateway_version {
                let engine = self.clone();
                let built = tokio::task::spawn_blocking(move || {
                    let catalog = engine.base.clone().with_shared_modes(modes);
                    let snapshot =
                        Snapshot::new(catalog, engine.model_later, version, Some(&before));
                    if before.has_index() {
                        snapshot.index();
                    }
                    snapshot
                })
                .await;
                match built {
                    Ok(snapshot) => {
                        tracing::debug!(
                            modes = snapshot.catalog.len(),
                            "catalog updated from the gateway"
                        );
                        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
                        if current.gateway_version < version
                            || (current.gateway_version == version && !current.has_index())
                        {
                            *current = Arc::new(snapshot);
                        }
                    }
                    Err(error) => tracing::warn!(%error, "could not rebuild the catalog"),
                }
                continue;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    pub fn services(&self) -> &Services {
        &self.services
    }

    /// A call for a mode of a gateway server that is still starting waits
    /// for it (at most [`START_WAIT`]) and then sees its modes: a model
    /// that calls right after start-up gets an answer, not an error.
    /// Returns the snapshot the call should run on.
    ///
    /// The follower ([`Engine::follow_gateway`]) installs the snapshot
    /// with the server's modes, its index built off the request path; the
    /// call waits a moment for that. Only when no follower does it in time
    /// does the call build a snapshot for itself, which it never installs:
    /// a snapshot without its index, once installed, would make the next
    /// select build the index on a worker thread and stall every session.
    ///
    /// A server that answered a moment ago is not starting any more, yet
    /// its modes may not be in the installed snapshot yet (the follower is
    /// still building it): that call waits for the snapshot too, or it
    /// would be told the mode does not exist.
    pub async fn await_mode(&self, name: &str) -> Arc<Snapshot> {
        let current = self.catalog();
        if current.get(name).is_some() {
            return current;
        }
        if self.hidden_here(name) {
            return current;
        }
        self.services.gateway.wait_for_mode(name, START_WAIT).await;
        let (version, modes) = self.gateway_modes();
        if !modes.iter().any(|mode| mode.name() == name) {
            return self.catalog();
        }
        self.snapshot_of(version, modes).await
    }

    /// For a select: the snapshot once the gateway's servers that are
    /// starting with no known tools have answered (or `wait` passed), with
    /// their modes in it, so that a select right after start-up ranks them.
    pub async fn await_started(&self, wait: std::time::Duration) -> Arc<Snapshot> {
        let gateway = &self.services.gateway;
        gateway.wait_while_starting(wait).await;
        let (version, modes) = self.gateway_modes();
        if self.catalog().gateway_version >= version {
            return self.catalog();
        }
        self.snapshot_of(version, modes).await
    }

    /// The follower's snapshot of gateway `version` once it is installed
    /// (at most [`SWAP_WAIT`]), else one made for this request alone.
    async fn snapshot_of(&self, version: u64, modes: Vec<Arc<Mode>>) -> Arc<Snapshot> {
        let deadline = std::time::Instant::now() + SWAP_WAIT;
        loop {
            let now = self.catalog();
            if now.gateway_version >= version {
                return now;
            }
            if std::time::Instant::now() >= deadline {
                let catalog = self.base.clone().with_shared_modes(modes);
                return Arc::new(Snapshot::new(
                    catalog,
                    self.model_later,
                    version,
                    Some(&now),
                ));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Looks a mode up, or says why there is none: a quarantined upstream
    /// tool, or an unknown name with the closest names that are safe to
    /// suggest.
    pub fn mode(&self, name: &str) -> Result<Arc<Mode>, UnknownMode> {
        let snapshot = self.catalog();
        snapshot
            .get(name)
            .cloned()
            .ok_or_else(|| self.unknown(&snapshot, name))
    }

    /// Why `name` is not in `catalog`: quarantined, or unknown with the
    /// closest names.
    fn unknown(&self, catalog: &Catalog, name: &str) -> UnknownMode {
        let quarantined = if self.hidden_here(name) {
            None
        } else {
            self.services.gateway.quarantined(name)
        };
        let closest = if quarantined.is_some() {
            Vec::new()
        } else {
            suggestions(catalog, name)
        };
        UnknownMode {
            name: name.to_owned(),
            closest,
            mode_count: catalog.len(),
            quarantined,
        }
    }

    /// Validates `request` against the mode's schema and runs its executor.
    ///
    /// `continuation_id` (given beside the request rather than inside it) is
    /// copied into the request when the mode's schema has that field. A
    /// mode of a gateway server that is unavailable (starting, failed, a bad
    /// entry) is answered with why, not as an unknown mode.
    pub async fn execute(
        &self,
        mode_name: &str,
        mut request: Value,
        continuation_id: Option<&str>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownMode> {
        let snapshot = self.await_mode(mode_name).await;
        let server = match snapshot.get(mode_name).map(|mode| &mode.origin) {
            Some(Origin::Upstream(server)) => Some(server.as_str()),
            _ => None,
        };
        call.activity.note(mode_name, server);
        let Some(mode) = snapshot.get(mode_name) else {
            if !self.hidden_here(mode_name)
                && let Some(why) = self.services.gateway.unavailable_for_mode(mode_name)
            {
                return Ok(Outcome::error(json!({
                    "error": "server_unavailable",
                    "message": format!(
                        "Mode {mode_name:?} belongs to a server zenmode cannot reach now: {why}. Use another mode, or try again later."
                    ),
                    "mode": mode_name,
                    "why": why,
                })));
            }
            return Err(self.unknown(&snapshot, mode_name));
        };
        let mode = mode.as_ref();
        // A large value passes from one tool to the next by handle, without
        // crossing the model; it is checked like the rest of the request.
        if let Err(error) = self
            .services
            .results
            .resolve_references(call.principal.as_deref(), &mut request)
            .await
        {
            return Ok(Outcome::failure(error.code(), error.to_string()));
        }
        // Field aliases and one-step values the manifest declares.
        mode.manifest().prepare_request(&mut request);
        if let Err(outcome) = merge_continuation(mode, &mut request, continuation_id) {
            return Ok(outcome);
        }
        match describe::violations(mode, &request) {
            Err(problem) => return Ok(Outcome::failure("broken_mode", problem)),
            Ok(violations) if !violations.is_empty() => {
                return Ok(invalid_request(mode, &violations));
            }
            Ok(_) => {}
        }
        let executor = match self.executor_for(&snapshot, mode) {
            None => return Ok(no_executor(mode)),
            Some(Err(problem)) => return Ok(Outcome::failure("broken_mode", problem)),
            Some(Ok(executor)) => executor,
        };
        let context = ExecContext {
            mode,
            catalog: &snapshot.catalog,
            services: &self.services,
            call,
        };
        Ok(match executor.execute(request, &context).await {
            Ok(body) if executor.passes_through() => Outcome::passthrough(body),
            Ok(body) => Outcome::ok(body),
            Err(error) => {
                let mut body = error.to_body();
                body["mode"] = json!(mode.name());
                Outcome::error(body)
            }
        })
    }

    fn executor_for(&self, snapshot: &Snapshot, mode: &Mode) -> Option<StartedExecutor> {
        let key = mode.manifest().executor.as_deref()?;
        let cell = snapshot.executors.get(mode.name())?;
        cell.get_or_init(|| {
            tracing::debug!(mode = mode.name(), executor = key, "starting executor");
            let started = executor::construct(key, mode);
            if let Some(Ok(_)) = &started {
                self.services.process.note_executor_started(mode.name());
            }
            started
        })
        .clone()
    }
}

/// The rule lives with the manifest (the ranking uses it too).
pub use crate::catalog::named_destructive;

/// The closest names that are safe to suggest (the catalog's one rule).
fn suggestions(catalog: &Catalog, name: &str) -> Vec<String> {
    catalog
        .suggestions(name, MAX_SUGGESTIONS)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn merge_continuation(
    mode: &Mode,
    request: &mut Value,
    continuation_id: Option<&str>,
) -> Result<(), Outcome> {
    let Some(id) = continuation_id else {
        return Ok(());
    };
    let Value::Object(fields) = request else {
        return Ok(()); // the validator reports the wrong type
    };
    let accepts = mode
        .manifest()
        .properties()
        .is_some_and(|p| p.contains_key("continuation_id"));
    match fields.get("continuation_id").and_then(Value::as_str) {
        Some(existing) if existing != id => Err(Outcome::failure(
            "conflicting_continuation",
            format!(
                "continuation_id is {id:?} at the top level but {existing:?} inside request; give it once"
            ),
        )),
        Some(_) => Ok(()),
        None if accepts => {
            fields.insert("continuation_id".into(), json!(id));
            Ok(())
        }
        None => Err(Outcome::failure(
            "unsupported_continuation",
            format!(
                "mode {:?} does not continue threads; drop continuation_id",
                mode.name()
            ),
        )),
    }
}

fn invalid_request(mode: &Mode, violations: &[describe::Violation]) -> Outcome {
    Outcome::error(json!({
        "error": "invalid_request",
        "message": format!(
            "The request for mode {:?} has {} problem(s); fix them and call again.",
            mode.name(),
            violations.len()
        ),
        "mode": mode.name(),
        "violations": violations,
        "required": mode.manifest().required(),
        "example_request": describe::example_request(mode.manifest()),
    }))
}

fn no_executor(mode: &Mode) -> Outcome {
    let message = match mode.manifest().executor.as_deref() {
        None => format!(
            "Mode {:?} comes from {} and has no executor in zenmode; call the original server's tool instead.",
            mode.name(),
            mode.origin
        ),
        Some(_) => format!(
            "Mode {:?} has no executor in this build of zenmode ({}); the request was valid but nothing ran. Executors available: {}.",
            mode.name(),
            env!("CARGO_PKG_VERSION"),
            executor::keys().collect::<Vec<_>>().join(", ")
        ),
    };
    Outcome::error(json!({
        "error": "no_executor",
        "message": message,
        "mode": mode.name(),
    }))
}
