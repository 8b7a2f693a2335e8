//! The tool surface: how the catalog is shown to MCP clients.
//!
//! A [`Strategy`] decides which tools `tools/list` holds and maps a call to
//! each of them onto the engine. One file per strategy:
//! - [`zen`]: the two meta tools `zen_select_mode` and `zen_execute`, plus
//!   any pinned modes (the default);
//! - [`full`]: every mode as its own tool, as the original suite listed them;
//! - [`lazy`]: one `manage_tools` tool that enables and disables the others;
//! - [`categories`]: browse categories, then fetch one tool's schema;
//! - [`groups`]: an `activate_<group>` tool per group of tools;
//! - [`discover`]: discover / detail / call / batch / pipe.
//!
//! [`dispatch`] holds `call`, `batch` and `pipe`, which every strategy
//! answers (design 003 makes them universal); only `discover` lists them.
//! `--tool-prefix` puts a prefix before every meta tool's name.
//!
//! `lazy` and `groups` change a session's list as it goes; the rest list
//! the same tools for the life of the process. A [`Session`] holds what a
//! session has switched on; it is never shared between sessions.
//!
//! The surface knows nothing about servers or transports; the server above
//! asks it for the list and hands it each call.

pub mod categories;
pub mod discover;
pub mod dispatch;
pub mod full;
pub mod groups;
pub mod lazy;
pub mod zen;

use std::{
    borrow::Cow,
    collections::BTreeSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::{
    call::CallContext,
    catalog::{Catalog, Mode},
    engine::{Engine, Outcome},
    services::Presentation,
};

/// A tool name the strategy does not list or answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool {0:?}")]
pub struct UnknownTool(pub String);

/// What one session has switched on (enabled tools, active groups).
///
/// Only `lazy` and `groups` write to it. `changes` counts writes, so the
/// server can tell that a call changed the list and say so to the client.
#[derive(Debug, Default)]
pub struct Session {
    active: Mutex<BTreeSet<String>>,
    changes: AtomicU64,
}

impl Session {
    pub fn active(&self) -> BTreeSet<String> {
        self.lock().clone()
    }

    pub fn is_active(&self, name: &str) -> bool {
        self.lock().contains(name)
    }

    /// Applies `change` to the active set; counts a change only when the set
    /// differs afterwards. Returns whether it did.
    pub fn update(&self, change: impl FnOnce(&mut BTreeSet<String>)) -> bool {
        let mut active = self.lock();
        let before = active.clone();
        change(&mut active);
        let changed = *active != before;
        if changed {
            self.changes.fetch_add(1, Ordering::SeqCst);
        }
        changed
    }

    /// How many times the active set has changed.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// The set is replaced whole under the lock, so a poisoned lock still
    /// holds a consistent set.
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A session as a strategy sees it.
#[derive(Clone, Copy)]
pub struct SessionView<'a> {
    pub state: &'a Session,
    /// Whether this session's tool list may change. Only sessions that
    /// negotiated a protocol up to 2025-11-25 through `initialize` allow it:
    /// the 2026-07-28 protocol has no sessions and forbids a list that changes
    /// as a side effect of other requests.
    pub list_may_change: bool,
}

/// One way of presenting the catalog as MCP tools.
#[async_trait]
pub trait Strategy: Send + Sync {
    /// The name `version`, `--strategy` and `zenmode tokens` use.
    fn name(&self) -> &'static str;

    /// The exact `tools/list` entries for a session.
    fn tools(&self, session: SessionView<'_>) -> Cow<'_, [Value]>;

    /// Whether the list can differ between sessions or over a session
    /// (`lazy`, `groups`); the others compute it once per process.
    fn is_dynamic(&self) -> bool {
        false
    }

    /// Server instructions for clients that show them to the model.
    fn instructions(&self) -> &'static str;

    /// Answers a `tools/call`; `Err` when no tool has that name.
    async fn call(
        &self,
        engine: &Engine,
        session: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool>;
}

/// The names of a tool list, in list order.
pub fn tool_names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The tools a fresh session sees.
pub fn initial_tools(strategy: &dyn Strategy) -> Vec<Value> {
    let session = Session::default();
    strategy
        .tools(SessionView {
            state: &session,
            list_may_change: true,
        })
        .into_owned()
}

/// The strategies this build offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyKind {
    /// The two meta tools (plus pinned modes): the default.
    Zen,
    /// Every mode as its own tool.
    Full,
    /// One manage_tools tool that enables and disables the others.
    Lazy,
    /// Browse categories, then fetch a tool's schema.
    Categories,
    /// An activate_GROUP tool per group of tools.
    Groups,
    /// discover, detail, call, batch and pipe.
    Discover,
}

/// How `categories` lists the real tools beside its meta tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolLoading {
    /// Every tool listed with its full schema (design 001's `eager`).
    Eager,
    /// Every tool listed, its schema stripped to `{"type":"object"}` (approach A).
    Stripped,
    /// Meta tools only; the tools stay callable by name.
    #[default]
    Lazy,
    /// The pinned modes, in full, beside the meta tools.
    Core,
}

/// Everything a strategy may be configured with.
#[derive(Debug, Clone)]
pub struct SurfaceOptions {
    /// Mark the listed meta tools and pinned modes with
    /// `_meta: {"anthropic/alwaysLoad": true}`, so clients that defer MCP
    /// tools behind their own search (Claude Code) load them up front.
    pub always_load: bool,
    /// Modes listed in full beside the meta tools (`zen`, `categories` core).
    pub pinned: Vec<String>,
    pub tool_loading: ToolLoading,
    /// `groups`: sets of groups of which at most one may be active.
    pub exclusive_groups: Vec<Vec<String>>,
    /// `groups`: a call to a hidden tool names the activator to call,
    /// instead of answering "tool not found".
    pub hidden_tool_hints: bool,
    /// `zen`: gateway servers unavailable when the list is built, one line
    /// each, named in `zen_execute`'s description ([`build`] fills it).
    pub unavailable: Vec<String>,
    /// Put before the name of every meta tool (`afd-` gives design 003's
    /// `afd-discover`, `afd-call` and so on); modes keep their names.
    pub tool_prefix: String,
}

impl Default for SurfaceOptions {
    fn default() -> Self {
        SurfaceOptions {
            always_load: true,
            pinned: Vec::new(),
            tool_loading: ToolLoading::default(),
            exclusive_groups: Vec::new(),
            hidden_tool_hints: false,
            unavailable: Vec::new(),
            tool_prefix: String::new(),
        }
    }
}

/// The `_meta` key Claude Code reads to load a tool without its tool search.
pub const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";

/// Wraps a strategy so that its meta tools (every listed tool that is not a
/// mode) and its pinned modes carry [`ALWAYS_LOAD`].
struct AlwaysLoaded {
    inner: Arc<dyn Strategy>,
    modes: BTreeSet<String>,
    pinned: BTreeSet<String>,
    /// The marked list, for strategies whose list never changes.
    fixed: Option<Vec<Value>>,
}

impl AlwaysLoaded {
    fn new(inner: Arc<dyn Strategy>, catalog: &Catalog, pinned: &[String]) -> Self {
        let mut wrapped = AlwaysLoaded {
            inner,
            modes: catalog.names().map(str::to_owned).collect(),
            pinned: pinned.iter().cloned().collect(),
            fixed: None,
        };
        if !wrapped.inner.is_dynamic() {
            let tools = initial_tools(wrapped.inner.as_ref());
            wrapped.fixed = Some(wrapped.mark(&tools));
        }
        wrapped
    }

    fn mark(&self, tools: &[Value]) -> Vec<Value> {
        tools
            .iter()
            .map(|tool| {
                let name = tool["name"].as_str().unwrap_or_default();
                let mut tool = tool.clone();
                if !self.modes.contains(name) || self.pinned.contains(name) {
                    tool["_meta"] = json!({ALWAYS_LOAD: true});
                }
                tool
            })
            .collect()
    }
}

#[async_trait]
impl Strategy for AlwaysLoaded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn tools(&self, session: SessionView<'_>) -> Cow<'_, [Value]> {
        match &self.fixed {
            Some(tools) => Cow::Borrowed(tools),
            None => Cow::Owned(self.mark(&self.inner.tools(session))),
        }
    }

    fn is_dynamic(&self) -> bool {
        self.inner.is_dynamic()
    }

    fn instructions(&self) -> &'static str {
        self.inner.instructions()
    }

    async fn call(
        &self,
        engine: &Engine,
        session: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        self.inner
            .call(engine, session, name, arguments, call)
            .await
    }
}

/// Wraps a strategy so that `call`, `batch` and `pipe` answer under every
/// strategy, and every meta tool (a listed tool that is not a mode) is
/// named with the prefix. Unprefixed names keep working.
struct Fronted {
    inner: Arc<dyn Strategy>,
    modes: BTreeSet<String>,
    prefix: String,
    /// The renamed list, for strategies whose list never changes.
    fixed: Option<Vec<Value>>,
}

impl Fronted {
    fn new(inner: Arc<dyn Strategy>, catalog: &Catalog, prefix: &str) -> Self {
        let mut fronted = Fronted {
            inner,
            modes: catalog.names().map(str::to_owned).collect(),
            prefix: prefix.to_owned(),
            fixed: None,
        };
        if !fronted.inner.is_dynamic() {
            let tools = initial_tools(fronted.inner.as_ref());
            fronted.fixed = Some(fronted.rename(&tools));
        }
        fronted
    }

    fn rename(&self, tools: &[Value]) -> Vec<Value> {
        tools
            .iter()
            .map(|tool| {
                let mut tool = tool.clone();
                if let Some(name) = tool["name"].as_str()
                    && !self.prefix.is_empty()
                    && !self.modes.contains(name)
                {
                    tool["name"] = json!(format!("{}{name}", self.prefix));
                }
                tool
            })
            .collect()
    }

    /// The strategy's own name for a called tool: a prefixed meta tool
    /// loses its prefix; modes and unprefixed names stay as they are.
    fn own_name<'a>(&self, name: &'a str) -> &'a str {
        match name.strip_prefix(self.prefix.as_str()) {
            Some(stripped) if !self.prefix.is_empty() && !self.modes.contains(name) => stripped,
            _ => name,
        }
    }
}

#[async_trait]
impl Strategy for Fronted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn tools(&self, session: SessionView<'_>) -> Cow<'_, [Value]> {
        match &self.fixed {
            Some(tools) => Cow::Borrowed(tools),
            None if self.prefix.is_empty() => self.inner.tools(session),
            None => Cow::Owned(self.rename(&self.inner.tools(session))),
        }
    }

    fn is_dynamic(&self) -> bool {
        self.inner.is_dynamic()
    }

    fn instructions(&self) -> &'static str {
        self.inner.instructions()
    }

    async fn call(
        &self,
        engine: &Engine,
        session: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        let own = self.own_name(name);
        // A mode named like one of the three keeps its name.
        if matches!(own, dispatch::CALL | dispatch::BATCH | dispatch::PIPE)
            && !self.modes.contains(own)
            && let Some(outcome) =
                dispatch::handle(engine, &self.prefix, own, arguments.clone(), call).await
        {
            return Ok(outcome);
        }
        self.inner
            .call(engine, session, own, arguments, call)
            .await
            .map_err(|_| UnknownTool(name.to_owned()))
    }
}

/// A mode's category for browsing, with a line describing it: the tool's
/// own category where it carries one (a catalog entry's `category`, an
/// upstream's `_meta` or annotations), else the server it comes from, else
/// (zenmode's own modes) the manifest's category.
pub fn category_of(mode: &Mode) -> (String, String) {
    let manifest = mode.manifest();
    match (&manifest.topic, &manifest.server) {
        (Some(topic), Some(server)) => (
            topic.clone(),
            format!("Tools of the {server} server filed under {topic}"),
        ),
        (Some(topic), None) => (topic.clone(), format!("Tools filed under {topic}")),
        (None, Some(server)) => (server.clone(), format!("Tools of the {server} server")),
        (None, None) => (
            manifest.category.as_str().to_owned(),
            manifest.category.description().to_owned(),
        ),
    }
}

impl StrategyKind {
    /// Every strategy, in the order `zenmode tokens` prints them.
    pub const ALL: [StrategyKind; 6] = [
        StrategyKind::Zen,
        StrategyKind::Full,
        StrategyKind::Lazy,
        StrategyKind::Categories,
        StrategyKind::Groups,
        StrategyKind::Discover,
    ];

    /// A strategy of this kind over `catalog`; errors name a pinned mode or
    /// a group that does not exist.
    pub fn over(
        self,
        catalog: &Catalog,
        options: &SurfaceOptions,
    ) -> Result<Arc<dyn Strategy>, String> {
        let strategy: Arc<dyn Strategy> = match self {
            StrategyKind::Zen => Arc::new(
                zen::Zen::new(catalog, &options.pinned)?.noting_unavailable(&options.unavailable),
            ),
            StrategyKind::Full => Arc::new(full::Full::new(catalog)),
            StrategyKind::Lazy => Arc::new(lazy::Lazy::new(catalog)),
            StrategyKind::Categories => Arc::new(categories::Categories::new(
                catalog,
                options.tool_loading,
                &options.pinned,
            )?),
            StrategyKind::Groups => Arc::new(groups::Groups::new(
                catalog,
                &options.exclusive_groups,
                options.hidden_tool_hints,
            )?),
            StrategyKind::Discover => {
                Arc::new(discover::Discover::new(catalog, &options.tool_prefix))
            }
        };
        let strategy: Arc<dyn Strategy> =
            Arc::new(Fronted::new(strategy, catalog, &options.tool_prefix));
        Ok(if options.always_load {
            Arc::new(AlwaysLoaded::new(strategy, catalog, &options.pinned))
        } else {
            strategy
        })
    }
}

/// Builds the strategy that serves the engine's catalog and records it as
/// the process's presentation (which `version` reports).
pub fn build(
    kind: StrategyKind,
    engine: &Engine,
    options: &SurfaceOptions,
) -> Result<Arc<dyn Strategy>, String> {
    let mut options = options.clone();
    options.unavailable = engine.services().gateway.unavailable();
    let strategy = kind.over(&engine.catalog(), &options)?;
    engine.services().process.set_presentation(Presentation {
        strategy: strategy.name().to_owned(),
        listed_tools: tool_names(&initial_tools(strategy.as_ref())),
    });
    Ok(strategy)
}

/// The `tools/list` entry for a mode: everything comes from its manifest.
pub fn mode_tool(mode: &Mode) -> Value {
    let manifest = mode.manifest();
    let mut tool = Map::new();
    tool.insert("name".into(), json!(manifest.name));
    tool.insert("title".into(), json!(manifest.title));
    tool.insert("description".into(), json!(manifest.description));
    tool.insert("inputSchema".into(), mode.schema().clone());
    if !manifest.annotations.is_empty() {
        tool.insert(
            "annotations".into(),
            Value::Object(manifest.annotations.clone()),
        );
    }
    Value::Object(tool)
}

/// What a client hands the model: `[{name, description, input_schema}]`.
pub fn model_facing(tools: &[Value]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool["name"],
                    "description": tool["description"],
                    "input_schema": tool["inputSchema"],
                })
            })
            .collect(),
    )
}

/// The first sentence of a description, at most `max` characters: what
/// browsing replies show instead of the whole text.
pub fn one_line(text: &str, max: usize) -> String {
    let first = text
        .split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .lines()
        .next()
        .unwrap_or_default();
    if first.chars().count() <= max {
        first.to_owned()
    } else {
        let cut: String = first.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Names in `catalog` closest to `name`, for "did you mean" replies: the
/// catalog's rule, which leaves out other servers' destructive tools.
pub fn suggestions(catalog: &Catalog, name: &str) -> Vec<String> {
    catalog
        .suggestions(name, 3)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Parses meta-tool arguments into `T`, or explains what was wrong with
/// them, quoting the tool's input schema.
pub fn parse_arguments<T: serde::de::DeserializeOwned>(
    tools: &[Value],
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<T, Outcome> {
    serde_json::from_value(Value::Object(arguments)).map_err(|e| {
        let schema = tools
            .iter()
            .find(|t| t["name"] == tool)
            .map(|t| t["inputSchema"].clone())
            .unwrap_or(Value::Null);
        Outcome::error(json!({
            "error": "invalid_arguments",
            "message": format!("{tool}: {e}"),
            "input_schema": schema,
        }))
    })
}

/// Meta tools defined as JSON data beside a strategy's file.
pub fn meta_tools(json: &str) -> Vec<Value> {
    serde_json::from_str(json).unwrap_or_else(|e| {
        // Unreachable for a tested build: every strategy's tests list its tools.
        panic!("a meta tool definition file is invalid JSON: {e}")
    })
}

/// A mode called under its own tool name: its arguments are the request.
async fn call_mode_by_name(
    engine: &Engine,
    name: &str,
    arguments: Map<String, Value>,
    call: &CallContext,
) -> Result<Outcome, UnknownTool> {
    engine
        .execute(name, Value::Object(arguments), None, call)
        .await
        .map_err(|_| UnknownTool(name.to_owned()))
}
