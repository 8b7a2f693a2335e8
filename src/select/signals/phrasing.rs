//! A naive Bayes model of how each mode is asked for.
//!
//! Every mode is a bag of terms from the way it is phrased: its example tasks
//! (weight 1 each) and its name, title, summary and keywords (weighted more,
//! see `Tuning::intent_text_weight`, since each is written to say
//! what the mode is for). The model scores a query by the probability that the mode's bag
//! produced it (multinomial naive Bayes with additive smoothing) and returns
//! the posterior over modes.
//!
//! Unlike the best-example cosine ([`super::examples`]), which follows a
//! single phrasing, this pools the evidence of all of a mode's phrasings: a
//! word that shows up across many of a mode's examples ("tests", "plan")
//! becomes strong evidence for it, and a subject that one example happens to
//! mention stays weak. On the development set's held-out half it is the
//! strongest single signal (0.946 top-1 alone, against 0.844 for the example
//! cosine and 0.760 for BM25).

#[derive(Debug, Default)]
pub struct PhrasingModel {
    /// By term id: (mode, ln((count + α) / α)), the log-gain of having seen it.
    gains: Vec<Vec<(u32, f32)>>,
    /// Per mode: ln(α / (total count + α·|V|)), a term it never produced.
    unseen: Vec<f32>,
}

/// Collects each mode's phrasing counts while the index is built.
#[derive(Debug, Default)]
pub struct PhrasingCounts {
    /// Per mode: (term id, weight) for each distinct term of each text;
    /// summed per term when the model is built.
    modes: Vec<Vec<(u32, f32)>>,
    scratch: Vec<u32>,
}

impl PhrasingCounts {
    pub fn new(modes: usize) -> Self {
        PhrasingCounts {
            modes: vec![Vec::new(); modes],
            scratch: Vec::new(),
        }
    }

    /// Adds one text of `mode`: each distinct term once, times `weight`.
    pub fn add(&mut self, mode: usize, ids: &[u32], weight: f32) {
        let Some(counts) = self.modes.get_mut(mode) else {
            return;
        };
        self.scratch.clear();
        self.scratch.extend_from_slice(ids);
        self.scratch.sort_unstable();
        self.scratch.dedup();
        counts.extend(self.scratch.iter().map(|&id| (id, weight)));
    }
}

impl PhrasingModel {
    /// `terms` is the vocabulary size; `smoothing` is the additive
    /// (Lidstone) pseudo-count of every known term: small values trust the
    /// phrasings, large ones flatten them.
    pub fn build(counts: PhrasingCounts, terms: usize, smoothing: f32) -> Self {
        let smoothing = smoothing.max(f32::MIN_POSITIVE);
        let mut gains: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
        // Per mode, (term, summed count) by term id; a stable sort keeps
        // each sum in insertion order, so it is the same on every run.
        let merged: Vec<Vec<(u32, f32)>> = counts
            .modes
            .into_iter()
            .map(|mut entries| {
                entries.sort_by_key(|&(id, _)| id);
                let mut sums: Vec<(u32, f32)> = Vec::new();
                for (id, count) in entries {
                    match sums.last_mut() {
                        Some((last, sum)) if *last == id => *sum += count,
                        _ => sums.push((id, count)),
                    }
                }
                sums
            })
            .collect();
        // |V|: the distinct terms any mode produced.
        let mut seen = vec![false; terms];
        for sums in &merged {
            for &(id, _) in sums {
                if let Some(flag) = seen.get_mut(id as usize) {
                    *flag = true;
                }
            }
        }
        let size = seen.iter().filter(|&&flag| flag).count() as f32;
        let mut unseen = Vec::with_capacity(merged.len());
        for (mode, sums) in merged.iter().enumerate() {
            let total: f32 = sums.iter().map(|&(_, c)| c).sum();
            unseen.push((smoothing / (total + smoothing * size).max(f32::MIN_POSITIVE)).ln());
            for &(id, count) in sums {
                if let Some(list) = gains.get_mut(id as usize) {
                    list.push((mode as u32, ((count + smoothing) / smoothing).ln()));
                }
            }
        }
        PhrasingModel { gains, unseen }
    }

    /// The posterior over modes for the query, scaled by the share of the
    /// query (by term weight) the model knows: a posterior always sums to 1,
    /// even when it rests on one word of a long query, and the scaling keeps
    /// such thin evidence from looking certain. All zeros when no query term
    /// is known. `query` holds (term id if known, weight) pairs.
    ///
    /// `temperature` divides the log-likelihoods before normalizing. Naive
    /// Bayes treats every word as independent evidence, so its raw posterior
    /// is far too sure of itself (one rare word can give 0.9); a temperature
    /// above 1 keeps short or vague queries uncertain while long ones, whose
    /// evidence adds up, stay decisive.
    pub fn posterior(&self, query: &[(Option<u32>, f32)], temperature: f32) -> Vec<f32> {
        let modes = self.unseen.len();
        let mut log_likelihood = vec![0.0f32; modes];
        let mut known_weight = 0.0f32;
        let total_weight: f32 = query.iter().map(|(_, w)| w).sum();
        for &(id, weight) in query {
            // A word no mode uses says nothing about which mode.
            let Some(list) = id.and_then(|id| self.gains.get(id as usize)) else {
                continue;
            };
            if list.is_empty() {
                continue;
            }
            known_weight += weight;
            for &(mode, gain) in list {
                log_likelihood[mode as usize] += weight * gain;
            }
        }
        if known_weight <= 0.0 || modes == 0 {
            return vec![0.0; modes];
        }
        for (score, unseen) in log_likelihood.iter_mut().zip(&self.unseen) {
            *score += known_weight * unseen;
        }
        let best = log_likelihood
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        let temperature = temperature.max(f32::MIN_POSITIVE);
        let exps: Vec<f32> = log_likelihood
            .iter()
            .map(|s| ((s - best) / temperature).exp())
            .collect();
        let total: f32 = exps.iter().sum();
        let coverage = (known_weight / total_weight).clamp(0.0, 1.0);
        exps.into_iter().map(|e| coverage * e / total).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::text::analyze::{Analyzer, Options, Vocabulary, query_terms};

    struct Fixture {
        analyzer: Analyzer,
        vocabulary: Vocabulary,
        model: PhrasingModel,
    }

    impl Fixture {
        fn new(texts: &[(usize, &str)], modes: usize) -> Self {
            let analyzer = Analyzer::new(Options::FULL);
            let mut vocabulary = Vocabulary::default();
            let mut counts = PhrasingCounts::new(modes);
            for (mode, text) in texts {
                let ids: Vec<u32> = analyzer
                    .analyze(text)
                    .iter()
                    .map(|t| vocabulary.intern(&t.key))
                    .collect();
                counts.add(*mode, &ids, 1.0);
            }
            let model = PhrasingModel::build(counts, vocabulary.len(), 0.2);
            Fixture {
                analyzer,
                vocabulary,
                model,
            }
        }

        fn posterior(&self, query: &str) -> Vec<f32> {
            let query: Vec<(Option<u32>, f32)> = query_terms(self.analyzer.analyze(query))
                .into_iter()
                .map(|(t, w)| (self.vocabulary.get(&t.key), w))
                .collect();
            self.model.posterior(&query, 1.0)
        }
    }

    #[test]
    fn pooled_evidence_beats_one_shared_subject() {
        let fixture = Fixture::new(
            &[
                (0, "write tests for the parser"),
                (0, "add unit tests to the cache"),
                (0, "tests for the jenkins plugin"),
                (1, "plan the move off jenkins"),
            ],
            2,
        );
        let posterior = fixture.posterior("write tests for jenkins");
        assert!(posterior[0] > posterior[1], "{posterior:?}");
        // Every query word is known: the posterior sums to 1.
        assert!((posterior.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        // Part of the query unknown: part of the mass.
        let thin: f32 = fixture.posterior("tests zzzz").iter().sum();
        assert!(thin > 0.2 && thin < 0.7, "{thin}");
    }

    #[test]
    fn unknown_queries_and_empty_models_give_zeros() {
        let fixture = Fixture::new(&[(0, "alpha")], 2);
        assert_eq!(fixture.posterior("zeta"), [0.0, 0.0]);
        let empty = PhrasingModel::build(PhrasingCounts::new(0), 0, 0.2);
        assert!(empty.posterior(&[(Some(0), 1.0)], 1.0).is_empty());
    }

    #[test]
    fn out_of_range_modes_and_ids_are_ignored() {
        let mut counts = PhrasingCounts::new(1);
        counts.add(5, &[0], 1.0);
        counts.add(0, &[7], 1.0); // beyond the vocabulary
        let model = PhrasingModel::build(counts, 1, 0.2);
        assert_eq!(
            model.posterior(&[(Some(0), 1.0), (Some(42), 1.0)], 1.0),
            [0.0]
        );
    }
}
