//! An upstream's failures as the caller sees them ([`GatewayError`]): a
//! timeout (with an oversized reply that may explain it), a crash (with
//! the end of its stderr), a refusal, an HTTP failure explained; secrets
//! hidden and the message capped.

use rmcp::{
    service::ServiceError,
    transport::{auth::AuthError, streamable_http_client::StreamableHttpError},
};

use super::upstream::Upstream;
use crate::gateway::error::FailureKind;
use crate::gateway::{error::GatewayError, oauth, reply_guard};

/// The longest error message relayed to the caller, in characters.
const MAX_ERROR_CHARS: usize = 2_000;

impl Upstream {
    pub(super) fn service_error(&self, error: ServiceError) -> GatewayError {
        if let ServiceError::TransportSend(sent) = &error
            && let Some(refusal) = self.sign_in_refusal(&*sent.error)
        {
            return refusal;
        }
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

    /// What an HTTP server's sign-in failure means, when `error` (the
    /// transport's, for one request) is one: the session is fine, the
    /// request was refused, so it is neither a crash nor a reason to wait
    /// before the next call.
    fn sign_in_refusal(
        &self,
        error: &(dyn std::error::Error + Send + Sync + 'static),
    ) -> Option<GatewayError> {
        type HttpError = StreamableHttpError<reqwest::Error>;
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
        let http = loop {
            let current = next?;
            if let Some(http) = current.downcast_ref::<HttpError>() {
                break http;
            }
            next = current.source();
        };
        let needs_sign_in = || {
            self.record(|state| {
                state.state = oauth::NEEDS_SIGN_IN.into();
                state.last_error = Some(oauth::needs_sign_in_message(self.name()));
            });
            self.error(
                FailureKind::NeedsSignIn,
                oauth::needs_sign_in_message(self.name()),
            )
        };
        Some(match http {
            HttpError::InsufficientScope(needed) => self.error(
                FailureKind::InsufficientScope,
                format!(
                    "server {:?} refused the call: insufficient scope: it wants {}, which signing in again did not grant (check the scopes of the entry's \"oauth\" object and what the account may do)",
                    self.name(),
                    needed
                        .required_scope
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .map_or_else(|| "a scope it did not name".to_owned(), |s| format!("{s:?}"))
                ),
            ),
            HttpError::AuthRequired(_)
            | HttpError::Auth(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                needs_sign_in()
            }
            HttpError::Auth(other) => self.error(
                FailureKind::UpstreamUnavailable,
                format!(
                    "server {:?}: renewing its access token failed: {}; the next call tries again",
                    self.name(),
                    oauth::explain(other)
                ),
            ),
            _ => return None,
        })
    }

    /// An error for the caller: secrets hidden, and at most
    /// [`MAX_ERROR_CHARS`] of the message (an upstream's own error text can
    /// be any size).
    pub(super) fn error(&self, kind: FailureKind, message: String) -> GatewayError {
        GatewayError {
            kind,
            server: self.name().to_owned(),
            message: capped(&self.secrets().redact(&message), MAX_ERROR_CHARS),
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
