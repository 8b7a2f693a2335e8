//! What a failed upstream call is ([`GatewayError`]): a kind, the server
//! and a message; it becomes an `isError` result naming the server. The
//! lowest file of the gateway, used by everything that calls a server.

/// A failed upstream call; becomes an `isError` result naming the server.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    pub kind: &'static str,
    pub server: String,
    pub message: String,
}
