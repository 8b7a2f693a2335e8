//! The gateway: the user's other MCP servers ("upstreams"), whose tools
//! become modes behind the same two tools.
//!
//! The files, from the top down (each uses only files below it):
//!
//! - [`prompts`], [`resources`]: every server's prompts, completion and
//!   resources, offered as zenmode's own (methods of the [`Gateway`]);
//! - [`hub`]: the [`Gateway`] itself: every configured server, its modes,
//!   what is quarantined or unavailable; open, reload, calls, shutdown;
//! - [`approval`]: a server's tools checked against the pins and made
//!   modes, and the report of how it was opened;
//! - [`connection`]: one server's process (or HTTP session), started on
//!   first use, stopped when idle, restarted with backoff, calls bounded;
//! - [`catalog_cache`]: each server's cached catalog;
//! - [`capabilities`]: what each server offers besides tools, cached;
//! - [`oauth`]: sign-in to HTTP servers that ask for OAuth;
//! - [`pins`]: the pins of approved tool definitions;
//! - [`profiles`]: named sets of servers, one per client of a shared instance;
//! - [`serving`]: which version of the upstreams file each serving process loaded;
//! - [`status_file`]: each server's state file and stderr log, for `zenmode status`;
//! - [`disk`]: where the gateway's files live, and how they are written;
//! - [`config`]: the `mcpServers` file and zenmode's per-server options;
//! - [`resource_hub`]: which server owns each resource, and the
//!   subscriptions held;
//! - [`events`]: what an upstream tells its client that sessions care about;
//! - [`flowback`]: what an upstream asks of the client (elicitation,
//!   sampling, roots), passed to the session whose call it serves;
//! - [`unavailable`]: what the model cannot reach, and why, in one line;
//! - [`http_errors`]: a remote server's failures explained, with what to do;
//! - [`request_state`]: zenmode's signed `requestState` around an upstream's;
//! - [`reply_guard`]: a stdio server's replies held to its size limit;
//! - [`supervisor`]: the guard process that takes a stdio server's whole
//!   process group down with zenmode, even when zenmode is SIGKILLed;
//! - [`error`], [`tls`]: a failed call, and the process-wide TLS provider.
//!
//! Opening the gateway reads cached catalogs and spawns nothing it need
//! not; a server without a cached catalog is started in the background to
//! learn its tools, and its modes join the catalog when it answers
//! ([`Gateway::subscribe`] tells the engine). Until then, and after a
//! failure, the server is *unavailable* with a one-line reason that the
//! surface shows the model ([`Gateway::unavailable`]). A failed start is
//! retried with a growing backoff, one log line per failure.
//!
//! Every tool's definition is compared with the approved pins: a changed or
//! new one is quarantined (offered nowhere, refused if called) until
//! `zenmode upstream approve`. A server never seen before is approved on
//! first use (its pins written).
//!
//! [`Gateway::reload`] applies a changed upstreams file to a running
//! gateway; [`serving`] records which version of the file each running
//! process has loaded.

pub mod approval;
pub mod capabilities;
pub mod catalog_cache;
pub mod config;
pub mod connection;
pub mod disk;
pub mod error;
pub mod events;
pub mod flowback;
pub mod http_errors;
pub mod hub;
pub mod oauth;
pub mod pins;
pub mod profiles;
pub mod prompts;
pub mod reply_guard;
pub mod request_state;
pub mod resource_hub;
pub mod resources;
pub mod serving;
pub mod status_file;
pub mod supervisor;
pub mod text_result;
pub mod tls;
pub mod unavailable;

pub use approval::{CatalogSource, ServerReport};
pub use catalog_cache::ListedTool;
pub use config::{ConfigError, UpstreamConfig, UpstreamsFile};
pub use disk::GatewayDirs;
pub use error::{FailureKind, GatewayError};
pub use hub::Gateway;
pub use pins::{Pins, Verdict, quarantine_message};
