//! `zenmode modes ...`: the catalog's manifests checked and rendered.

pub mod check;
pub mod markdown;
