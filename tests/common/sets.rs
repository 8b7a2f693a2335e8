//! Foreign catalogs and labeled sets for the selection tests.

use std::path::{Path, PathBuf};

use zenmode::{
    catalog::{Catalog, CatalogSources},
    select::eval::{self, Label},
};

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A tools/list-shaped file alone, without the built-in modes.
pub fn catalog(path: PathBuf) -> Catalog {
    let sources = CatalogSources {
        no_builtin: true,
        foreign_catalogs: vec![path],
        ..Default::default()
    };
    Catalog::load(&sources).expect("catalog loads")
}

pub fn labels(path: PathBuf) -> Vec<Label> {
    eval::read_labels(&path).expect("labels parse")
}
