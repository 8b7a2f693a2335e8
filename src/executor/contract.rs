//! What every executor implements and receives: the `Executor` trait, the
//! context of a call, the error it returns, and the request type it reads
//! (which `zenmode modes check` holds against the mode's schema).

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    call::CallContext,
    catalog::{Catalog, Mode},
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
