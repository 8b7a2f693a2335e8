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

/// Writes the catalog of `profile` (as scripts/examples/profile_catalog.py
/// does) into `dir`; its path.
pub fn profile_catalog(profile: &str, dir: &Path) -> PathBuf {
    let profiles: Value = serde_json::from_str(
        &std::fs::read_to_string(routing_dir().join("profiles.json")).unwrap(),
    )
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
        let catalog: Value = serde_json::from_str(
            &std::fs::read_to_string(shared.join(format!("{file}.json"))).unwrap(),
        )
        .unwrap();
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
