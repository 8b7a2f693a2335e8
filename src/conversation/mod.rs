//! Conversation threads that continue across calls and across modes.
//!
//! The server issues a `continuation_id` (a UUID v4) when a mode starts a
//! thread; passing it back continues the thread, in the same mode or
//! another (a debug investigation can go on in chat). Each call appends
//! [`Turn`]s; when a thread is handed to a model, [`build_history`] rebuilds
//! it within the model's token budget.
//!
//! Storage sits behind [`ConversationStore`] so a shared store can replace
//! the in-memory default ([`InMemoryStore`]) without touching the modes.
//! The types are serializable for that reason.
//!
//! The files, from the top down (each uses only files below it):
//!
//! - `open`: the store a [`StoreUrl`] names, opened;
//! - `result_handles`: large tool results kept as opaque, owned, expiring
//!   handles in whichever store is open (not threads to conversations);
//! - `embedded`, `redis_store`: the stores shared between processes (one
//!   SQLite file, Redis);
//! - `turn_cache`: decoded turns the embedded store keeps;
//! - `memory`: the in-memory store, and the clocks the stores read;
//! - `store_url`: `--store URL` parsed and shown, and the default file;
//! - `history`: a thread rebuilt for a model within its token budget;
//! - `store`: the [`ConversationStore`] trait;
//! - `config`: the limits every store applies ([`MemoryConfig`]);
//! - `thread`: threads, turns and ids;
//! - `error`: why a thread cannot be used ([`MemoryError`]).

mod config;
mod embedded;
mod error;
mod history;
mod memory;
mod open;
mod redis_store;
mod result_handles;
mod store;
mod store_url;
mod thread;
mod turn_cache;

pub use config::MemoryConfig;
pub use embedded::EmbeddedStore;
pub use error::MemoryError;
pub use history::{History, build_history};
pub use memory::{Clock, InMemoryStore, ManualClock, SystemClock};
pub use open::open_store;
pub use redis_store::RedisStore;
pub use result_handles::{
    HandleError, HandleSettings, RESULT_MODE, ResultHandles, ResultPage, StoredKind, StoredResult,
    ThreadsWithoutResults, URI_PREFIX as RESULT_URI_PREFIX,
};
pub use store::ConversationStore;
pub use store_url::{StoreUrl, default_embedded_path};
pub use thread::{Role, Thread, Turn, normalize_id};
