//! Helpers several executors share: recording turns, reading files and
//! images inside the allowed roots, and dividing a prompt's token budget.
//!
//! They live here rather than in any one executor so that executors depend
//! on this module, never on each other.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ExecContext, ExecError};
use crate::{
    catalog::Mode,
    conversation::{MemoryError, Turn, normalize_id},
    files::Embedded,
    providers::{Image, ProviderError},
};

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
                .services
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
            // Only a regular file inside the roots, never more than the cap:
            // a FIFO or a device named like an image must not hang or flood us.
            let bytes = context
                .services
                .files
                .read_file(&path, MAX_IMAGE_BYTES)
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
    let files = &context.services.files;
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

/// Reads a validated request into the executor's request type.
///
/// The schema has already accepted the request, so a failure here means the
/// type and the manifest disagree, which `modes check` is there to prevent.
pub fn parse_request<T: DeserializeOwned>(request: Value) -> Result<T, ExecError> {
    serde_json::from_value(request).map_err(|e| ExecError::new("invalid_request", e.to_string()))
}

/// A default the mode's schema gives at `pointer` (a JSON pointer to a
/// `default` keyword): executors read defaults from the manifest instead of
/// restating them.
pub fn schema_default<'a>(mode: &'a Mode, pointer: &str) -> Option<&'a str> {
    mode.schema().pointer(pointer).and_then(Value::as_str)
}

/// The most steps a workflow or plan may count: far beyond any real
/// investigation, and far below where step arithmetic could overflow.
pub const MAX_STEPS: u64 = 10_000;

/// Refuses step counts no real task has (a step number near `u64::MAX`
/// would otherwise wrap when the next step is named).
pub fn check_step_counts(step_number: u64, total_steps: u64) -> Result<(), ExecError> {
    if step_number > MAX_STEPS || total_steps > MAX_STEPS {
        return Err(ExecError::new(
            "too_many_steps",
            format!(
                "step_number and total_steps may be at most {MAX_STEPS} (got {step_number} and {total_steps})"
            ),
        ));
    }
    Ok(())
}

/// Turns a memory error into what the agent reads.
pub fn memory_error(error: MemoryError) -> ExecError {
    let kind = match error {
        MemoryError::Expired { .. } => "expired_continuation",
        MemoryError::Full { .. } => "thread_full",
        MemoryError::Unavailable { .. } => "store_unavailable",
        _ => "unknown_continuation",
    };
    ExecError::new(kind, error.to_string())
}

/// Opens the thread named by `continuation_id`, or starts one, and records
/// `turn`. Returns the thread's id as stored (a lower-case hyphenated
/// UUID), whatever spelling the caller gave: replies echo this one.
pub async fn record_turn(
    context: &ExecContext<'_>,
    continuation_id: Option<&str>,
    turn: Turn,
) -> Result<String, ExecError> {
    let memory = &context.services.memory;
    match continuation_id {
        Some(id) => {
            let id = normalize_id(id).map_err(memory_error)?;
            memory.append(&id, turn).await.map_err(memory_error)?;
            Ok(id)
        }
        None => memory.create(turn).await.map_err(memory_error),
    }
}

/// Shares of the model's context window (in tokens) for each part of the prompt.
pub struct PromptBudget {
    pub files: usize,
    pub history: usize,
    pub diff: usize,
}

impl PromptBudget {
    /// Leaves 40% of the window for the answer and the findings themselves.
    pub fn for_window(context_window: u64) -> Self {
        let prompt = usize::try_from(context_window).unwrap_or(usize::MAX) / 10 * 6;
        PromptBudget {
            files: prompt / 2,
            history: prompt / 6,
            diff: prompt / 4,
        }
    }
}

/// File reads are blocking; keep them off the async workers.
pub async fn embed(context: &ExecContext<'_>, paths: Vec<String>, budget: usize) -> Embedded {
    let files = context.services.files.clone();
    tokio::task::spawn_blocking(move || files.embed(&paths, budget))
        .await
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_leaves_room_for_the_answer() {
        let budget = PromptBudget::for_window(100_000);
        assert_eq!(budget.files, 30_000);
        assert!(budget.files + budget.history + budget.diff <= 60_000);
    }
}
