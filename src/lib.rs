//! zenmode: an MCP server that lists two tools instead of a whole suite.
//!
//! # Layout
//!
//! Folders are the layers. Each module imports only from its own layer and
//! the ones below it, and no two files import each other, directly or in a
//! ring (`tests/layers.rs` checks both against ARCHITECTURE.md's table):
//!
//! 0. [`platform`]: facts about the machine, each in one place: where
//!    zenmode's files live, every `ZEN_*` variable, owner-only writes,
//!    whether a process runs, where each MCP client keeps its servers,
//!    hiding secrets in text and logs, and handing back the pages of
//!    compiled-in data once read.
//! 1. [`catalog`] loads the mode manifests (embedded, `--modes-dir`,
//!    foreign catalogs, the gateway's tools) and compiles each schema
//!    lazily; [`select`] ranks modes for a task and scores that ranking
//!    (`zenmode eval`).
//! 2. [`providers`] (model APIs), [`files`] (file access confined to the
//!    allowed roots) and [`conversation`] (threads and result handles in
//!    memory, SQLite or Redis).
//! 3. [`call`]: what one call carries down (cancellation, progress, the
//!    session's client for what an upstream asks back and its bounds, the
//!    owner of the result handles it reads, and the way a `script` reaches
//!    other modes).
//! 4. [`gateway`]: zenmode as an MCP client of the user's servers: the
//!    upstreams file, one connection per server, OAuth, pins and caches.
//! 5. [`services`]: what executors use, bundled once per process.
//! 6. [`executor`]: the `Executor` contract, the registry and one file per
//!    executor.
//! 7. [`engine`]: a mode and its request to the mode's executor; it knows
//!    no MCP tool name.
//! 8. [`surface`]: the strategies that present the catalog as MCP tools,
//!    one file each.
//! 9. [`server`]: zenmode as an MCP server: the rmcp handler, the stdio,
//!    TCP and Streamable HTTP transports, large replies as handles, the
//!    shared instance's files and dashboard, shutdown and the stderr log.
//! 10. [`cli`]: the command line, one file per subcommand.
//!
//! Below them all, outside this crate: `zenmode-bert` (`crates/bert`), the
//! embedding model's encoder that `select` runs with the default
//! `transformer` feature; it imports nothing of zenmode.
//!
//! See ARCHITECTURE.md for the code map and the invariants.

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
