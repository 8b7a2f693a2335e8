//! What a `script` reaches through `tools`: a mode run on `zen_execute`'s
//! own path (schema, quarantine, approval, confinement), logged like a
//! call, and `zen_select_mode`'s answer. The executor sits below the
//! engine, so the server hands this in with each call.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{
    meta::{EXECUTE, unknown_mode},
    select_mode,
};
use crate::{
    call::{CallContext, NestedCalls, NestedOutcome},
    catalog::{Mode, Origin},
    engine::{Engine, Outcome},
    executor::script::LONGEST_SCRIPT,
};

/// Whether scripts may call tools that change things (`--script-writes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScriptWrites {
    /// Only read-only tools; the others are refused with how to call them.
    #[default]
    Deny,
    Allow,
}

pub struct ScriptHost {
    engine: Arc<Engine>,
    writes: ScriptWrites,
    longest: Duration,
}

impl ScriptHost {
    /// Scripts of up to [`LONGEST_SCRIPT`].
    pub fn new(engine: Arc<Engine>, writes: ScriptWrites) -> Self {
        ScriptHost {
            engine,
            writes,
            longest: LONGEST_SCRIPT,
        }
    }

    /// Scripts of up to `longest`, never more than [`LONGEST_SCRIPT`].
    pub fn with_longest(mut self, longest: Duration) -> Self {
        self.longest = longest.min(LONGEST_SCRIPT);
        self
    }
}

fn nested(outcome: Outcome) -> NestedOutcome {
    NestedOutcome {
        is_error: outcome.is_error,
        body: outcome.body,
        passthrough: outcome.passthrough,
    }
}

#[async_trait]
impl NestedCalls for ScriptHost {
    async fn resolve(&self, name: &str) -> Option<Arc<Mode>> {
        self.engine.await_mode(name).await.get(name).cloned()
    }

    async fn run(&self, mode: &str, request: Value, call: &CallContext) -> NestedOutcome {
        let started = std::time::Instant::now();
        let outcome = self
            .engine
            .execute(mode, request, None, call)
            .await
            .unwrap_or_else(unknown_mode);
        let (mode, server) = call.activity.noted().unwrap_or_default();
        let outcome_word = if outcome.is_error { "error" } else { "ok" };
        tracing::info!(
            target: "zenmode::activity",
            tool = "script", mode, server = server.as_deref().unwrap_or("-"),
            ms = started.elapsed().as_millis() as u64, outcome = outcome_word,
            "script call"
        );
        nested(outcome)
    }

    async fn select(&self, task: &str) -> NestedOutcome {
        let mut arguments = Map::new();
        arguments.insert("task_description".into(), json!(task));
        nested(select_mode::call(&self.engine, arguments).await)
    }

    fn longest_script(&self) -> Duration {
        self.longest
    }

    fn write_refusal(&self, name: &str, mode: Option<&Mode>) -> Option<String> {
        if self.writes == ScriptWrites::Allow {
            return None;
        }
        let how_to_allow = "serve --script-writes allow (ZEN_SCRIPT_WRITES=allow) lets scripts call every tool, \
                            \"script_writes\": \"allow\" in a server's entry its tools";
        let Some(mode) = mode else {
            return Some(format!(
                "{name:?} is not known (yet: its server may still be starting), and scripts call only tools known \
                 to leave state alone; try again once it is listed, or allow writes: {how_to_allow}"
            ));
        };
        if let Origin::Upstream(server) = &mode.origin
            && self.engine.services().gateway.script_writes_allowed(server)
        {
            return None;
        }
        Some(format!(
            "{name:?} may change things (it is not annotated read-only, nor named with a verb that only reads), \
             and scripts may only read; {how_to_allow}; or call it directly instead: \
             {EXECUTE} {{\"mode\": {name:?}, \"request\": {{...}}}}"
        ))
    }
}
