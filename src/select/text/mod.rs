//! Text analysis: what a term is, for the catalog and for the queries alike.
//!
//! [`words`] splits text into whole, lower-cased words and runs of content
//! words; [`analyze`] turns those into index terms (stems, exact forms,
//! phrases, compounds) and adds the concepts of the small domain synonym
//! table in [`synonyms`]. The lexical, example and phrasing signals
//! (`signals/`) all count these terms, so the index and a query always agree
//! on what matched.

pub mod analyze;
pub mod synonyms;
pub mod words;
