//! The tool classifier: for every tool with shipped example requests, a
//! weight vector and a bias over the model's sentence vectors, fitted on
//! those examples (`scripts/embedding/tool_classifier.py`,
//! docs/decisions/0021-tool-classifier.md). A request's vector scores each
//! such tool by how its users ask for it, learned from every example at
//! once rather than from the nearest few.
//!
//! A tool finds its row by its shipped examples file and its name, the same
//! way it finds its examples (`tool_examples.rs`), so it does not matter
//! how the server was added or what the user called it.

use std::{borrow::Cow, collections::HashMap, sync::OnceLock};

use serde::Deserialize;

use crate::platform::settings;

/// Rows of `dims + 1` little-endian f32: the weights, then the bias.
static WEIGHTS: &[u8] = include_bytes!("../../data/embedding/tool_classifier.f32");
/// Each row's tool and the examples files (by their `server`) it belongs to.
static ROWS: &str = include_str!("../../data/embedding/tool_classifier.json");

#[derive(Debug, Deserialize)]
struct RowsFile {
    dims: usize,
    rows: Vec<RowEntry>,
    #[serde(default)]
    unseen: Option<Unseen>,
}

/// How a tool without a row is scored beside the rows: `scale` times the
/// cosine of the request with its description, plus `bias` (fitted on
/// servers left out of a fit: `calibrate_unseen` in the script).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
pub struct Unseen {
    pub scale: f32,
    pub bias: f32,
}

#[derive(Debug, Deserialize)]
struct RowEntry {
    tool: String,
    files: Vec<String>,
}

/// The shipped classifier (or the one `ZEN_TOOL_CLASSIFIER` names).
#[derive(Debug, Default)]
pub struct ToolClassifier {
    dims: usize,
    /// Kept as bytes: decoded row by row when a request is scored, so the
    /// binary's copy is the only one in memory.
    weights: Cow<'static, [u8]>,
    /// Examples file (its `server`) -> tool -> row.
    rows: HashMap<String, HashMap<String, u32>>,
    unseen: Option<Unseen>,
}

impl ToolClassifier {
    fn parse(weights: Cow<'static, [u8]>, rows: &str) -> Result<ToolClassifier, String> {
        let file: RowsFile = serde_json::from_str(rows).map_err(|e| e.to_string())?;
        let width = (file.dims + 1) * 4;
        if file.dims == 0 || weights.len() != width * file.rows.len() {
            return Err(format!(
                "{} bytes of weights for {} rows of {} dimensions",
                weights.len(),
                file.rows.len(),
                file.dims
            ));
        }
        let mut by_name: HashMap<String, HashMap<String, u32>> = HashMap::new();
        for (row, entry) in file.rows.into_iter().enumerate() {
            for server in entry.files {
                by_name
                    .entry(server)
                    .or_default()
                    .insert(entry.tool.clone(), row as u32);
            }
        }
        Ok(ToolClassifier {
            dims: file.dims,
            weights,
            rows: by_name,
            unseen: file.unseen,
        })
    }

    /// The row of `tool` in the examples file whose `server` is `file`.
    pub fn row(&self, file: &str, tool: &str) -> Option<u32> {
        self.rows.get(file)?.get(tool).copied()
    }

    /// How a tool without a row is put on the rows' scale, if the fit says.
    pub fn unseen(&self) -> Option<Unseen> {
        self.unseen
    }

    /// The row's score (logit) for a request's unit vector; `None` when the
    /// vector's size is not the classifier's or the row does not exist.
    pub fn score(&self, row: u32, vector: &[f32]) -> Option<f32> {
        if vector.len() != self.dims {
            return None;
        }
        let width = (self.dims + 1) * 4;
        let start = row as usize * width;
        let bytes = self.weights.get(start..start + width)?;
        let (weights, bias) = bytes.split_at(self.dims * 4);
        Some(dot_le(weights, vector) + read_f32(bias))
    }
}

fn read_f32(bytes: &[u8]) -> f32 {
    match bytes {
        [a, b, c, d, ..] => f32::from_le_bytes([*a, *b, *c, *d]),
        _ => 0.0,
    }
}

/// The dot product of little-endian f32 `weights` with `vector`, in
/// sixteen running sums the compiler keeps in vector registers (a plain
/// sum waits on each addition: over the union's thousand rows it cost most
/// of a millisecond a request).
fn dot_le(weights: &[u8], vector: &[f32]) -> f32 {
    let mut sums = [0.0f32; 16];
    let (blocks, values) = (weights.chunks_exact(64), vector.chunks_exact(16));
    let tail: f32 = blocks
        .remainder()
        .chunks_exact(4)
        .zip(values.remainder())
        .map(|(w, x)| read_f32(w) * x)
        .sum();
    for (block, values) in blocks.zip(values) {
        for lane in 0..16 {
            sums[lane] += read_f32(&block[lane * 4..]) * values[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// The classifier in use: the shipped one, or the files `ZEN_TOOL_CLASSIFIER`
/// names (`PATH` for `PATH.f32` and `PATH.json`; `none` for none). One that
/// does not load is left out with a warning.
pub fn current() -> &'static ToolClassifier {
    static CURRENT: OnceLock<ToolClassifier> = OnceLock::new();
    CURRENT.get_or_init(|| {
        let loaded = match settings::get_os(settings::TOOL_CLASSIFIER) {
            Some(path) if path == "none" => return ToolClassifier::default(),
            Some(path) => {
                let base = std::path::PathBuf::from(path);
                std::fs::read(base.with_extension("f32"))
                    .and_then(|weights| {
                        std::fs::read_to_string(base.with_extension("json"))
                            .map(|rows| (weights, rows))
                    })
                    .map_err(|e| format!("{}: {e}", base.display()))
                    .and_then(|(weights, rows)| ToolClassifier::parse(Cow::Owned(weights), &rows))
            }
            None => ToolClassifier::parse(Cow::Borrowed(WEIGHTS), ROWS),
        };
        loaded.unwrap_or_else(|error| {
            tracing::warn!(%error, "the tool classifier is left out");
            ToolClassifier::default()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_classifier_loads_with_a_row_for_known_tools() {
        let shipped = ToolClassifier::parse(Cow::Borrowed(WEIGHTS), ROWS).unwrap();
        let row = shipped.row("git", "git_log").expect("git_log has a row");
        let vector = vec![1.0 / (shipped.dims as f32).sqrt(); shipped.dims];
        assert!(shipped.score(row, &vector).is_some_and(f32::is_finite));
        assert!(shipped.row("git", "no_such_tool").is_none());
        assert!(
            shipped.unseen().is_some_and(|u| u.scale > 0.0),
            "tools without a row are scored too"
        );
        assert!(
            shipped.score(row, &vector[1..]).is_none(),
            "a vector of another size"
        );
    }

    /// Examples added for a tool without refitting the classifier would
    /// leave it ranked without a row beside tools that have one.
    #[test]
    fn every_tool_with_shipped_examples_has_a_row() {
        let shipped = ToolClassifier::parse(Cow::Borrowed(WEIGHTS), ROWS).unwrap();
        let missing: Vec<String> = super::super::tool_examples::shipped()
            .iter()
            .flat_map(|server| {
                server
                    .tool_names()
                    .filter(|tool| shipped.row(&server.server, tool).is_none())
                    .map(|tool| format!("{}/{tool}", server.server))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(
            missing.is_empty(),
            "refit with scripts/embedding/tool_classifier.py: {missing:?}"
        );
    }

    #[test]
    fn weights_that_do_not_fit_the_rows_are_refused() {
        let rows = r#"{"dims": 2, "rows": [{"tool": "a", "files": ["s"]}]}"#;
        assert!(ToolClassifier::parse(Cow::Owned(vec![0; 8]), rows).is_err());
        let fits = ToolClassifier::parse(
            Cow::Owned(
                [1.0f32, 2.0, 0.5]
                    .iter()
                    .flat_map(|f| f.to_le_bytes())
                    .collect(),
            ),
            rows,
        )
        .unwrap();
        assert_eq!(fits.score(0, &[1.0, 1.0]), Some(3.5));
    }

    #[test]
    fn the_dot_product_in_lanes_is_the_plain_sum() {
        let weights: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin()).collect();
        let vector: Vec<f32> = (0..37).map(|i| (i as f32 * 0.11).cos()).collect();
        let bytes: Vec<u8> = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
        let plain: f32 = weights.iter().zip(&vector).map(|(w, x)| w * x).sum();
        assert!((dot_le(&bytes, &vector) - plain).abs() < 1e-5);
    }
}
