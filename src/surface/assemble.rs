//! Building the strategy a server presents: the chosen kind over the
//! catalog, wrapped so that every tool carries Claude Code's always-load
//! mark when asked and names the servers that are still starting.

use std::{borrow::Cow, collections::BTreeSet, sync::Arc};

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{
    categories, discover, dispatch, full, groups, lazy,
    strategy::{
        SessionView, Strategy, StrategyKind, SurfaceOptions, UnknownTool, initial_tools, tool_names,
    },
    zen,
};
use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
    services::Presentation,
};

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
                zen::Zen::new(catalog, &options.pinned)?
                    .noting_unavailable(&options.unavailable)
                    .learning(options.learn_examples),
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
