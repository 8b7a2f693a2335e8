//! zenmode: an MCP server that lists two tools instead of a whole suite.
//!
//! # Layout
//!
//! - [`catalog`]: loads the mode manifests (embedded, `--modes-dir`, foreign
//!   catalogs) and compiles each mode's schema lazily, on first use.
//! - [`describe`]: derives field summaries, example requests and readable
//!   validation errors from a manifest.
//! - [`select`]: the ranking index behind `zen_select_mode`.
//! - [`tools`]: the listed tools, one file per tool, and the single
//!   [`tools::ToolCall`] dispatch.
//! - [`executor`]: the `Executor` trait, its registry, one file per executor.
//! - [`engine`]: the per-process state everything shares (catalog, tool
//!   list, index, started executors); the CLI and the server both call it.
//! - [`server`]: the rmcp `ServerHandler` wrapping the engine.
//! - [`transport`]: newline-delimited JSON-RPC framing with error replies.
//! - [`listener`]: stdio and TCP sessions (connection handling).
//! - [`shutdown`]: signal handling that ends every session.
//! - [`tokens`]: token metrics with real tokenizers (CLI and tests only).
//! - [`check`]: `zenmode modes check`.
//! - [`cli`]: the command line.
//!
//! See ARCHITECTURE.md for the invariants.

pub mod catalog;
pub mod check;
pub mod cli;
pub mod describe;
pub mod engine;
pub mod executor;
pub mod listener;
pub mod select;
pub mod server;
pub mod shutdown;
pub mod tokens;
pub mod tools;
pub mod transport;
