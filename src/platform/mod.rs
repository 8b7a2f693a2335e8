//! The bottom layer: facts about the machine and the process that every
//! layer may need, each kept in one place: where zenmode's files live
//! ([`dirs`]), every `ZEN_*` variable ([`settings`]), owner-only writes
//! ([`private_file`]), whether a process runs ([`process`]), where each MCP
//! client keeps its servers ([`client_files`]), hiding secrets in text
//! ([`redact`]) and handing back compiled-in data's pages ([`pages`]).

pub mod client_files;
pub mod dirs;
pub mod pages;
pub mod private_file;
pub mod process;
pub mod redact;
pub mod settings;
