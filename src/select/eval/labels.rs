//! Labeled sets: reading them, checking them against a catalog, and making
//! no-fit queries out of them.
//!
//! A labels file has one JSON object per line (the format is described in
//! the evaluation's docs, `eval/mod.rs`). A line that is not a label, or a
//! label that names a mode the catalog lacks, is an error naming the file
//! and the line, so a typo fails loudly instead of scoring as a miss.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::Catalog;

/// One labeled query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    pub query: String,
    /// `None`: no mode of the catalog fits this query.
    pub expected: Option<String>,
    #[serde(default)]
    pub acceptable: Vec<String>,
    /// Tools that would do harm if run for this query (a destructive
    /// neighbour of the right one): the report counts how often one is the
    /// reply's `next_call`.
    #[serde(default)]
    pub traps: Vec<String>,
    /// The request asks for nothing to change (a question, a lookup, or a
    /// change it rules out): the report counts how often the reply's
    /// `next_call` is a tool that changes state all the same.
    #[serde(default)]
    pub benign: bool,
    /// What kind of request this is, as its writer filed it (`plain`,
    /// `everyday`, `lookalike`, `benign`, `offtopic` ...): the report
    /// breaks the served reply down by it.
    #[serde(default)]
    pub kind: Option<String>,
    /// 1-based line in the labels file, for error messages.
    #[serde(skip)]
    pub line: usize,
}

/// A labels file that cannot be used; names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum LabelsError {
    #[error("{path}: cannot read labels file: {io}")]
    Read { path: String, io: std::io::Error },
    #[error("{path}:{line}: {problem}")]
    Line {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("{path}: no labeled queries (one JSON object per line)")]
    Empty { path: String },
}

/// Reads a labels file (JSON lines).
pub fn read_labels(path: &Path) -> Result<Vec<Label>, LabelsError> {
    let text = std::fs::read_to_string(path).map_err(|io| LabelsError::Read {
        path: path.display().to_string(),
        io,
    })?;
    parse_labels(&text, &path.display().to_string())
}

/// Parses JSON-lines labels; `source_name` is used in errors.
pub fn parse_labels(text: &str, source_name: &str) -> Result<Vec<Label>, LabelsError> {
    let mut labels = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let error = |problem: String| LabelsError::Line {
            path: source_name.to_owned(),
            line: number + 1,
            problem,
        };
        let not_a_label = |e: &dyn std::fmt::Display| {
            error(format!(
                "not a label ({{\"query\": \"...\", \"expected\": \"mode\" or null, \"acceptable\": [...]}}): {e}"
            ))
        };
        let value: Value = serde_json::from_str(line).map_err(|e| not_a_label(&e))?;
        // A missing "expected" is a mistake; only an explicit null means "no fit".
        if value.get("expected").is_none() {
            return Err(not_a_label(&"missing field `expected`"));
        }
        let mut label: Label = serde_json::from_value(value).map_err(|e| not_a_label(&e))?;
        if label.query.trim().is_empty() {
            return Err(error("\"query\" is empty".to_owned()));
        }
        if label
            .expected
            .as_deref()
            .is_some_and(|e| e.trim().is_empty())
        {
            return Err(error(
                "\"expected\" is empty (use null for no fit)".to_owned(),
            ));
        }
        label.line = number + 1;
        labels.push(label);
    }
    if labels.is_empty() {
        return Err(LabelsError::Empty {
            path: source_name.to_owned(),
        });
    }
    Ok(labels)
}

/// Checks that every mode a label names exists; the error names the line.
pub fn check_labels(labels: &[Label], catalog: &Catalog, source_name: &str) -> Result<(), String> {
    for label in labels {
        for name in label
            .expected
            .iter()
            .chain(&label.acceptable)
            .chain(&label.traps)
        {
            if catalog.get(name).is_none() {
                let closest = catalog.suggestions(name, 3);
                return Err(format!(
                    "{source_name}:{}: mode {name:?} is not in the catalog{}",
                    label.line,
                    if closest.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest: {})", closest.join(", "))
                    }
                ));
            }
        }
    }
    Ok(())
}

/// Holds out about `share` of the modes the labels expect: the returned
/// catalog lacks them and their queries become no-fit queries. Which modes
/// go depends only on their names (a stable hash), so every run and every
/// ranker sees the same split.
pub fn hold_out(catalog: &Catalog, labels: &[Label], share: f64) -> (Catalog, Vec<Label>) {
    let held = |name: &str| {
        // FNV-1a: stable across Rust versions, unlike the std hasher.
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        ((hash % 10_000) as f64) < share * 10_000.0
    };
    let expected: std::collections::BTreeSet<&str> = labels
        .iter()
        .filter_map(|l| l.expected.as_deref())
        .collect();
    let catalog = catalog.without(|name| expected.contains(name) && held(name));
    let labels = labels
        .iter()
        .map(|label| {
            let mut label = label.clone();
            if label
                .expected
                .as_deref()
                .is_some_and(|e| catalog.get(e).is_none())
            {
                label.expected = None;
            }
            label.acceptable.retain(|name| catalog.get(name).is_some());
            label.traps.retain(|name| catalog.get(name).is_some());
            label
        })
        .collect();
    (catalog, labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_labels_and_skips_blank_lines() {
        let text = "{\"query\": \"q1\", \"expected\": \"debug\"}\n\n{\"query\": \"q2\", \"expected\": \"chat\", \"acceptable\": [\"thinkdeep\"]}\n";
        let labels = parse_labels(text, "t.jsonl").unwrap();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[1].acceptable, ["thinkdeep"]);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let text = "{\"query\": \"q\", \"expected\": \"debug\"}\n{\"query\": \"q\"}\n";
        let err = parse_labels(text, "t.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("t.jsonl:2: "), "{err}");
        let err = parse_labels("not json", "t.jsonl").unwrap_err().to_string();
        assert!(err.starts_with("t.jsonl:1: "), "{err}");
        let err = parse_labels("{\"query\": \" \", \"expected\": \"x\"}", "t.jsonl")
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"query\" is empty"), "{err}");
        let err = parse_labels(
            "{\"query\": \"q\", \"expected\": \"x\", \"acceptible\": []}",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("acceptible"), "{err}");
        assert!(matches!(
            parse_labels("\n\n", "f"),
            Err(LabelsError::Empty { .. })
        ));
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = read_labels(Path::new("/no/such/labels.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/no/such/labels.jsonl"), "{err}");
    }

    #[test]
    fn unknown_modes_in_labels_are_rejected() {
        let catalog = Catalog::builtin().unwrap();
        let text = "\n{\"query\": \"q\", \"expected\": \"debgu\"}";
        let labels = parse_labels(text, "f").unwrap();
        let err = check_labels(&labels, &catalog, "f").unwrap_err();
        assert!(
            err.starts_with("f:2: ") && err.contains("\"debgu\"") && err.contains("debug"),
            "{err}"
        );
    }
}
