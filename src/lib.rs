//! zenmode: an MCP server that lists two tools instead of a whole suite.
//!
//! # Layout
//!
//! TODO(layout)

pub mod call;
pub mod catalog;
pub mod cli;
pub mod conversation;
pub mod engine;
pub mod executor;
pub mod files;
pub mod gateway;
pub mod platform;
pub mod providers;
pub mod select;
pub mod server;
pub mod services;
pub mod surface;
