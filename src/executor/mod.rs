//! Executors: the code that runs a validated request for a mode.
//!
//! A manifest names its executor by key; [`REGISTRY`] maps keys to
//! constructors and to the request type each executor reads. The engine
//! instantiates an executor on the first request for its mode and keeps it
//! for the process (executors may hold state, such as the planner's plans).
//!
//! Executors see their mode, the catalog, the process [`Services`] and the
//! call's context; they know nothing about the engine above them or the MCP
//! tools that reach them. Helpers shared by several executors live in
//! [`support`], so executors never import each other.

mod apilookup;
mod challenge;
mod chat;
mod clink;
mod consensus;
mod forward;
mod listmodels;
mod planner;
pub mod support;
mod version;
pub mod workflow;

use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    call::CallContext,
    catalog::{Catalog, Manifest, Mode},
    services::Services,
};

/// Runs validated requests for one mode.
#[async_trait]
pub trait Executor: Send + Sync {
    /// `request` has already passed the mode's schema.
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError>;

    /// Whether a successful answer is another server's whole tool result,
    /// to be passed on unchanged rather than wrapped as JSON.
    fn passes_through(&self) -> bool {
        false
    }
}

/// What an executor may consult besides its request.
pub struct ExecContext<'a> {
    pub mode: &'a Mode,
    /// Every mode of the process (read by `version`).
    pub catalog: &'a Catalog,
    pub services: &'a Services,
    /// This call's cancellation and progress reporting.
    pub call: &'a CallContext,
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

/// Field names of a request type, as serde reads them.
type FieldNames = fn() -> &'static [&'static str];

/// The Rust type an executor reads its request into.
///
/// Schemas live only in manifests; an executor's request struct is a typed
/// view of them. `zenmode modes check` (and the test suite) proves the view
/// and the manifest agree: every field the type reads is a schema property,
/// and the manifest's example request deserializes into the type.
#[derive(Clone, Copy)]
pub struct RequestShape {
    /// The type's top-level field names.
    pub fields: FieldNames,
    /// Field names of nested object types, keyed by the property holding
    /// them (an object, or an array of objects).
    pub nested: &'static [(&'static str, FieldNames)],
    /// Deserializes a request into the type, as the executor will.
    pub parse: fn(Value) -> Result<(), String>,
}

impl RequestShape {
    pub const fn of<T: DeserializeOwned>() -> Self {
        RequestShape {
            fields: serde_aux::serde_introspection::serde_introspect::<'static, T>,
            nested: &[],
            parse: |request| {
                serde_json::from_value::<T>(request)
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        }
    }

    pub const fn with_nested(self, nested: &'static [(&'static str, FieldNames)]) -> Self {
        RequestShape { nested, ..self }
    }
}

/// Builds an executor for a mode; errors explain a manifest that cannot be run.
type Constructor = fn(&Mode) -> Result<Arc<dyn Executor>, String>;

/// One executor this build implements.
pub struct Registration {
    pub key: &'static str,
    construct: Constructor,
    /// The types it reads a mode's requests into (none when it reads nothing).
    request: fn(&Manifest) -> Vec<RequestShape>,
}

/// Executor keys this build implements, how to build each, and what each reads.
pub static REGISTRY: &[Registration] = &[
    Registration {
        key: "apilookup",
        construct: |_| Ok(Arc::new(apilookup::ApiLookup)),
        request: |_| vec![apilookup::REQUEST],
    },
    Registration {
        key: "challenge",
        construct: |_| Ok(Arc::new(challenge::Challenge)),
        request: |_| vec![challenge::REQUEST],
    },
    Registration {
        key: "chat",
        construct: |_| Ok(Arc::new(chat::Chat)),
        request: |_| vec![chat::REQUEST],
    },
    Registration {
        key: "clink",
        construct: |_| Ok(Arc::new(clink::Clink)),
        request: |_| vec![clink::REQUEST],
    },
    Registration {
        key: "consensus",
        construct: |_| Ok(Arc::new(consensus::Consensus)),
        request: |_| vec![consensus::REQUEST],
    },
    Registration {
        key: "listmodels",
        construct: |_| Ok(Arc::new(listmodels::ListModels)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "planner",
        construct: |_| Ok(Arc::new(planner::Planner)),
        request: |_| vec![planner::REQUEST],
    },
    Registration {
        key: crate::catalog::gateway_modes::EXECUTOR_KEY,
        construct: |mode| Ok(Arc::new(forward::UpstreamCall::for_mode(mode)?)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "version",
        construct: |_| Ok(Arc::new(version::Version)),
        request: |_| Vec::new(),
    },
    Registration {
        key: "workflow",
        construct: |mode| Ok(Arc::new(workflow::WorkflowExecutor::for_mode(mode)?)),
        request: workflow::request_shapes,
    },
];

fn registration(key: &str) -> Option<&'static Registration> {
    REGISTRY.iter().find(|entry| entry.key == key)
}

/// Builds the executor registered under `key` for `mode`: `None` when this
/// build has no such executor, `Some(Err)` when the manifest cannot run.
pub fn construct(key: &str, mode: &Mode) -> Option<Result<Arc<dyn Executor>, String>> {
    registration(key).map(|entry| (entry.construct)(mode))
}

/// Whether this build has an executor registered under `key`.
pub fn is_registered(key: &str) -> bool {
    registration(key).is_some()
}

/// The types the executor of `manifest` reads its requests into; empty when
/// it reads none or this build has no such executor.
pub fn request_shapes(manifest: &Manifest) -> Vec<RequestShape> {
    manifest
        .executor
        .as_deref()
        .and_then(registration)
        .map(|entry| (entry.request)(manifest))
        .unwrap_or_default()
}

/// The executor keys of this build, in registry order.
pub fn keys() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|entry| entry.key)
}
