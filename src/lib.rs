//! zenmode: an MCP server that lists two tools instead of a whole suite.
//!
//! # Layout
//!
//! - [`catalog`]: loads the mode manifests (embedded, `--modes-dir`, foreign
//!   catalogs) and compiles each mode's schema lazily, on first use.
//! - [`describe`]: derives field summaries, example requests and readable
//!   validation errors from a manifest.
//! - [`select`]: the ranking index behind `zen_select_mode`.
//! - [`eval`]: `zenmode eval`, scoring the ranking on a labeled set.
//! - [`tools`]: the listed tools, one file per tool, and the single
//!   [`tools::ToolCall`] dispatch.
//! - [`executor`]: the `Executor` trait, its registry, one file per executor.
//! - [`providers`]: model providers (OpenAI-compatible, Gemini), the model
//!   registry and model resolution, with timeouts, retries and cancellation.
//! - [`files`]: file access confined to the allowed roots, and files
//!   embedded line-numbered within a token budget.
//! - [`conversation`]: threads that continue across calls and modes
//!   (`continuation_id`), the store trait and its in-memory store, and
//!   history rebuilt within a token budget.
//! - [`services`]: what executors use besides the request: providers, files,
//!   memory, CLIs (per process); progress and cancellation (per call).
//! - [`workflow`]: the step-by-step engine shared by the investigation modes.
//! - [`engine`]: the per-process state everything shares (catalog, tool
//!   list, index, started executors); the CLI and the server both call it.
//! - [`server`]: the rmcp `ServerHandler` wrapping the engine.
//! - [`transport`]: newline-delimited JSON-RPC framing with error replies.
//! - [`listener`]: stdio and TCP sessions (connection handling).
//! - [`shutdown`]: signal handling that ends every session.
//! - [`logging`]: stderr logging that never blocks or panics.
//! - [`tokens`]: token metrics with real tokenizers (CLI and tests only).
//! - [`check`]: `zenmode modes check`.
//! - [`docs`]: Markdown generated from the manifests (README table, docs/modes.md).
//! - [`cli`]: the command line.
//!
//! See ARCHITECTURE.md for the invariants.

pub mod catalog;
pub mod check;
pub mod cli;
pub mod conversation;
pub mod describe;
pub mod docs;
pub mod engine;
pub mod eval;
pub mod executor;
pub mod files;
pub mod listener;
pub mod logging;
pub mod providers;
pub mod select;
pub mod server;
pub mod services;
pub mod shutdown;
pub mod tokens;
pub mod tools;
pub mod transport;
pub mod workflow;
