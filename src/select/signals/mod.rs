//! The ranking signals: each reads a request and a catalog its own way and
//! scores every mode, or weighs a mode's score up or down.
//!
//! - [`bm25`]: the lexical signal, field-weighted BM25 over a mode's text;
//! - [`examples`]: similarity to a mode's example task phrasings;
//! - [`phrasing`]: a naive Bayes model of all of a mode's phrasings;
//! - [`embedding`]: the meaning signal, by the distilled token table
//!   ([`token_table`], cut into tokens by [`wordpiece`]) or the full model
//!   (`transformer`, built with the `transformer` feature, its vectors of
//!   catalog texts kept by `vector_cache`); example requests' vectors as
//!   int8 rows (`int8`);
//! - [`action`] and [`values`]: what a request asks to do and which values it
//!   carries, against what a tool does and takes; [`intent`]: which of its
//!   words a negation rules out, and whether it asks to be told.
//!
//! The signals know nothing of the index that fuses them (`index.rs` and
//! `scoring.rs` one folder up); the lexical, example and phrasing signals
//! count the terms of the text analysis ([`crate::select::text`]).

pub mod action;
pub mod bm25;
pub mod embedding;
#[cfg(feature = "transformer")]
pub mod encoder_overlay;
pub mod examples;
mod int8;
pub mod intent;
pub mod phrasing;
pub mod token_table;
#[cfg(feature = "transformer")]
pub mod transformer;
pub mod values;
#[cfg(feature = "transformer")]
mod vector_cache;
pub mod wordpiece;
