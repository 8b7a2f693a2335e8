//! Confined file access, and the embedding of files into prompts.
//!
//! Modes receive paths from the calling agent (`relevant_files`,
//! `absolute_file_paths`, ...) and embed those files for a model. The paths
//! come from outside, so every one is checked against the allowed roots
//! before anything is opened:
//!
//! - paths are canonicalized (symlinks and `..` resolved) and must lie under
//!   a root; relative paths are refused, because the server's working
//!   directory is not the agent's;
//! - files found by expanding a directory get the same check, so a symlink
//!   inside a root that points outside is refused;
//! - directories are walked by our own small walker rather than
//!   `ignore::WalkBuilder`, because the walker reads `.gitignore` files in
//!   every parent directory up to `/` (even with `parents(false)`), and
//!   nothing outside the roots may be read. The ignore files themselves are
//!   parsed and matched by the `ignore` crate.
//!
//! Token counts here are estimates ([`estimate_tokens`]): the real
//! tokenizers are never loaded on the serving path.
//!
//! All functions do blocking I/O; async callers run them in
//! `tokio::task::spawn_blocking`.
//!
//! The files, from the top down (each uses only files below it):
//!
//! - `embed`: files read and line-numbered into a prompt, within a token
//!   budget, and a summary of what was left out;
//! - `expand`: directories expanded by our own walker, honouring ignore
//!   files without reading outside the roots;
//! - `confine`: the allowed roots, paths checked against them, and files
//!   opened only if they are still inside ([`FileAccess`]);
//! - `error`: why a path cannot be used, and why a file was left out;
//! - `tokens`: the token estimate.

mod confine;
mod embed;
mod error;
mod expand;
mod tokens;

pub use confine::{FileAccess, parse_root_list};
pub use embed::{Embedded, EmbeddedFile, LEFT_OUT_SAMPLE, LeftOut};
pub use error::{FileError, SkipReason, SkippedFile};
pub use tokens::estimate_tokens;
