//! What a strategy is: the `Strategy` trait every way of presenting the
//! catalog implements, a session's state as strategies see it, the
//! `--strategy` names and the options they take.

use std::{
    borrow::Cow,
    collections::BTreeSet,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{
    call::CallContext,
    engine::{Engine, Outcome},
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
    /// The last task `zen_select_mode` was asked about, for the example a
    /// call that follows may teach (`catalog::learned`).
    selected: Mutex<Option<Selected>>,
}

/// A task and the mode recommended for it.
#[derive(Debug, Clone)]
pub struct Selected {
    pub task: String,
    pub recommended: String,
    pub at: std::time::Instant,
}

impl Session {
    /// Notes the task a select was asked about and what it recommended.
    pub fn note_selected(&self, task: &str, recommended: &str) {
        *self
            .selected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Selected {
            task: task.to_owned(),
            recommended: recommended.to_owned(),
            at: std::time::Instant::now(),
        });
    }

    /// The task noted last, if it was noted within `within`; it is taken,
    /// so that one select teaches at most one example.
    pub fn take_selected(&self, within: std::time::Duration) -> Option<Selected> {
        self.selected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .filter(|selected| selected.at.elapsed() <= within)
    }

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
    /// each, named in `zen_execute`'s description (`build` fills it).
    pub unavailable: Vec<String>,
    /// Put before the name of every meta tool (`afd-` gives design 003's
    /// `afd-discover`, `afd-call` and so on); modes keep their names.
    pub tool_prefix: String,
    /// `zen`: a select followed by a successful call of an upstream tool
    /// teaches that tool the task (`catalog::learned`); servers set it
    /// from `--learn-examples`.
    pub learn_examples: bool,
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
            learn_examples: false,
        }
    }
}
