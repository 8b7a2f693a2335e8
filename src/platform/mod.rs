//! The bottom layer: facts about the machine and the process that every
//! layer may need, each kept in one place.

pub mod redact;
