//! Embeds every `modes/*.json` manifest into the binary.
//!
//! Each manifest's `{"$shared": NAME}` properties are replaced by the
//! definitions in `modes/shared/properties.json` (see `src/catalog/shared.rs`),
//! and the expanded manifest is written to `OUT_DIR`. The generated
//! `embedded_modes.rs` is a sorted `&[(file_name, contents, required)]` table,
//! so adding a mode is a data change: drop a file in `modes/` and rebuild.
//! `required` lists the schema's required fields, so the tool list can name
//! them without parsing a manifest at start-up.
//! The server parses embedded manifests lazily, so their JSON syntax, name and
//! shared references are checked here: a broken manifest fails the build, not
//! a user.

use std::{env, fs, path::Path};

#[path = "src/catalog/shared.rs"]
#[allow(dead_code)]
mod shared;

fn main() {
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let modes_dir = Path::new(&manifest_dir).join("modes");
    let shared_file = modes_dir.join("shared/properties.json");
    println!("cargo:rerun-if-changed={}", modes_dir.display());
    println!("cargo:rerun-if-changed={}", shared_file.display());
    println!("cargo:rerun-if-changed=src/catalog/shared.rs");
    link_without_pie();
    stamp_commit(Path::new(&manifest_dir));

    let definitions = fs::read_to_string(&shared_file)
        .map_err(|e| e.to_string())
        .and_then(|text| shared::parse_definitions(&text))
        .unwrap_or_else(|e| panic!("modes/shared/properties.json: {e}"));

    let files = json_files(&modes_dir);

    let out_dir = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("modes");
    fs::create_dir_all(&out_dir).expect("create OUT_DIR/modes");
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        let expanded = expand_manifest(path, name, &definitions);
        let required = required_fields(&expanded);
        let target = out_dir.join(name);
        fs::write(&target, expanded).expect("write an expanded manifest");
        table.push_str(&format!(
            "    ({name:?}, include_str!({path:?}), &{required:?}),\n",
            path = target.display().to_string()
        ));
    }
    table.push(']');

    let out = out_dir.with_file_name("embedded_modes.rs");
    fs::write(out, table).expect("write embedded_modes.rs");

    embed_tool_examples(Path::new(&manifest_dir), out_dir.parent().expect("OUT_DIR"));
}

/// The `*.json` files of `dir`, sorted (none if it cannot be read).
fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Embeds `data/examples/*.json` (example requests for other servers'
/// tools, `src/catalog/tool_examples.rs`) as a sorted `&[(file_name,
/// contents)]` table; a file that is not JSON with `server` and `tools`
/// fails the build.
fn embed_tool_examples(manifest_dir: &Path, out_dir: &Path) {
    let dir = manifest_dir.join("data/examples");
    println!("cargo:rerun-if-changed={}", dir.display());
    let files = json_files(&dir);
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        let text = fs::read_to_string(path).expect("read an examples file");
        let value: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("data/examples/{name} is not valid JSON: {e}"));
        if !value["server"].is_string() || !value["tools"].is_object() {
            panic!("data/examples/{name}: needs \"server\" (a string) and \"tools\" (an object)");
        }
        table.push_str(&format!(
            "    ({name:?}, include_str!({path:?})),\n",
            path = path.display().to_string()
        ));
    }
    table.push(']');
    fs::write(out_dir.join("embedded_examples.rs"), table).expect("write embedded_examples.rs");
}

/// Fails the build on invalid JSON, a name that differs from the file stem or
/// a bad shared reference; returns the manifest with shared definitions inlined.
/// (The full manifest rules are checked by the unit tests and `modes check`.)
fn expand_manifest(
    path: &Path,
    file_name: &str,
    definitions: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let text = fs::read_to_string(path).expect("read manifest");
    let mut manifest: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("modes/{file_name} is not valid JSON: {e}"));
    let stem = file_name.trim_end_matches(".json");
    if manifest.get("name").and_then(|n| n.as_str()) != Some(stem) {
        panic!("modes/{file_name}: \"name\" must be {stem:?}");
    }
    shared::inline_shared(&mut manifest, definitions)
        .unwrap_or_else(|e| panic!("modes/{file_name}: {e}"));
    serde_json::to_string(&manifest).expect("serialize a manifest")
}

/// The top-level `required` fields of an expanded manifest's schema.
fn required_fields(expanded: &str) -> Vec<String> {
    let manifest: serde_json::Value = serde_json::from_str(expanded).expect("expanded manifest");
    manifest["schema"]["required"]
        .as_array()
        .map(|fields| {
            fields
                .iter()
                .filter_map(|field| field.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Links the binaries as fixed-address executables on Linux. A clock-bound
/// part of zenmode's start-up was the dynamic loader applying some 32,000
/// relocations to a position-independent binary (and the page faults they
/// cause); a non-PIE executable has them resolved at link time. The crates'
/// code stays position-independent, so proc-macros and tests are unaffected.
fn link_without_pie() {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

/// `ZENMODE_COMMIT` for `zenmode --version`: `ZEN_BUILD_COMMIT` when set (a
/// release script building outside a clone), else the clone's HEAD, else
/// the commit cargo records in a packaged crate (`.cargo_vcs_info.json`),
/// else "unknown".
fn stamp_commit(manifest_dir: &Path) {
    println!("cargo:rerun-if-env-changed=ZEN_BUILD_COMMIT");
    let git = manifest_dir.join(".git");
    if git.is_dir() {
        // HEAD names a branch whose file moves with each commit.
        println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
        if let Ok(head) = fs::read_to_string(git.join("HEAD"))
            && let Some(branch) = head.trim().strip_prefix("ref: ")
        {
            println!("cargo:rerun-if-changed={}", git.join(branch).display());
        }
    }
    let from_git = || {
        let output = std::process::Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(manifest_dir)
            .output()
            .ok()?;
        let commit = String::from_utf8(output.stdout).ok()?;
        (output.status.success() && !commit.trim().is_empty()).then(|| commit.trim().to_owned())
    };
    let from_package = || {
        let text = fs::read_to_string(manifest_dir.join(".cargo_vcs_info.json")).ok()?;
        let info: serde_json::Value = serde_json::from_str(&text).ok()?;
        let sha = info["git"]["sha1"].as_str()?;
        Some(sha.chars().take(12).collect::<String>())
    };
    let commit = env::var("ZEN_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.is_empty())
        .or_else(from_git)
        .or_else(from_package)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=ZENMODE_COMMIT={commit}");
}
