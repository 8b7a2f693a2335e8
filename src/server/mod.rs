//! The server role: zenmode as an MCP server. The rmcp handler over a
//! strategy, the transports that carry it (stdio and TCP lines, Streamable
//! HTTP), where sessions come from, shutdown and the stderr log.

pub mod activity_feed;
mod client_peer;
pub mod dashboard;
pub mod handler;
pub mod http;
pub mod listener;
pub mod logging;
mod resources;
pub mod result_handles;
pub mod shared;
pub mod shutdown;
pub mod transport;

pub use handler::{ZenServer, to_call_result};
