//! What a failed upstream call is ([`GatewayError`]): a kind, the server
//! and a message; it becomes an `isError` result naming the server, or a
//! JSON-RPC error whose code follows from the kind. The lowest file of the
//! gateway, used by everything that calls a server.

/// Why an upstream call failed. Callers branch on it (a crashed server is
/// started again once; the client's mistakes are invalid params), and the
/// result carries its name as `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The client cancelled the call.
    Cancelled,
    /// The client refused what the upstream asked of it.
    InputRefused,
    InvalidCursor,
    InvalidReference,
    InvalidRequest,
    /// A `requestState` zenmode did not issue, or not for this call.
    InvalidRequestState,
    /// The server wants a scope the sign-in did not get, even after
    /// signing in again with it.
    InsufficientScope,
    /// The server's sign-in is gone (its refresh token refused, or no
    /// tokens): a person signs in again with `zenmode upstream login`.
    NeedsSignIn,
    /// The tool's live definition differs from the approved one.
    Quarantined,
    UnknownPrompt,
    UnknownResource,
    UnknownUpstream,
    /// The server's process ended during the call.
    UpstreamCrashed,
    /// The server answered with an error.
    UpstreamError,
    UpstreamReplyTooLarge,
    UpstreamTimeout,
    /// The server no longer lists the tool.
    UpstreamToolMissing,
    /// The server cannot be reached or started.
    UpstreamUnavailable,
}

impl FailureKind {
    /// The name results and logs carry.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Cancelled => "cancelled",
            FailureKind::InputRefused => "input_refused",
            FailureKind::InvalidCursor => "invalid_cursor",
            FailureKind::InvalidReference => "invalid_reference",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::InvalidRequestState => "invalid_request_state",
            FailureKind::InsufficientScope => "insufficient_scope",
            FailureKind::NeedsSignIn => "needs_sign_in",
            FailureKind::Quarantined => "quarantined",
            FailureKind::UnknownPrompt => "unknown_prompt",
            FailureKind::UnknownResource => "unknown_resource",
            FailureKind::UnknownUpstream => "unknown_upstream",
            FailureKind::UpstreamCrashed => "upstream_crashed",
            FailureKind::UpstreamError => "upstream_error",
            FailureKind::UpstreamReplyTooLarge => "upstream_reply_too_large",
            FailureKind::UpstreamTimeout => "upstream_timeout",
            FailureKind::UpstreamToolMissing => "upstream_tool_missing",
            FailureKind::UpstreamUnavailable => "upstream_unavailable",
        }
    }
}

/// A failed upstream call; becomes an `isError` result naming the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{server}: {message}")]
pub struct GatewayError {
    pub kind: FailureKind,
    pub server: String,
    pub message: String,
}
