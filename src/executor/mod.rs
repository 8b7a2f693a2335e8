//! Executors: the code that runs a validated request for a mode.
//!
//! A manifest names its executor by key; [`REGISTRY`] maps keys to
//! constructors. The engine instantiates an executor on the first request for
//! its mode and keeps it for the process (executors may hold state, such as
//! the planner's plans).

mod apilookup;
mod challenge;
mod listmodels;
mod planner;
mod version;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{catalog::Mode, engine::Engine};

/// Runs validated requests for one mode.
#[async_trait]
pub trait Executor: Send + Sync {
    /// `request` has already passed the mode's schema.
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError>;
}

/// What an executor may consult besides its request.
pub struct ExecContext<'a> {
    pub mode: &'a Mode,
    pub engine: &'a Engine,
}

/// A failure the caller should read: it becomes an `isError` tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecError {
    /// A stable machine-readable kind, e.g. `unknown_continuation`.
    pub kind: &'static str,
    pub message: String,
    /// Extra fields merged into the error body.
    pub details: Map<String, Value>,
}

impl ExecError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        ExecError {
            kind,
            message: message.into(),
            details: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    /// The JSON body of the `isError` result.
    pub fn to_body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".to_owned(), Value::from(self.kind));
        body.insert("message".to_owned(), Value::from(self.message.clone()));
        body.extend(self.details.clone());
        Value::Object(body)
    }
}

type Constructor = fn() -> Arc<dyn Executor>;

/// Executor keys this build implements, and how to build each.
pub static REGISTRY: &[(&str, Constructor)] = &[
    ("apilookup", || Arc::new(apilookup::ApiLookup)),
    ("challenge", || Arc::new(challenge::Challenge)),
    ("listmodels", || Arc::new(listmodels::ListModels)),
    ("planner", || Arc::new(planner::Planner::default())),
    ("version", || Arc::new(version::Version)),
];

/// Builds the executor registered under `key`, if this build has one.
pub fn construct(key: &str) -> Option<Arc<dyn Executor>> {
    REGISTRY
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, constructor)| constructor())
}

/// Whether this build has an executor registered under `key`.
pub fn is_registered(key: &str) -> bool {
    REGISTRY.iter().any(|(name, _)| *name == key)
}

/// Reads a string field from a validated request.
fn str_field<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request.get(name).and_then(Value::as_str)
}
