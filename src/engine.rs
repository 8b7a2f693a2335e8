//! The engine: one per process, shared by every session.
//!
//! It owns the catalog, the lazily built selection index and the lazily
//! started executors, and it turns a mode name and a request into an
//! [`Outcome`]: validation, dispatch to the mode's executor, and failures as
//! readable error bodies. It knows no MCP tool name: the surface above maps
//! tools onto it, and the CLI calls it directly, so `zenmode select` and
//! `zenmode exec` run exactly what the tools run.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
};

use serde_json::{Value, json};

use crate::{
    catalog::{Catalog, Mode, Origin},
    describe,
    executor::{self, ExecContext, Executor},
    select::Index,
    services::{CallContext, Services},
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
    pub closest: Vec<String>,
}

pub struct Engine {
    catalog: Catalog,
    index: OnceLock<Index>,
    /// Build the full model's index on another thread
    /// ([`Index::build_model_later`]): set by servers, not one-shot commands.
    model_later: bool,
    /// One cell per mode; filled with its executor on the mode's first request.
    executors: HashMap<String, OnceLock<Option<StartedExecutor>>>,
    services: Services,
}

/// An executor, or why the mode's manifest cannot be run.
type StartedExecutor = Result<Arc<dyn Executor>, String>;

impl Engine {
    /// An engine with [`Services::offline`]: no providers, files confined to
    /// the working directory (tests, benches and the measuring commands).
    pub fn new(catalog: Catalog) -> Result<Self, String> {
        Self::with_services(catalog, Services::offline())
    }

    /// Fails when a mode read from `--modes-dir` names an executor whose
    /// configuration in the manifest cannot run: such errors belong to
    /// start-up, like the manifest's other errors. Embedded modes are checked
    /// by `modes check` and the tests instead, so start-up stays lazy.
    pub fn with_services(catalog: Catalog, services: Services) -> Result<Self, String> {
        for mode in catalog.modes() {
            if let Origin::ModesDir(path) = &mode.origin
                && let Some(key) = mode.manifest().executor.as_deref()
                && let Some(Err(problem)) = executor::construct(key, mode)
            {
                return Err(format!("{}: {problem}", path.display()));
            }
        }
        let executors = catalog
            .names()
            .map(|name| (name.to_owned(), OnceLock::new()))
            .collect();
        Ok(Engine {
            catalog,
            index: OnceLock::new(),
            model_later: false,
            executors,
            services,
        })
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// For a server: the first select does not wait for the full model to
    /// encode every tool (the table answers alone until it has). One-shot
    /// commands keep waiting, since they exit after one answer.
    pub fn build_model_later(mut self) -> Self {
        self.model_later = true;
        self
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

    pub fn services(&self) -> &Services {
        &self.services
    }

    /// Looks a mode up, or says which names come closest.
    pub fn mode(&self, name: &str) -> Result<&Mode, UnknownMode> {
        self.catalog
            .get(name)
            .map(|mode| mode.as_ref())
            .ok_or_else(|| UnknownMode {
                name: name.to_owned(),
                closest: self
                    .catalog
                    .closest_names(name, 3)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            })
    }

    /// Validates `request` against the mode's schema and runs its executor.
    ///
    /// `continuation_id` (given beside the request rather than inside it) is
    /// copied into the request when the mode's schema has that field.
    pub async fn execute(
        &self,
        mode_name: &str,
        mut request: Value,
        continuation_id: Option<&str>,
        call: &CallContext,
    ) -> Result<Outcome, UnknownMode> {
        let mode = self.mode(mode_name)?;
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
        let executor = match self.executor_for(mode) {
            None => return Ok(no_executor(mode)),
            Some(Err(problem)) => return Ok(Outcome::failure("broken_mode", problem)),
            Some(Ok(executor)) => executor,
        };
        let context = ExecContext {
            mode,
            catalog: &self.catalog,
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

    fn executor_for(&self, mode: &Mode) -> Option<StartedExecutor> {
        let key = mode.manifest().executor.as_deref()?;
        let cell = self.executors.get(mode.name())?;
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
