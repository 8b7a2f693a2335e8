//! Similarity between a query and each mode's example task phrasings.
//!
//! A manifest describes what a mode does; its examples show how people ask for
//! it ("why does X crash", "is this branch ready to merge"), which is often
//! closer to a real query than any description. Each example is a TF-IDF
//! vector over the analyzer's terms; a mode scores the cosine of its best
//! example, plus a fraction of its second best, so a mode whose phrasings
//! agree beats one lucky example elsewhere.

use crate::select::text::analyze::TermKind;

#[derive(Debug)]
pub struct ExampleIndex {
    /// By term id; 0 for terms no example has.
    idf: Vec<f32>,
    /// By term id: (example, weight / the example's vector norm).
    postings: Vec<Vec<(u32, f32)>>,
    /// The mode each example belongs to.
    owners: Vec<u32>,
}

impl ExampleIndex {
    /// `examples` are (mode index, the example's term ids and kinds) pairs;
    /// `terms` is the vocabulary size. A term that occurs in a single example
    /// and for which `is_intent` is false (it is in no mode's name, title,
    /// summary or keywords) is a topic, not an intent ("Jenkins" in "plan our
    /// move off Jenkins"): its weight is multiplied by `topic_weight`, so
    /// sharing a subject with one example does not outweigh asking for the
    /// same kind of work.
    pub fn build(
        examples: &[(usize, Vec<(u32, TermKind)>)],
        terms: usize,
        is_intent: &dyn Fn(u32) -> bool,
        topic_weight: f32,
    ) -> Self {
        let n = examples.len().max(1) as f32;
        // Distinct (id, weight) per example, keeping a term's largest kind
        // weight (a word outranks its concept).
        let distinct: Vec<Vec<(u32, f32)>> = examples
            .iter()
            .map(|(_, terms)| {
                let mut list: Vec<(u32, f32)> = terms
                    .iter()
                    .map(|&(id, kind)| (id, kind.weight()))
                    .collect();
                // By id, largest weight first; then keep each id's first entry.
                list.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
                list.dedup_by_key(|&mut (id, _)| id);
                list
            })
            .collect();

        let mut document_frequency = vec![0.0f32; terms];
        for list in &distinct {
            for &(id, _) in list {
                if let Some(df) = document_frequency.get_mut(id as usize) {
                    *df += 1.0;
                }
            }
        }
        let idf: Vec<f32> = document_frequency
            .iter()
            .map(|&df| {
                if df == 0.0 {
                    0.0
                } else {
                    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
                }
            })
            .collect();

        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
        for (example, list) in distinct.iter().enumerate() {
            let weights: Vec<(u32, f32)> = list
                .iter()
                .filter(|&&(id, _)| (id as usize) < terms)
                .map(|&(id, weight)| {
                    let topical = document_frequency[id as usize] < 2.0 && !is_intent(id);
                    let damp = if topical { topic_weight } else { 1.0 };
                    (id, weight * damp * idf[id as usize])
                })
                .collect();
            let norm = weights.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
            if norm <= 0.0 {
                continue;
            }
            for (id, weight) in weights {
                postings[id as usize].push((example as u32, weight / norm));
            }
        }
        ExampleIndex {
            idf,
            postings,
            owners: examples.iter().map(|(mode, _)| *mode as u32).collect(),
        }
    }

    /// Whether any example has the term.
    pub fn knows(&self, id: u32) -> bool {
        self.postings
            .get(id as usize)
            .is_some_and(|l| !l.is_empty())
    }

    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// Per mode, the best example cosine plus `second_best_share` of the
    /// second best; 0 for modes without examples. `query` holds (term id if
    /// known, weight) pairs.
    pub fn scores(
        &self,
        query: &[(Option<u32>, f32)],
        modes: usize,
        second_best_share: f32,
    ) -> Vec<f32> {
        let mut mode_scores = vec![0.0f32; modes];
        if self.is_empty() {
            return mode_scores;
        }
        let mut dots = vec![0.0f32; self.owners.len()];
        let mut query_norm = 0.0f32;
        for &(id, weight) in query {
            let Some(id) = id.filter(|&id| self.knows(id)) else {
                continue;
            };
            let q = weight * self.idf[id as usize];
            query_norm += q * q;
            for &(example, w) in &self.postings[id as usize] {
                dots[example as usize] += q * w;
            }
        }
        if query_norm <= 0.0 {
            return mode_scores;
        }
        let query_norm = query_norm.sqrt();
        let mut best = vec![(0.0f32, 0.0f32); modes];
        for (example, dot) in dots.into_iter().enumerate() {
            let Some(slot) = best.get_mut(self.owners[example] as usize) else {
                continue;
            };
            let cosine = dot / query_norm;
            if cosine > slot.0 {
                *slot = (cosine, slot.0);
            } else if cosine > slot.1 {
                slot.1 = cosine;
            }
        }
        for (score, (first, second)) in mode_scores.iter_mut().zip(best) {
            *score = first + second_best_share * second;
        }
        mode_scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::text::analyze::{Analyzer, Options, Vocabulary, query_terms};

    struct Fixture {
        analyzer: Analyzer,
        vocabulary: Vocabulary,
        index: ExampleIndex,
    }

    impl Fixture {
        fn new(examples: &[(usize, &str)]) -> Self {
            let analyzer = Analyzer::new(Options::FULL);
            let mut vocabulary = Vocabulary::default();
            let analyzed: Vec<(usize, Vec<(u32, TermKind)>)> = examples
                .iter()
                .map(|(mode, text)| {
                    let terms = analyzer
                        .analyze(text)
                        .into_iter()
                        .map(|t| (vocabulary.intern(&t.key), t.kind))
                        .collect();
                    (*mode, terms)
                })
                .collect();
            let index = ExampleIndex::build(&analyzed, vocabulary.len(), &|_| true, 1.0);
            Fixture {
                analyzer,
                vocabulary,
                index,
            }
        }

        fn scores(&self, query: &str, modes: usize) -> Vec<f32> {
            let query: Vec<(Option<u32>, f32)> = query_terms(self.analyzer.analyze(query))
                .into_iter()
                .map(|(t, w)| (self.vocabulary.get(&t.key), w))
                .collect();
            self.index.scores(&query, modes, 0.3)
        }
    }

    #[test]
    fn the_mode_with_the_closest_example_wins() {
        let fixture = Fixture::new(&[
            (0, "why does the app crash on upload"),
            (1, "write unit tests for the parser"),
        ]);
        let scores = fixture.scores("the app crashes", 2);
        assert!(scores[0] > 0.3 && scores[1] == 0.0, "{scores:?}");
        let identical = fixture.scores("write unit tests for the parser", 2);
        assert!((identical[1] - 1.0).abs() < 1e-4, "{identical:?}");
    }

    #[test]
    fn no_examples_or_no_overlap_scores_zero() {
        let empty = Fixture::new(&[]);
        assert_eq!(empty.scores("x", 3), [0.0; 3]);
        let fixture = Fixture::new(&[(0, "alpha beta")]);
        assert_eq!(fixture.scores("gamma", 1), [0.0]);
        assert!(!fixture.index.knows(99));
    }
}
