//! Which modes can run in this process: a mode whose executor needs a
//! model provider cannot when none is configured. Select neither offers
//! such a mode as the fallback nor recommends it without saying so, and
//! the note says what to set.

use serde_json::{Value, json};

use crate::{catalog::Mode, engine::Engine, executor::needs_provider};

/// What select knows about running modes here.
pub struct Runnable {
    /// Why a mode needing a provider cannot run (`None`: one is configured).
    missing_provider: Option<String>,
}

impl Runnable {
    pub fn of(engine: &Engine) -> Self {
        let providers = &engine.services().providers;
        Self {
            missing_provider: providers
                .is_empty()
                .then(|| providers.resolve(None, "select").err())
                .flatten()
                .map(|error| error.to_string()),
        }
    }

    pub fn can_run(&self, mode: &Mode) -> bool {
        self.why_not(mode).is_none()
    }

    /// Why `mode` cannot run here, saying what to set.
    pub fn why_not(&self, mode: &Mode) -> Option<&str> {
        let executor = mode.manifest().executor.as_deref()?;
        if needs_provider(executor) {
            return self.missing_provider.as_deref();
        }
        None
    }

    /// Marks a reply's recommended mode and alternatives that cannot run:
    /// the recommended one gets `cannot_run` with the reason, an
    /// alternative `cannot_run: true`. (Their ready calls the decision
    /// already withheld.)
    pub fn mark(&self, reply: &mut Value, mode_of: impl Fn(&str) -> Option<std::sync::Arc<Mode>>) {
        if self.missing_provider.is_none() {
            return;
        }
        let Some(fields) = reply.as_object_mut() else {
            return;
        };
        let chosen = fields
            .get("mode")
            .and_then(Value::as_str)
            .and_then(&mode_of);
        if let Some(why) = chosen.as_deref().and_then(|mode| self.why_not(mode)) {
            fields.insert("cannot_run".into(), json!(why));
        }
        for list in ["alternatives", "choose"] {
            for entry in fields
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let unable = entry
                    .get("mode")
                    .and_then(Value::as_str)
                    .and_then(&mode_of)
                    .is_some_and(|mode| !self.can_run(&mode));
                if unable && let Some(entry) = entry.as_object_mut() {
                    entry.insert("cannot_run".into(), json!(true));
                }
            }
        }
    }
}
