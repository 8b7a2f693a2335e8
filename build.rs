//! Embeds every `modes/*.json` manifest into the binary.
//!
//! Generates `embedded_modes.rs`, a sorted `&[(file_name, contents)]` table, so
//! adding a mode is a data change: drop a file in `modes/` and rebuild.
//! The server parses embedded manifests lazily, so their JSON syntax and
//! name are checked here: a broken manifest fails the build, not a user.

use std::{env, fs, path::Path};

fn main() {
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let modes_dir = Path::new(&manifest_dir).join("modes");
    println!("cargo:rerun-if-changed={}", modes_dir.display());

    let mut files: Vec<_> = fs::read_dir(&modes_dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();

    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        check_manifest(path, name);
        table.push_str(&format!(
            "    ({name:?}, include_str!({path:?})),\n",
            path = path.display().to_string()
        ));
    }
    table.push(']');

    let out =
        Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_modes.rs");
    fs::write(out, table).expect("write embedded_modes.rs");
}

/// Fails the build on invalid JSON or a name that differs from the file stem.
/// (The full manifest rules are checked by the unit tests and `modes check`.)
fn check_manifest(path: &Path, file_name: &str) {
    let text = fs::read_to_string(path).expect("read manifest");
    let manifest: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("modes/{file_name} is not valid JSON: {e}"));
    let stem = file_name.trim_end_matches(".json");
    if manifest.get("name").and_then(|n| n.as_str()) != Some(stem) {
        panic!("modes/{file_name}: \"name\" must be {stem:?}");
    }
}
