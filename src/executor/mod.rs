//! Executors: the code that runs a validated request for a mode.
//!
//! A manifest names its executor by key; [`REGISTRY`] maps keys to
//! constructors. The engine instantiates an executor on the first request for
//! its mode and keeps it for the process (executors may hold state, such as
//! the planner's plans).

mod apilookup;
mod challenge;
mod chat;
pub mod clink;
mod consensus;
mod listmodels;
mod planner;
mod version;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::{
    catalog::Mode,
    engine::Engine,
    providers::{Image, ProviderError},
    services::CallContext,
    workflow::WorkflowExecutor,
};

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

/// Builds an executor for a mode; errors explain a manifest that cannot be run.
type Constructor = fn(&Mode) -> Result<Arc<dyn Executor>, String>;

/// Executor keys this build implements, and how to build each.
pub static REGISTRY: &[(&str, Constructor)] = &[
    ("apilookup", |_| Ok(Arc::new(apilookup::ApiLookup))),
    ("challenge", |_| Ok(Arc::new(challenge::Challenge))),
    ("chat", |_| Ok(Arc::new(chat::Chat))),
    ("clink", |_| Ok(Arc::new(clink::Clink))),
    ("consensus", |_| Ok(Arc::new(consensus::Consensus))),
    ("listmodels", |_| Ok(Arc::new(listmodels::ListModels))),
    ("planner", |_| Ok(Arc::new(planner::Planner))),
    ("version", |_| Ok(Arc::new(version::Version))),
    ("workflow", |mode| {
        let spec = mode.manifest().workflow.clone().ok_or_else(|| {
            format!(
                "mode {:?} uses the workflow executor but has no \"workflow\" section",
                mode.name()
            )
        })?;
        Ok(Arc::new(WorkflowExecutor::new(spec)))
    }),
];

/// Builds the executor registered under `key` for `mode`: `None` when this
/// build has no such executor, `Some(Err)` when the manifest cannot run.
pub fn construct(key: &str, mode: &Mode) -> Option<Result<Arc<dyn Executor>, String>> {
    REGISTRY
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, constructor)| constructor(mode))
}

/// Whether this build has an executor registered under `key`.
pub fn is_registered(key: &str) -> bool {
    REGISTRY.iter().any(|(name, _)| *name == key)
}

/// A provider failure as the agent reads it.
pub fn provider_error(error: ProviderError) -> ExecError {
    ExecError::new(error.kind(), error.to_string())
}

/// The largest image read from disk or accepted as a data URL (decoded bytes).
const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// Loads images given as absolute paths (inside the allowed roots) or as
/// `data:image/...;base64,` URLs; refuses anything else, naming it.
pub fn load_images(context: &ExecContext<'_>, specs: &[String]) -> Result<Vec<Image>, ExecError> {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let refuse = |spec: &str, why: String| {
        let shown: String = spec.chars().take(80).collect();
        ExecError::new("image", format!("image {shown:?}: {why}"))
    };
    specs
        .iter()
        .map(|spec| {
            if let Some(rest) = spec.strip_prefix("data:") {
                let (media_type, data) = rest.split_once(";base64,").ok_or_else(|| {
                    refuse(spec, "a data URL must be data:<type>;base64,<data>".into())
                })?;
                if !media_type.starts_with("image/") {
                    return Err(refuse(spec, format!("{media_type} is not an image type")));
                }
                let bytes = engine
                    .decode(data.trim())
                    .map_err(|e| refuse(spec, format!("not valid base64: {e}")))?;
                if bytes.len() > MAX_IMAGE_BYTES {
                    return Err(refuse(spec, format!("larger than {MAX_IMAGE_BYTES} bytes")));
                }
                return Ok(Image {
                    media_type: media_type.to_owned(),
                    base64: engine.encode(bytes),
                });
            }
            let path = context
                .engine
                .services()
                .files
                .resolve(spec)
                .map_err(|e| ExecError::new("file_access", e.to_string()))?;
            let extension = path
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .unwrap_or_default();
            let media_type = match extension.as_str() {
                "png" => "image/png",
                "jpg" | "jpeg" => "image/jpeg",
                "gif" => "image/gif",
                "webp" => "image/webp",
                other => {
                    return Err(refuse(
                        spec,
                        format!("unsupported image type {other:?} (png, jpeg, gif, webp)"),
                    ));
                }
            };
            let files = &context.engine.services().files;
            let bytes = files
                .read_regular_capped(&path, MAX_IMAGE_BYTES)
                .map_err(|e| refuse(spec, e.to_string()))?;
            Ok(Image {
                media_type: media_type.to_owned(),
                base64: engine.encode(bytes),
            })
        })
        .collect()
}

/// Refuses, naming the path, any file outside the allowed roots or missing.
pub fn check_paths(context: &ExecContext<'_>, paths: &[String]) -> Result<(), ExecError> {
    let files = &context.engine.services().files;
    for path in paths {
        files.resolve(path).map_err(|e| {
            ExecError::new("file_access", e.to_string()).with(
                "allowed_roots",
                files
                    .roots()
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>(),
            )
        })?;
    }
    Ok(())
}

/// Reads a string field from a validated request.
fn str_field<'a>(request: &'a Value, name: &str) -> Option<&'a str> {
    request.get(name).and_then(Value::as_str)
}
