//! Property definitions that many manifests share, written once in
//! `modes/shared/properties.json` and inlined where a manifest names them.
//!
//! A manifest writes `"images": {"$shared": "images"}` instead of repeating
//! the definition. Inlining happens before anything reads the schema (at
//! build time for the embedded modes, at load time for `--modes-dir`), so
//! every schema on the wire stays self-contained.
//!
//! This file depends on `serde_json` alone: `build.rs` includes it too.

use serde_json::{Map, Value};

/// The key that names a shared definition.
pub const SHARED_KEY: &str = "$shared";

/// Reads the definitions file: `{"definitions": {name: property schema}}`.
pub fn parse_definitions(text: &str) -> Result<Map<String, Value>, String> {
    let file: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    match file.get("definitions") {
        Some(Value::Object(definitions)) => Ok(definitions.clone()),
        _ => Err("the shared definitions file needs a \"definitions\" object".to_owned()),
    }
}

/// Replaces every `{"$shared": NAME}` inside the manifest's `schema` with the
/// definition called NAME; returns how many it replaced.
///
/// A reference must be an object with that one key, and NAME must exist.
pub fn inline_shared(
    manifest: &mut Value,
    definitions: &Map<String, Value>,
) -> Result<usize, String> {
    match manifest.get_mut("schema") {
        Some(schema) => inline_in(schema, definitions, "schema"),
        None => Ok(0),
    }
}

fn inline_in(
    value: &mut Value,
    definitions: &Map<String, Value>,
    at: &str,
) -> Result<usize, String> {
    match value {
        Value::Object(object) => {
            if let Some(reference) = object.get(SHARED_KEY) {
                let name = reference
                    .as_str()
                    .ok_or_else(|| format!("{at}: {SHARED_KEY} must name a definition"))?;
                if object.len() != 1 {
                    return Err(format!(
                        "{at}: an object with {SHARED_KEY} may hold no other key (write a full definition instead)"
                    ));
                }
                let definition = definitions.get(name).ok_or_else(|| {
                    format!(
                        "{at}: no shared definition {name:?} (known: {})",
                        definitions.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                })?;
                *value = definition.clone();
                return Ok(1);
            }
            let mut count = 0;
            for (key, child) in object.iter_mut() {
                count += inline_in(child, definitions, &format!("{at}/{key}"))?;
            }
            Ok(count)
        }
        Value::Array(items) => {
            let mut count = 0;
            for (index, child) in items.iter_mut().enumerate() {
                count += inline_in(child, definitions, &format!("{at}/{index}"))?;
            }
            Ok(count)
        }
        _ => Ok(0),
    }
}
