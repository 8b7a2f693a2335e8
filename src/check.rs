//! `zenmode modes check`: everything about the manifests that start-up skips.
//!
//! Compiles every schema eagerly, checks it against the draft 2020-12
//! meta-schema, validates each example request, and checks the authoring
//! rules of `docs/manifest-format.md`. CI runs it so a broken mode fails the
//! build instead of a user's call.

use crate::{catalog::Catalog, describe, executor};

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
}
