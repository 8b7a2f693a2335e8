//! The upstreams file: the `mcpServers` shape that Claude Desktop, Claude
//! Code and Cursor already write, plus zenmode's own per-server options in
//! the same entry.
//!
//! ```json
//! {"mcpServers": {
//!   "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
//!   "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."},
//!           "prefix": "api", "timeout": 30, "idle_shutdown": 600, "startup": "lazy",
//!           "allow_tools": ["search_*"], "deny_tools": ["delete_repo"], "enabled": true}
//! }}
//! ```
//!
//! Values in `env` and `headers`, and credentials inside `url`, are treated
//! as secrets: hashed into the cache key but never printed (see
//! [`crate::platform::redact`] for exactly which values are hidden). They may be
//! `${VAR}` placeholders, filled from zenmode's environment when the server
//! starts ([`UpstreamConfig::expanded`]), so the file need not hold a secret.
//!
//! An entry that would run zenmode itself ([`runs_zenmode`]) is skipped with
//! a warning: a gateway fronting itself spawns itself without end.
//!
//! The files, from the top down (each uses only files below it):
//!
//! - `preflight`: why an entry cannot start, found without starting it;
//! - `parse`: reading and checking the file, entry by entry;
//! - `runs_itself`: recognising an entry that would run zenmode itself;
//! - `placeholders`: `${VAR}` filled from zenmode's environment;
//! - `fingerprint`: the hash of an entry that keys its cached catalog;
//! - `entry`: one checked server entry and what it says (transport,
//!   options, allow and deny lists, what may be shown of it).

mod entry;
mod fingerprint;
mod parse;
mod placeholders;
mod preflight;
mod runs_itself;
#[cfg(test)]
mod tests;

pub use entry::{
    DEFAULT_IDLE_SHUTDOWN, DEFAULT_TIMEOUT, OAuthSettings, Startup, Transport, UpstreamConfig,
};
pub use parse::{ConfigError, UpstreamsFile, load, load_each, parse, parse_each, parse_one};
pub use placeholders::{UnsetVariable, expand_placeholders};
pub use runs_itself::{SERVER_NAME, answers_as_zenmode, runs_zenmode, self_skip_message};

pub use super::reply_guard::DEFAULT_MAX_REPLY_BYTES;
pub use crate::platform::redact::Redactor;
