//! Foreign catalogs and labeled sets for the selection tests.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

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

/// tests/data/routing: servers installed together and requests for them.
pub fn routing_dir() -> PathBuf {
    root().join("tests/data/routing")
}

/// tests/data/registry: servers captured from their npm packages, for
/// which zenmode's examples were written after their requests.
pub fn registry_dir() -> PathBuf {
    root().join("tests/data/registry")
}

/// Writes the catalog of `profile` of tests/data/routing (as
/// scripts/examples/profile_catalog.py does) into `dir`; its path.
pub fn profile_catalog(profile: &str, dir: &Path) -> PathBuf {
    profile_catalog_of(&routing_dir(), profile, dir)
}

/// [`profile_catalog`] for the profiles of `sets` (its profiles.json); a
/// server is read from `../shared/catalogs`, else from [`registry_dir`].
pub fn profile_catalog_of(sets: &Path, profile: &str, dir: &Path) -> PathBuf {
    let profiles: Value =
        serde_json::from_str(&std::fs::read_to_string(sets.join("profiles.json")).unwrap())
            .unwrap();
    let shared = root().join("../shared/catalogs");
    let mut tools = Vec::new();
    for server in profiles[profile].as_array().expect("a profile") {
        let server = server.as_str().unwrap();
        let file = match server {
            "huly" => "huly_v0.1.35",
            "playwright" => "playwright_allcaps",
            other => other,
        };
        let mut path = shared.join(format!("{file}.json"));
        if !path.exists() {
            path = registry_dir().join(format!("{server}.json"));
        }
        let catalog: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for tool in catalog["tools"].as_array().unwrap() {
            let mut tool = tool.clone();
            tool["name"] = json!(format!("{server}__{}", tool["name"].as_str().unwrap()));
            tool["server"] = json!(server);
            tools.push(tool);
        }
    }
    let path = dir.join(format!("{profile}.json"));
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    path
}
