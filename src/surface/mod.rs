//! The tool surface: how the catalog is shown to MCP clients.
//!
//! A [`Strategy`] decides which tools `tools/list` holds and maps a call to
//! each of them onto the engine. One file per strategy:
//! - [`zen`]: the two meta tools `zen_select_mode` and `zen_execute`, plus
//!   any pinned modes (the default);
//! - [`full`]: every mode as its own tool, as the original suite listed them;
//! - [`lazy`]: one `manage_tools` tool that enables and disables the others;
//! - [`categories`]: browse categories, then fetch one tool's schema;
//! - [`groups`]: an `activate_<group>` tool per group of tools;
//! - [`discover`]: discover / detail / call / batch / pipe.
//!
//! [`dispatch`] holds `call`, `batch` and `pipe`, which every strategy
//! answers (design 003 makes them universal); only `discover` lists them.
//! `--tool-prefix` puts a prefix before every meta tool's name.
//!
//! `lazy` and `groups` change a session's list as it goes; the rest list
//! the same tools for the life of the process. A [`Session`] holds what a
//! session has switched on; it is never shared between sessions.
//!
//! The surface knows nothing about servers or transports; the server above
//! asks it for the list and hands it each call.

mod assemble;
pub mod categories;
pub mod discover;
pub mod dispatch;
pub mod full;
pub mod groups;
pub mod lazy;
mod shared;
mod strategy;
pub mod zen;

pub use assemble::{ALWAYS_LOAD, build};
pub(crate) use shared::call_mode_by_name;
pub use shared::{
    category_of, meta_tools, mode_tool, model_facing, one_line, parse_arguments, suggestions,
};
pub use strategy::{
    Session, SessionView, Strategy, StrategyKind, SurfaceOptions, ToolLoading, UnknownTool,
    initial_tools, tool_names,
};
