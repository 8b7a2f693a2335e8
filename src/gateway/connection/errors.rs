//! An upstream's failures as the caller sees them ([`GatewayError`]): a
//! timeout (with an oversized reply that may explain it), a crash (with
//! the end of its stderr), a refusal, an HTTP failure explained; secrets
//! hidden and the message capped.

use rmcp::service::ServiceError;

use super::upstream::Upstream;
use crate::gateway::error::FailureKind;
use crate::gateway::{error::GatewayError, reply_guard};

/// The longest error message relayed to the caller, in characters.
const MAX_ERROR_CHARS: usize = 2_000;

impl Upstream {
    pub(super) fn service_error(&self, error: ServiceError) -> GatewayError {
        match error {
            ServiceError::Timeout { timeout } => {
                let oversize = self
                    .oversize_note
                    .lock()
                    .ok()
                    .and_then(|mut note| note.take())
                    .map(|note| format!(" (earlier: {note})"))
                    .unwrap_or_default();
                self.error(
                    FailureKind::UpstreamTimeout,
                    format!(
                        "server {:?} did not answer within {}s; the call was cancelled upstream{oversize}",
                        self.name(),
                        timeout.as_secs_f64()
                    ),
                )
            }
            ServiceError::McpError(data) if data.code.0 == reply_guard::TOO_LARGE_CODE => self
                .error(
                    FailureKind::UpstreamReplyTooLarge,
                    data.message.into_owned(),
                ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => self.error(
                FailureKind::UpstreamCrashed,
                format!(
                    "server {:?} stopped during the call{}; the next call restarts it",
                    self.name(),
                    self.stderr_note()
                ),
            ),
            ServiceError::McpError(data) => self.error(
                FailureKind::UpstreamError,
                format!(
                    "server {:?} refused the call: {} (code {})",
                    self.name(),
                    data.message,
                    data.code.0
                ),
            ),
            other => self.error(
                FailureKind::UpstreamError,
                format!(
                    "server {:?}: {}",
                    self.name(),
                    crate::gateway::http_errors::explain_error(&other)
                ),
            ),
        }
    }

    /// An error for the caller: secrets hidden, and at most
    /// [`MAX_ERROR_CHARS`] of the message (an upstream's own error text can
    /// be any size).
    pub(super) fn error(&self, kind: FailureKind, message: String) -> GatewayError {
        GatewayError {
            kind,
            server: self.name().to_owned(),
            message: capped(&self.redactor.redact(&message), MAX_ERROR_CHARS),
        }
    }
}

/// `text` cut to `max` characters, saying how many were left out.
fn capped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => {
            let left_out = text[at..].chars().count();
            format!("{}… ({left_out} more characters cut)", &text[..at])
        }
    }
}
