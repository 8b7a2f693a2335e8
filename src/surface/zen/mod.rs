//! The `zen` strategy: two meta tools in front of
//! every mode, one file per tool.
//!
//! - `zen_select_mode` ([`select_mode`]): rank modes for a task, or describe one;
//! - `zen_execute` ([`execute`]): validate a request and run a mode;
//! - pinned modes, listed under their own names: the same path as `zen_execute`.
//!
//! [`ZenTool`] is the single dispatch point of this strategy.

pub mod execute;
mod meta;
pub mod mode_index;
mod runnable;
mod script_host;
pub mod select_mode;

use std::borrow::Cow;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::{Session, SessionView, Strategy, UnknownTool, call_mode_by_name, mode_tool};
use crate::{
    call::CallContext,
    catalog::Catalog,
    engine::{Engine, Outcome},
};

/// Shown to clients that display server instructions.
const INSTRUCTIONS: &str = "zenmode runs the zen modes (chat, thinkdeep, debug, codereview, precommit, secaudit, planner, consensus, testgen, refactor and more) behind two tools. \
When you do not know which mode fits, or what fields it takes, call zen_select_mode with the task in plain words: it names the mode, its fields and a ready zen_execute call. \
When you already know the mode and its fields (zen_execute's description lists the required fields of zenmode's own modes), call zen_execute directly with {mode, request}. \
Multi-step modes answer with a continuation_id: pass it back on the next step to continue the same thread.";

pub struct Zen {
    tools: Vec<Value>,
    /// Whether a select followed by a successful call becomes an example.
    learn: bool,
}

/// How long after a select a call still counts as following it.
const LEARN_WITHIN: std::time::Duration = std::time::Duration::from_secs(15 * 60);

impl Zen {
    /// The meta tools plus `pinned` modes; errors name a pinned mode that
    /// does not exist.
    pub fn new(catalog: &Catalog, pinned: &[String]) -> Result<Self, String> {
        let mut tools = META_TOOLS.clone();
        for tool in &mut tools {
            if tool["name"] == EXECUTE {
                let base = tool["description"].as_str().unwrap_or_default();
                tool["description"] = Value::from(mode_index::describe_execute(base, catalog));
            }
        }
        let mut seen = Vec::new();
        for name in pinned {
            let Some(mode) = catalog.get(name) else {
                let closest = catalog.suggestions(name, 3);
                return Err(format!(
                    "cannot pin unknown mode {name:?}{}",
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                ));
            };
            // A mode pinned twice is listed once: tool names must be unique.
            if !seen.contains(name) {
                tools.push(mode_tool(mode));
                seen.push(name.clone());
            }
        }
        Ok(Zen {
            tools,
            learn: false,
        })
    }

    /// Learns examples from this strategy's sessions (`--learn-examples`).
    pub fn learning(mut self, learn: bool) -> Self {
        self.learn = learn;
        self
    }
}

/// After a successful call of `mode` that followed a select in the same
/// session: when `mode` is an upstream tool, the select's task becomes its
/// example (written off the async threads; a failure is logged only).
fn learn_from(engine: &Engine, session: &Session, mode: &str, outcome: &Outcome) {
    if outcome.is_error {
        return;
    }
    let Some(selected) = session.take_selected(LEARN_WITHIN) else {
        return;
    };
    let catalog = engine.catalog();
    let Some(found) = catalog.get(mode) else {
        return;
    };
    let crate::catalog::Origin::Upstream(server) = &found.origin else {
        return;
    };
    let example = crate::catalog::learned::Learned {
        server: server.clone(),
        tool: found
            .manifest()
            .upstream_tool
            .clone()
            .unwrap_or_else(|| mode.to_owned()),
        mode: mode.to_owned(),
        correction: selected.recommended != mode,
        task: selected.task,
        at_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64),
    };
    tokio::task::spawn_blocking(move || {
        if let Err(error) = crate::catalog::learned::LearnedStore::of_user().record(example) {
            tracing::warn!(%error, "could not keep a learned example");
        }
    });
}

/// A parsed call of this strategy: the one place its tool names are dispatched.
#[derive(Debug)]
pub enum ZenTool {
    SelectMode(Map<String, Value>),
    Execute(Map<String, Value>),
    /// A pinned mode called under its own name; the arguments are its request.
    Mode {
        name: String,
        request: Map<String, Value>,
    },
}

impl ZenTool {
    /// `None` when no tool has that name.
    pub fn parse(catalog: &Catalog, name: &str, arguments: Map<String, Value>) -> Option<Self> {
        match name {
            SELECT_MODE => Some(ZenTool::SelectMode(arguments)),
            EXECUTE => Some(ZenTool::Execute(arguments)),
            _ if catalog.get(name).is_some() => Some(ZenTool::Mode {
                name: name.to_owned(),
                request: arguments,
            }),
            _ => None,
        }
    }
}

/// The most unavailable servers `zen_execute`'s description names.
const MAX_UNAVAILABLE_IN_DESCRIPTION: usize = 5;

impl Zen {
    /// Names the gateway servers the model cannot reach as the list is
    /// built (starting, failed, bad entries) in `zen_execute`'s
    /// description; the list stays fixed, and select replies say what is
    /// unavailable at the time of each call.
    pub fn noting_unavailable(mut self, lines: &[String]) -> Self {
        if lines.is_empty() {
            return self;
        }
        for tool in &mut self.tools {
            if tool["name"] != EXECUTE {
                continue;
            }
            let mut text = tool["description"].as_str().unwrap_or_default().to_owned();
            text.push_str(
                "\nServers unavailable at start-up (zen_select_mode tells when they are back):",
            );
            for line in lines.iter().take(MAX_UNAVAILABLE_IN_DESCRIPTION) {
                text.push_str("\n- ");
                text.push_str(line);
            }
            if lines.len() > MAX_UNAVAILABLE_IN_DESCRIPTION {
                text.push_str(&format!(
                    "\n- and {} more",
                    lines.len() - MAX_UNAVAILABLE_IN_DESCRIPTION
                ));
            }
            tool["description"] = Value::from(text);
        }
        self
    }
}

#[async_trait]
impl Strategy for Zen {
    fn name(&self) -> &'static str {
        "zen"
    }

    fn tools(&self, _: SessionView<'_>) -> Cow<'_, [Value]> {
        Cow::Borrowed(&self.tools)
    }

    fn instructions(&self) -> &'static str {
        INSTRUCTIONS
    }

    async fn call(
        &self,
        engine: &Engine,
        session: SessionView<'_>,
        name: &str,
        arguments: Map<String, Value>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownTool> {
        match ZenTool::parse(&engine.catalog(), name, arguments) {
            None => Err(UnknownTool(name.to_owned())),
            Some(ZenTool::SelectMode(arguments)) => {
                // Describing a mode of a server still starting waits for it.
                if let Some(Value::String(mode)) = arguments.get("mode") {
                    engine.await_mode(mode).await;
                }
                let task = arguments
                    .get("task_description")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let outcome = select_mode::call(engine, arguments).await;
                if self.learn
                    && !outcome.is_error
                    && let (Some(task), Some(mode)) = (task, outcome.body["mode"].as_str())
                {
                    session.state.note_selected(&task, mode);
                }
                Ok(outcome)
            }
            Some(ZenTool::Execute(arguments)) => {
                let mode = arguments
                    .get("mode")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let outcome = execute::call(engine, arguments, call).await;
                if self.learn
                    && let Some(mode) = mode
                {
                    learn_from(engine, session.state, &mode, &outcome);
                }
                Ok(outcome)
            }
            Some(ZenTool::Mode { name, request }) => {
                call_mode_by_name(engine, &name, request, call).await
            }
        }
    }
}

use meta::META_TOOLS;
pub use meta::{EXECUTE, SELECT_MODE, unknown_mode};
pub use script_host::{ScriptHost, ScriptWrites};
