//! Executors: the code that runs a validated request for a mode.
//!
//! A manifest names its executor by key; [`REGISTRY`] maps keys to
//! constructors and to the request type each executor reads. The engine
//! instantiates an executor on the first request for its mode and keeps it
//! for the process (executors may hold state, such as the planner's plans).
//!
//! Executors see their mode, the catalog, the process [`Services`](crate::services::Services) and the
//! call's context; they know nothing about the engine above them or the MCP
//! tools that reach them. Helpers shared by several executors live in
//! [`support`], so executors never import each other.

mod apilookup;
mod challenge;
mod chat;
mod clink;
mod consensus;
mod contract;
mod forward;
mod listmodels;
mod planner;
mod registry;
pub mod script;
pub mod support;
mod version;
pub mod workflow;

pub use contract::{ExecContext, ExecError, Executor, RequestShape};
pub use registry::{
    REGISTRY, Registration, construct, is_registered, keys, needs_provider, request_shapes,
};
