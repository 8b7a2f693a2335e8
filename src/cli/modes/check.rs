//! `zenmode modes check`: everything about the manifests that start-up skips.
//!
//! Compiles every schema eagerly, checks it against the draft 2020-12
//! meta-schema, validates each example request, and checks the authoring
//! rules of `docs/manifest-format.md`. CI runs it so a broken mode fails the
//! build instead of a user's call.

use serde_json::{Map, Value};

use crate::{
    catalog::describe,
    catalog::{Catalog, Manifest},
    executor::{self, RequestShape},
};

/// What the check found for one mode.
#[derive(Debug, Default)]
pub struct ModeReport {
    pub name: String,
    pub errors: Vec<String>,
    pub notes: Vec<String>,
}

/// Checks every mode; a report per mode, in catalog order.
pub fn check_catalog(catalog: &Catalog) -> Vec<ModeReport> {
    catalog
        .modes()
        .iter()
        .map(|mode| {
            let mut report = ModeReport {
                name: mode.name().to_owned(),
                ..Default::default()
            };
            let manifest = mode.manifest();
            if let Err(error) = jsonschema::draft202012::meta::validate(mode.schema()) {
                report
                    .errors
                    .push(format!("schema is not valid draft 2020-12: {error}"));
            }
            if let Err(problem) = mode.validator() {
                report.errors.push(problem.clone());
            }
            match &manifest.example_request {
                None if manifest.executor.is_some() => {
                    report.errors.push("example_request is missing".to_owned())
                }
                None => {}
                Some(example) => {
                    // A schema that does not compile was reported above.
                    if let Ok(violations) = describe::violations(mode, example) {
                        report.errors.extend(violations.into_iter().map(|v| {
                            format!(
                                "example_request is invalid at {:?}: {}",
                                v.pointer, v.problem
                            )
                        }));
                    }
                }
            }
            for (name, property) in manifest.properties().into_iter().flatten() {
                for key in ["type", "description"] {
                    if property.get(key).is_none() {
                        report
                            .errors
                            .push(format!("property {name:?} has no {key:?}"));
                    }
                }
            }
            if manifest.executor.is_some() && manifest.examples.is_empty() {
                report
                    .errors
                    .push("examples (task phrasings) are missing".to_owned());
            }
            if manifest.examples.iter().any(|e| e.trim().is_empty()) {
                report.errors.push("an example task is empty".to_owned());
            }
            if let Some(Err(problem)) = manifest
                .executor
                .as_deref()
                .and_then(|key| executor::construct(key, mode))
            {
                report.errors.push(problem);
            }
            for shape in executor::request_shapes(manifest) {
                report
                    .errors
                    .extend(request_shape_problems(manifest, &shape));
            }
            match manifest.executor.as_deref() {
                Some(key) if !executor::is_registered(key) => report
                    .notes
                    .push(format!("executor {key:?} is not in this build")),
                None => report.notes.push("no executor (imported tool)".to_owned()),
                Some(_) => {}
            }
            report
        })
        .collect()
}

/// Where an executor's request type and its mode's manifest disagree: a
/// field the type reads that the schema does not define (top level, or
/// inside a nested object or array of objects), or an example request the
/// type cannot read.
fn request_shape_problems(manifest: &Manifest, shape: &RequestShape) -> Vec<String> {
    let mut problems = Vec::new();
    let empty = Map::new();
    let properties = manifest.properties().unwrap_or(&empty);
    let missing = |fields: &[&str], properties: &Map<String, Value>, place: &str| {
        fields
            .iter()
            .filter(|field| !properties.contains_key(**field))
            .map(|field| {
                format!("the executor reads {place}{field:?}, which the schema does not define")
            })
            .collect::<Vec<_>>()
    };
    problems.extend(missing((shape.fields)(), properties, ""));
    for (holder, fields) in shape.nested {
        let property = properties.get(*holder);
        let nested = property
            .and_then(|p| p.get("items").unwrap_or(p).get("properties"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        problems.extend(missing(fields(), nested, &format!("{holder}[].")));
    }
    if let Some(example) = &manifest.example_request
        && let Err(problem) = (shape.parse)(example.clone())
    {
        problems.push(format!(
            "the executor cannot read example_request: {problem}"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Manifest, Mode, Origin};

    #[test]
    fn builtin_modes_pass() {
        let catalog = Catalog::builtin().unwrap();
        let reports = check_catalog(&catalog);
        let failures: Vec<_> = reports.iter().filter(|r| !r.errors.is_empty()).collect();
        assert!(failures.is_empty(), "{failures:#?}");
        assert_eq!(catalog.compiled_modes().len(), catalog.len());
    }

    #[test]
    fn catches_an_invalid_example_and_a_bad_schema() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "name": "broken", "title": "B", "summary": "s", "description": "d",
            "category": "utility", "executor": "version", "examples": ["x"],
            "example_request": {"count": "three"},
            "schema": {"type": "object", "properties": {
                "count": {"type": "integer", "description": "n"},
                "bad": {"type": "no-such-type", "description": "b"}
            }}
        }))
        .unwrap();
        let catalog = Catalog::from_modes([Mode::new(manifest, Origin::Builtin)]);
        let report = &check_catalog(&catalog)[0];
        assert!(
            report.errors.iter().any(|e| e.contains("draft 2020-12")),
            "{report:?}"
        );
    }

    fn chat_shape() -> RequestShape {
        let manifest = Catalog::builtin()
            .unwrap()
            .get("chat")
            .unwrap()
            .manifest()
            .clone();
        executor::request_shapes(&manifest)[0]
    }

    fn chat_manifest(properties: Value, example: Value) -> Manifest {
        serde_json::from_value(serde_json::json!({
            "name": "talk", "title": "T", "summary": "s", "description": "d",
            "category": "conversation", "executor": "chat", "examples": ["x"],
            "example_request": example,
            "schema": {"type": "object", "properties": properties}
        }))
        .unwrap()
    }

    #[test]
    fn a_field_the_executor_reads_must_be_in_the_schema() {
        let text = serde_json::json!({"type": "string", "description": "t"});
        let shape = chat_shape();
        let all: Map<String, Value> = (shape.fields)()
            .iter()
            .map(|field| ((*field).to_owned(), text.clone()))
            .collect();
        let complete = chat_manifest(
            Value::Object(all.clone()),
            serde_json::json!({"prompt": "hi"}),
        );
        assert_eq!(
            request_shape_problems(&complete, &shape),
            Vec::<String>::new()
        );

        let mut without_images = all;
        without_images.remove("images");
        let manifest = chat_manifest(
            Value::Object(without_images),
            serde_json::json!({"prompt": 3}),
        );
        let problems = request_shape_problems(&manifest, &shape);
        assert!(
            problems.iter().any(|p| p.contains("\"images\"")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("cannot read example_request")),
            "{problems:?}"
        );
    }

    #[test]
    fn nested_fields_are_checked_too() {
        let manifest = Catalog::builtin().unwrap();
        let consensus = manifest.get("consensus").unwrap().manifest().clone();
        let [shape] = executor::request_shapes(&consensus)[..] else {
            panic!("consensus reads one request type");
        };
        assert_eq!(
            request_shape_problems(&consensus, &shape),
            Vec::<String>::new()
        );

        let mut broken = consensus;
        broken.schema["properties"]["models"]["items"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove("stance");
        let problems = request_shape_problems(&broken, &shape);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("models[].\"stance\""), "{problems:?}");
    }
}
