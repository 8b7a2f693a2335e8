//! zenmode: an MCP server that lists two tools instead of a whole suite.
//!
//! # Layout
//!
//! Seven layers, each importing only from the layers below it
//! (`tests/layers.rs` enforces this; ARCHITECTURE.md has the table):
//!
//! 1. **catalog**: [`catalog`] loads the mode manifests (embedded,
//!    `--modes-dir`, foreign catalogs) and compiles each schema lazily;
//!    [`describe`] derives field summaries, example requests and readable
//!    validation errors; [`select`] is the ranking index; [`redact`] hides
//!    secrets in text and in every log line.
//! 2. **services**: [`services`] bundles what executors use (per process:
//!    [`providers`], [`files`] confined to the allowed roots,
//!    [`conversation`] threads (in memory, SQLite or Redis), CLI
//!    configuration, process facts, the gateway to upstream servers; per
//!    call: progress, cancellation and the session's client, which answers
//!    what an upstream asks back).
//! 3. **executors**: [`executor`] holds the `Executor` trait, the registry,
//!    one file per executor, the workflow engine as one executor, and the
//!    support they share.
//! 4. **engine**: [`engine`] dispatches a mode and its request to the mode's
//!    executor; it knows no MCP tool name.
//! 5. **surface**: [`surface`] holds the strategies that present the catalog
//!    as MCP tools (`zen`, `full`, `lazy`, `categories`, `groups`,
//!    `discover`), one file each, and per-session state.
//! 6. **server**: [`server`] (the rmcp handler over a strategy; the
//!    session's client as the gateway asks it; its `resources` file passes
//!    the upstreams' resources, prompts and completion through),
//!    [`transport`] (line framing with error replies), [`listener`] (stdio
//!    and TCP sessions), [`http`] (Streamable HTTP), [`shutdown`]
//!    (signals) and [`logging`] (stderr logs that never block or end the
//!    server).
//! 7. **tooling**: [`cli`], [`oauth_cli`] (upstream sign-in and the
//!    conformance probe), [`setup`] (connecting a client, moving its
//!    servers behind the gateway, and undoing both), `tokens` (token metrics; the default `tokens`
//!    feature), [`eval`], [`docs`] and [`check`].
//!
//! Below them all, outside this crate: `zenmode-bert` (`crates/bert`), the
//! embedding model's encoder that `select` runs with the default
//! `transformer` feature; it imports nothing of zenmode.
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
pub mod gateway_cli;
pub mod gateway_import;
pub mod http;
pub mod listener;
pub mod logging;
pub mod oauth_cli;
pub mod providers;
pub mod redact;
pub mod select;
pub mod server;
pub mod services;
pub mod setup;
pub mod shutdown;
pub mod surface;
#[cfg(feature = "tokens")]
pub mod tokens;
pub mod transport;
