//! Ranking modes against a free-text task description.
//!
//! A field-weighted BM25 index over each mode's name, title, summary, keywords,
//! example tasks, description and parameter names. The index is built once per
//! process, on the first query (the engine keeps it in a `OnceLock`).

pub mod text;

use std::collections::HashMap;

use crate::catalog::Catalog;

/// BM25 term-frequency saturation.
const K1: f32 = 1.2;
/// BM25 length normalization.
const B: f32 = 0.75;

/// How much one occurrence of a word counts, by the field it occurs in.
#[derive(Debug, Clone, Copy)]
enum Field {
    Name,
    Title,
    Summary,
    Keywords,
    Examples,
    Description,
    Parameters,
}

impl Field {
    fn weight(self) -> f32 {
        match self {
            Field::Name | Field::Keywords => 3.0,
            Field::Title | Field::Summary => 2.0,
            Field::Examples | Field::Description => 1.0,
            Field::Parameters => 0.5,
        }
    }
}

/// One scored mode, as the select tool reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Index into the catalog's mode list.
    pub mode_index: usize,
    pub score: f32,
    /// Query words that contributed, strongest first.
    pub matched: Vec<String>,
}

/// The inverted index over a catalog.
#[derive(Debug)]
pub struct Index {
    /// word -> (mode index, weighted term frequency)
    postings: HashMap<String, Vec<(usize, f32)>>,
    doc_lengths: Vec<f32>,
    average_length: f32,
}

impl Index {
    pub fn build(catalog: &Catalog) -> Self {
        let mut postings: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        let mut doc_lengths = Vec::with_capacity(catalog.len());
        for (mode_index, mode) in catalog.modes().iter().enumerate() {
            let manifest = &mode.manifest;
            let mut frequencies: HashMap<String, f32> = HashMap::new();
            let mut length = 0.0;
            let mut add = |field: Field, text: &str| {
                for word in text::words(text) {
                    *frequencies.entry(word).or_default() += field.weight();
                    length += field.weight();
                }
            };
            add(Field::Name, &manifest.name);
            add(Field::Title, &manifest.title);
            add(Field::Summary, &manifest.summary);
            add(Field::Description, &manifest.description);
            for keyword in &manifest.keywords {
                add(Field::Keywords, keyword);
            }
            for example in &manifest.examples {
                add(Field::Examples, example);
            }
            if let Some(properties) = manifest.properties() {
                for name in properties.keys() {
                    add(Field::Parameters, name);
                }
            }
            for (word, frequency) in frequencies {
                postings
                    .entry(word)
                    .or_default()
                    .push((mode_index, frequency));
            }
            doc_lengths.push(length);
        }
        let average_length =
            (doc_lengths.iter().sum::<f32>() / doc_lengths.len().max(1) as f32).max(1.0);
        Index {
            postings,
            doc_lengths,
            average_length,
        }
    }

    fn idf(&self, word: &str) -> f32 {
        let n = self.doc_lengths.len() as f32;
        let df = self.postings.get(word).map_or(0, Vec::len) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// All modes with a positive score, best first; ties break by catalog order (name).
    pub fn rank(&self, query: &str) -> Vec<Ranked> {
        let mut query_words = text::words(query);
        query_words.sort();
        query_words.dedup();

        let mut scores: HashMap<usize, (f32, Vec<(f32, String)>)> = HashMap::new();
        for word in &query_words {
            let Some(postings) = self.postings.get(word) else {
                continue;
            };
            let idf = self.idf(word);
            for &(mode_index, frequency) in postings {
                let norm = K1 * (1.0 - B + B * self.doc_lengths[mode_index] / self.average_length);
                let contribution = idf * frequency * (K1 + 1.0) / (frequency + norm);
                let entry = scores.entry(mode_index).or_default();
                entry.0 += contribution;
                entry.1.push((contribution, word.clone()));
            }
        }
        let mut ranked: Vec<Ranked> = scores
            .into_iter()
            .map(|(mode_index, (score, mut contributions))| {
                contributions.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                Ranked {
                    mode_index,
                    score,
                    matched: contributions.into_iter().map(|(_, word)| word).collect(),
                }
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.mode_index.cmp(&b.mode_index))
        });
        ranked
    }
}

/// Turns raw scores into confidences in 0..1 that sum to at most 1.
///
/// A softmax whose temperature scales with the best score, so a clear winner
/// gets a high share and near-ties split it.
pub fn confidences(scores: &[f32]) -> Vec<f32> {
    let Some(&best) = scores.first() else {
        return Vec::new();
    };
    if best <= 0.0 {
        return vec![0.0; scores.len()];
    }
    let temperature = (best / 4.0).max(0.25);
    let exps: Vec<f32> = scores
        .iter()
        .map(|s| ((s - best) / temperature).exp())
        .collect();
    let total: f32 = exps.iter().sum();
    exps.iter().map(|e| e / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidences_favor_the_leader_and_stay_in_range() {
        let c = confidences(&[10.0, 2.0, 1.0]);
        assert!(c[0] > 0.8 && c[0] <= 1.0, "{c:?}");
        assert!(c.iter().all(|v| (0.0..=1.0).contains(v)));
        let tie = confidences(&[5.0, 5.0]);
        assert!((tie[0] - 0.5).abs() < 1e-6);
        assert!(confidences(&[]).is_empty());
    }

    #[test]
    fn ranks_builtin_modes_by_whole_words() {
        let catalog = Catalog::builtin().unwrap();
        if catalog.get("debug").is_none() {
            return; // manifests not present yet in this build
        }
        let index = Index::build(&catalog);
        let top = &index.rank("the app crashes with a stack trace, find the root cause")[0];
        assert_eq!(catalog.modes()[top.mode_index].name(), "debug");
        assert!(index.rank("zzzz qqqq").is_empty());
    }
}
