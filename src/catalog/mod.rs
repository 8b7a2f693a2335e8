//! The mode catalog: every mode this process knows, loaded once at start-up.
//!
//! Sources, later ones overriding earlier ones by name:
//! 1. manifests embedded in the binary from `modes/` at build time;
//! 2. `--modes-dir DIR` manifests read at start-up;
//! 3. foreign `tools/list` catalogs (`--catalog FILE`), imported as modes that
//!    can be selected and described but have no executor;
//! 4. gateway upstreams' tools ([`gateway_modes`]), added by the caller with
//!    [`Catalog::with_modes`]; they run through the executor keyed `upstream` (`executor/forward.rs`).
//!
//! Loading parses JSON only. A mode's validator is compiled on first use and
//! cached in the mode (see [`Mode::validator`]), so start-up compiles nothing.

mod category;
pub mod describe;
mod foreign;
pub mod gateway_modes;
pub mod learned;
mod manifest;
mod mode;
mod set;
mod shared;
pub mod tool_classifier;
pub mod tool_examples;

pub use category::Category;
pub use manifest::{
    MAX_SUMMARY_CHARS, Manifest, first_sentence, is_valid_mode_name, named_destructive,
};
pub use mode::{CompiledSchema, LoadError, Mode, Origin};
pub use set::{Catalog, CatalogSources};
