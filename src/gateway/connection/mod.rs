//! One upstream server ([`Upstream`]): started on first use, stopped when
//! idle, restarted with backoff after a crash, and every call bounded by a
//! timeout.
//!
//! A stdio upstream runs in its own process group under a guard
//! ([`crate::gateway::supervisor`]), so stopping it also stops what it
//! started (`npx` runs node under it), and the whole group dies with
//! zenmode, SIGKILL included. `${VAR}` placeholders in its entry are filled
//! here, once, from zenmode's environment; the filled values are secrets
//! like the others. Its stderr goes to zenmode's log, prefixed with the
//! server name and with the entry's secrets hidden, and (for a serving
//! zenmode) to its own log file; the last lines are kept to explain a
//! crash. A serving zenmode also records each transition and the last call
//! in the server's state file ([`crate::gateway::status_file`]).
//!
//! The files, from the top down (each uses only files below it, and calls
//! only methods defined below it):
//!
//! - `calls`: `tools/call` and the other forwarded requests;
//! - `lifecycle`: the first start, restarts after a growing backoff,
//!   the idle stop and the last one;
//! - `start`: spawning (or connecting), the handshake and the tool list;
//! - `errors`: failures as the caller sees them;
//! - `stderr`: the server's stderr, read, paced, logged and kept;
//! - `upstream`: the [`Upstream`] itself, its state and what it holds;
//! - `running`: a started server: its session and process group;
//! - `client`: zenmode as the MCP client of the server;
//! - `progress`: where the server's progress notifications go, kept a
//!   moment when they arrive before their call noted its token;
//! - `stdin_queue`: what is written to a stdio server, queued so that
//!   writing never waits on it.

mod calls;
mod client;
mod errors;
mod lifecycle;
mod progress;
mod running;
mod start;
mod stderr;
mod stdin_queue;
mod upstream;

pub use upstream::{Started, Upstream};
