//! Ranking a request: [`Index::ranking`] and [`Index::rank`].
//!
//! The modes' scores (`scoring.rs`) are put in order (ties break by
//! catalog order), a mode the request names wins outright, and the safety
//! rules hold back destructive or state-changing tools the request does not
//! ask for. Then each mode gets its confidence (`confidence.rs`) and the
//! best few the words that matched them. With the full model loaded, a
//! ranking the table is unsure of is handed to the model's index.

use super::{
    confidence::{Ranked, Ranking, assign_confidences},
    index::Index,
    scoring::Query,
    text::analyze::{Term, TermKind},
};

/// Modes that get their matched words listed (the select tool shows at most 10).
const EXPLAINED: usize = 10;

impl Index {
    /// [`Index::no_fit_score`] of the index that produced `ranking` (the
    /// model's scores have another scale).
    pub fn no_fit_score_of(&self, ranking: &Ranking) -> f32 {
        match self.ready_model() {
            Some(model) if ranking.by_model => model.no_fit_score,
            _ => self.no_fit_score,
        }
    }

    /// The model's index, once it is built.
    fn ready_model(&self) -> Option<&Index> {
        self.model.as_ref().and_then(|slot| slot.get())
    }

    /// Whether a model index is due (the full model is loaded) but still
    /// being built on another thread ([`Index::build_model_later`]).
    pub fn model_pending(&self) -> bool {
        self.model.is_some() && self.ready_model().is_none()
    }

    /// [`Index::ranking`], once the model's index is ready if it is being
    /// built ([`Index::build_model_later`]), waiting at most `limit` for
    /// it. A server answers its first requests this way: the table and
    /// the model disagree on about a request in three, and a reply that
    /// changed a second later, for the same request, could not be
    /// trusted. With the tool vectors cached (`upstream add` computes
    /// them) the model's index is ready in well under a second; a large
    /// catalog the model has never seen takes seconds, and past `limit`
    /// the table answers meanwhile.
    pub fn ranking_when_ready(&self, query: &str, limit: std::time::Duration) -> Ranking {
        let started = std::time::Instant::now();
        while self.model_pending() && !super::model_builds::gave_up() && started.elapsed() < limit {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.ranking(query)
    }

    /// Modes with a positive score, best first; ties break by catalog order.
    pub fn rank(&self, query: &str) -> Vec<Ranked> {
        self.ranking(query).ranked
    }

    /// [`Index::rank`] plus the no-fit share of the confidence.
    ///
    /// Every signal is relative to the query's own known words, so "make it
    /// better" can match a mode as well as a detailed task does. Scores are
    /// therefore scaled by `1 - exp(-evidence / evidence_scale)`, where the
    /// evidence is the summed IDF of the query's known terms: the order of
    /// the modes is unchanged, but a thin query gets flatter confidences and
    /// loses to the no-fit candidate more easily.
    ///
    /// With the full model loaded, the table ranks first and the model is
    /// asked only when the table's best mode has a confidence under
    /// [`Tuning::ask_model_below`](super::tuning::Tuning::ask_model_below):
    /// a sure answer costs microseconds, an unsure one the model's
    /// milliseconds, and its answer is the model's whole ranking
    /// (confidences and no-fit share included). While the
    /// model's index is still being built ([`Index::build_model_later`]),
    /// the table answers every request.
    pub fn ranking(&self, query: &str) -> Ranking {
        let model = self.ready_model();
        // Above 1 the model is asked whatever the table says (no
        // confidence reaches it): the table's ranking would be thrown away.
        if let Some(model) = model
            && self.tuning.ask_model_below > 1.0
        {
            return Ranking {
                by_model: true,
                ..model.own_ranking(query)
            };
        }
        let ranking = self.own_ranking(query);
        let unsure = |ranking: &Ranking| {
            ranking
                .ranked
                .first()
                .is_none_or(|best| best.confidence < self.tuning.ask_model_below)
        };
        match model {
            Some(model) if unsure(&ranking) => Ranking {
                by_model: true,
                ..model.own_ranking(query)
            },
            _ => ranking,
        }
    }

    /// This index's ranking, without asking the model.
    fn own_ranking(&self, query: &str) -> Ranking {
        let query = self.query(query);
        let tuning = &self.tuning;
        let (base, mut scores, shares) = self.scores_with_actions(&query);
        let plain_confidences = self.confidences_on_evidence(&base, &scores, &shares);
        // The request's action (and, in a mixed catalog, the lighter
        // example signals) reorder the candidates; whether anything fits
        // at all, and how sure the ranking is, stay on the scale the no-fit
        // score is calibrated on: the best score is brought back to the
        // best score on that scale.
        let scale = rescale(&base, &scores);
        for score in &mut scores {
            *score *= scale;
        }
        let mut ranked: Vec<Ranked> = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| **score > 0.0 && score.is_finite())
            .map(|(mode_index, &score)| Ranked {
                mode_index,
                score,
                confidence: 0.0,
                matched: Vec::new(),
            })
            .collect();
        // A mode the request names wins outright.
        let top = ranked.iter().map(|r| r.score).fold(0.0f32, f32::max);
        for entry in &mut ranked {
            if query.named.contains(&entry.mode_index) {
                entry.score += top + 1.0;
            }
        }
        if !query.named.is_empty() {
            for &mode_index in &query.named {
                if !ranked.iter().any(|r| r.mode_index == mode_index) {
                    ranked.push(Ranked {
                        mode_index,
                        score: top + 1.0,
                        confidence: 0.0,
                        matched: Vec::new(),
                    });
                }
            }
        }
        ranked.sort_by(by_score);
        let held_back = self.hold_back_destructive(&query, &mut ranked);
        if !held_back.is_empty() {
            ranked.sort_by(by_score);
        }
        let no_fit = assign_confidences(&mut ranked, tuning, self.no_fit_score);
        for entry in ranked.iter_mut().take(EXPLAINED) {
            entry.matched = self.matched_words(&query, entry.mode_index);
        }
        let first = ranked.first().map(|r| r.mode_index);
        // Whether a ready call is safe is judged on the confidence the
        // ranking would have without the classifier, which sharpens every
        // ranking, an off-topic request's too, and without the lift of
        // tools without examples, a guess.
        let on_evidence = |m: usize, confidence: f32| {
            let plain = plain_confidences
                .as_ref()
                .and_then(|p| p.get(m).copied())
                .unwrap_or(confidence);
            confidence.min(plain)
        };
        let held = |m: usize, confidence: f32| {
            self.held_for_ready(&query, m, on_evidence(m, confidence), no_fit)
        };
        let unasked = ranked
            .iter()
            .take(EXPLAINED)
            .filter(|r| {
                held(r.mode_index, r.confidence)
                    || self.unsure_change(&query, r.mode_index, &ranked)
            })
            .map(|r| r.mode_index)
            .collect();
        Ranking {
            unasked,
            no_fit,
            by_model: false,
            held_back,
            first_unasked_destructive: first.is_some_and(|m| {
                held(m, ranked.first().map_or(0.0, |r| r.confidence))
                    || self.off_topic_change(
                        &query,
                        m,
                        no_fit,
                        on_evidence(m, ranked.first().map_or(0.0, |r| r.confidence)),
                    )
                    || self.unsure_change(&query, m, &ranked)
            }),
            named: first.is_some_and(|m| query.named.contains(&m)),
            ranked,
            judged: tuning.reply,
        }
    }

    /// Each mode's confidence with the tool classifier's share of its score
    /// and the lift of a tool without examples taken out (on the same
    /// scale as the ranking's own); `None` when neither added anything.
    fn confidences_on_evidence(
        &self,
        base: &[f32],
        scores: &[f32],
        shares: &[f32],
    ) -> Option<Vec<f32>> {
        if !shares.iter().any(|&c| c > 0.0) {
            return None;
        }
        let plain: Vec<f32> = scores.iter().zip(shares).map(|(s, c)| s - c).collect();
        let scale = rescale(base, &plain);
        let mut ranked: Vec<Ranked> = plain
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0 && s.is_finite())
            .map(|(mode_index, &s)| Ranked {
                mode_index,
                score: s * scale,
                confidence: 0.0,
                matched: Vec::new(),
            })
            .collect();
        ranked.sort_by(by_score);
        assign_confidences(&mut ranked, &self.tuning, self.no_fit_score);
        let mut confidences = vec![0.0; scores.len()];
        for entry in ranked {
            confidences[entry.mode_index] = entry.confidence;
        }
        Some(confidences)
    }

    /// A request nothing clearly fits (the no-fit share outweighs the best
    /// mode) does not ask for the change `mode`, the first, would make:
    /// without a general mode to fall back on (`--no-builtin-modes`), a
    /// cooking question was handed a ready call to create a coupon. Named
    /// modes are asked for.
    fn off_topic_change(&self, query: &Query, mode: usize, no_fit: f32, best: f32) -> bool {
        let changes = self.changes_state.get(mode).copied().unwrap_or(false)
            || self.destructive.get(mode).copied().unwrap_or(false);
        changes && !query.named.contains(&mode) && no_fit >= best
    }

    /// A request whose only sign of asking for a change is a verb the
    /// action classes do not know ("sketch how everything under src is
    /// nested") gets no ready call to a tool that changes state unless the
    /// ranking is sure of it: the verb may describe, not command.
    fn unsure_change(&self, query: &Query, mode: usize, ranked: &[Ranked]) -> bool {
        query.change_by_unknown_verb
            && !query.named.contains(&mode)
            && self.changes_state.get(mode).copied().unwrap_or(false)
            && ranked
                .first()
                .is_some_and(|best| best.confidence < self.tuning.reply.low_confidence)
    }

    /// The safety rule: when destructive modes the request does not ask for
    /// rank above the first harmless one, they go just below it (their
    /// order kept). Returns them, best first.
    fn hold_back_destructive(&self, query: &Query, ranked: &mut [Ranked]) -> Vec<usize> {
        let Some(safe) = ranked
            .iter()
            .position(|r| !self.held_in_order(query, r.mode_index))
        else {
            return Vec::new();
        };
        if safe == 0 {
            return Vec::new();
        }
        let floor = ranked[safe].score;
        let held: Vec<usize> = ranked[..safe].iter().map(|r| r.mode_index).collect();
        for (step, entry) in ranked[..safe].iter_mut().enumerate() {
            // Below the harmless one, in their own order.
            entry.score = floor * (1.0 - 1e-4 * (step as f32 + 1.0));
        }
        held
    }

    /// The query's words that matched `mode_index`, strongest first, each once.
    fn matched_words(&self, query: &Query, mode_index: usize) -> Vec<String> {
        let mut contributions: Vec<(f32, &Term)> = query
            .terms
            .iter()
            .zip(&query.ids)
            .map(|((term, _), &(id, weight))| {
                let contribution =
                    id.map_or(0.0, |id| self.lexical.contribution(id, weight, mode_index));
                (contribution, term)
            })
            .filter(|(contribution, _)| *contribution > 0.0)
            .collect();
        contributions.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.kind.cmp(&b.1.kind))
                .then_with(|| a.1.surface.cmp(&b.1.surface))
        });
        let mut words: Vec<String> = Vec::new();
        for (_, term) in contributions {
            // A phrase already says its words; a concept says the word it came from.
            let covered = words.iter().any(|w| {
                w == &term.surface || (term.kind != TermKind::Phrase && w.contains(&term.surface))
            });
            if !covered {
                words.push(term.surface.clone());
            }
        }
        words
    }
}

/// Best score first; ties by catalog order.
fn by_score(a: &Ranked, b: &Ranked) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.mode_index.cmp(&b.mode_index))
}

/// The factor that brings the best of `scores` back to the best of `base`
/// (1 when either has no positive score).
fn rescale(base: &[f32], scores: &[f32]) -> f32 {
    let best = |scores: &[f32]| {
        scores
            .iter()
            .copied()
            .filter(|s| s.is_finite())
            .fold(0.0f32, f32::max)
    };
    let (before, after) = (best(base), best(scores));
    if before > 0.0 && after > 0.0 {
        before / after
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, OnceLock};

    use super::*;
    use crate::{
        catalog::{Catalog, Manifest},
        select::tuning::{Ranker, Tuning},
    };

    /// Modes without example phrasings, each text its title, summary and
    /// description.
    fn catalog_of<const N: usize>(modes: [(&str, &str); N]) -> Catalog {
        Catalog::from_modes(modes.map(|(name, text)| {
            let manifest = serde_json::json!({
                "name": name, "title": text, "summary": text, "description": text,
                "category": "utility", "schema": {"type": "object", "properties": {}}
            });
            crate::catalog::Mode::new(
                Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        }))
    }

    /// Tools without example phrasings, each with the same text and its own
    /// parameters.
    fn tools_taking<const N: usize>(tools: [(&str, serde_json::Value); N]) -> Catalog {
        Catalog::from_modes(tools.map(|(name, properties)| {
            let text = "reads it and gives back what it says";
            let manifest = serde_json::json!({
                "name": name, "title": text, "summary": text, "description": text,
                "category": "utility",
                "schema": {"type": "object", "properties": properties}
            });
            crate::catalog::Mode::new(
                Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        }))
    }

    #[test]
    fn a_tool_that_takes_the_value_the_request_carries_ranks_first() {
        use serde_json::json;
        // Same words and names that say nothing, so only the parameters
        // tell them apart; both orders of the catalog, so the tie-break by
        // position cannot pass the test.
        let tools = [
            ("reader_a", json!({"name": {"type": "string"}})),
            ("reader_b", json!({"url": {"type": "string"}})),
            ("reader_c", json!({"path": {"type": "string"}})),
            ("reader_d", json!({"timezone": {"type": "string"}})),
        ];
        let mut reversed = tools.clone();
        reversed.reverse();
        for catalog in [tools_taking(tools), tools_taking(reversed)] {
            let index = Index::build(&catalog);
            for (request, wanted) in [
                ("read it for me: https://example.org/guide", "reader_b"),
                ("read it for me: notes/today.md", "reader_c"),
                ("read it for me for Europe/Paris", "reader_d"),
            ] {
                assert_eq!(top(&catalog, &index, request), wanted, "{request}");
            }
        }
    }

    fn builtin_index() -> (Catalog, Index) {
        let catalog = Catalog::builtin().unwrap();
        let index = Index::build(&catalog);
        (catalog, index)
    }

    fn top(catalog: &Catalog, index: &Index, query: &str) -> String {
        let ranked = index.rank(query);
        catalog.modes()[ranked[0].mode_index].name().to_owned()
    }

    #[test]
    fn ranks_builtin_modes_by_whole_words() {
        let (catalog, index) = builtin_index();
        assert_eq!(
            top(
                &catalog,
                &index,
                "the app crashes with a stack trace, find the root cause"
            ),
            "debug"
        );
        assert!(index.rank("zzzz qqqq").is_empty());
    }

    #[test]
    fn substrings_never_match() {
        // "or" is inside "refactor", "for" and "error"; it must match nothing.
        let (_, index) = builtin_index();
        assert!(index.rank("or").is_empty());
    }

    #[test]
    fn confidences_are_probabilities_and_favor_the_leader() {
        let (_, index) = builtin_index();
        let ranking = index.ranking("write unit tests with edge cases for the parser");
        let sum: f32 = ranking.ranked.iter().map(|r| r.confidence).sum::<f32>() + ranking.no_fit;
        assert!((sum - 1.0).abs() < 1e-3, "{sum}");
        assert!(
            ranking
                .ranked
                .iter()
                .all(|r| (0.0..=1.0).contains(&r.confidence))
        );
        assert!(ranking.ranked[0].confidence > ranking.ranked[1].confidence);
        assert!(!ranking.is_low_confidence() && !ranking.no_clear_fit());
    }

    #[test]
    fn a_vague_query_has_no_clear_fit() {
        let (_, index) = builtin_index();
        let ranking = index.ranking("hello there");
        assert!(
            ranking.is_low_confidence() && ranking.no_clear_fit(),
            "{ranking:?}"
        );
        let empty = index.ranking("");
        assert!(empty.ranked.is_empty() && empty.no_clear_fit());
        assert_eq!(empty.no_fit, 1.0);
    }

    #[test]
    fn ranking_is_deterministic_and_ties_break_by_name() {
        let (_, index) = builtin_index();
        let first = index.rank("review the diff before I commit");
        for _ in 0..5 {
            assert_eq!(index.rank("review the diff before I commit"), first);
        }
        for pair in first.windows(2) {
            assert!(
                pair[0].score > pair[1].score
                    || (pair[0].score == pair[1].score && pair[0].mode_index < pair[1].mode_index)
            );
        }
    }

    #[test]
    fn explains_matches_with_the_words_as_written() {
        let (catalog, index) = builtin_index();
        let ranked = index.rank("Generate unit tests for the parser");
        assert_eq!(catalog.modes()[ranked[0].mode_index].name(), "testgen");
        assert!(
            ranked[0].matched.iter().any(|w| w.contains("tests")),
            "{:?}",
            ranked[0].matched
        );
    }

    #[test]
    fn the_baseline_ranks_without_stemming() {
        let catalog = catalog_of([("demo", "find the crash")]);
        let plain = Index::build_with(&catalog, Ranker::Bm25);
        let full = Index::build(&catalog);
        assert_eq!(plain.ranker(), Ranker::Bm25);
        // "crashes" is not a word of the manifest; only its stem is.
        assert!(plain.rank("crashes").is_empty());
        assert!(!full.rank("crashes").is_empty());
        // Synonyms: "exception" is in the defect group with "crash".
        assert!(plain.rank("exception").is_empty());
        assert!(!full.rank("exception").is_empty());
    }

    #[test]
    fn exact_forms_outrank_inflections() {
        let catalog = catalog_of([
            ("list_branches", "list branches"),
            ("create_branch", "create branch"),
        ]);
        let index = Index::build(&catalog);
        let name = |query: &str| {
            catalog.modes()[index.rank(query)[0].mode_index]
                .name()
                .to_owned()
        };
        assert_eq!(name("which branches are there"), "list_branches");
        assert_eq!(name("make a branch"), "create_branch");
    }

    /// While the model's index is still being built the table answers
    /// alone; once it is there, unsure requests go to it. (A plain BM25
    /// index stands in for the model's, which needs the weights.)
    #[test]
    fn the_table_answers_alone_until_the_model_index_is_ready() {
        let catalog = catalog_of([
            ("book_flight", "Books a seat on an airline flight."),
            ("hotel_search", "Finds hotel rooms for given dates."),
        ]);
        let always_unsure = Tuning {
            ask_model_below: 1.01,
            ..Tuning::DEFAULT
        };
        let mut index = Index::build_tuned(&catalog, Ranker::Full, always_unsure);
        assert!(!index.model_pending(), "no model is loaded in unit tests");
        let stand_in = Index::build_with(&catalog, Ranker::Bm25);
        let query = "reserve a hotel room";
        let order = |ranking: &Ranking| -> Vec<(usize, u32)> {
            ranking
                .ranked
                .iter()
                .map(|r| (r.mode_index, r.score.to_bits()))
                .collect()
        };

        let slot = Arc::new(OnceLock::new());
        index.model = Some(Arc::clone(&slot));
        assert!(index.model_pending());
        let before = index.ranking(query);
        assert!(!before.by_model);
        assert_eq!(order(&before), order(&index.own_ranking(query)));
        assert_eq!(index.no_fit_score_of(&before), index.no_fit_score());

        slot.set(stand_in).unwrap();
        assert!(!index.model_pending());
        let after = index.ranking(query);
        assert!(after.by_model);
        let model = slot.get().unwrap();
        assert_eq!(order(&after), order(&model.own_ranking(query)));
        assert_ne!(
            order(&after),
            order(&before),
            "the stand-in must rank differently"
        );
        assert_eq!(index.no_fit_score_of(&after), model.no_fit_score());
    }

    /// A server's `readOnlyHint` says whether its tool changes state
    /// before the tool's name does: a question is not offered
    /// `star_repository` first (no verb of its name changes anything), and
    /// is offered a read-only `create_report` (its name's verb creates).
    #[test]
    fn annotations_say_first_whether_a_tool_changes_state() {
        let tool = |name: &str, read_only: bool| {
            let manifest = serde_json::json!({
                "name": name, "title": name, "summary": "a tool", "description": "about repositories",
                "category": "utility", "schema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": read_only}
            });
            crate::catalog::Mode::new(
                Manifest::parse(&manifest.to_string(), None).unwrap(),
                crate::catalog::Origin::Builtin,
            )
        };
        let catalog = Catalog::from_modes([
            tool("star_repository", false),
            tool("create_report", true),
            tool("list_repositories", true),
        ]);
        let changing =
            |name: &str| crate::select::changes_state(catalog.get(name).unwrap().manifest());
        assert!(changing("star_repository"));
        assert!(!changing("create_report") && !changing("list_repositories"));
        let index = Index::build(&catalog);
        let ranking = index.ranking("which repository should I star?");
        let first = catalog.modes()[ranking.ranked[0].mode_index].name();
        assert_ne!(first, "star_repository", "{ranking:?}");
        let ranking = index.ranking("what would a report on the repositories say?");
        let first = catalog.modes()[ranking.ranked[0].mode_index].name();
        assert_eq!(first, "create_report", "{ranking:?}");
    }

    /// Off-topic requests (tests/data/select_offtopic.jsonl, written for
    /// this test) over six real servers' tools without the built-in modes:
    /// most are flagged as having no clear fit, and none of those gets a
    /// ready call to a tool that changes state (the reply drops the call
    /// when `first_unasked_destructive` is set). An off-topic request that
    /// asks for an action a tool does ("write a short poem") is not always
    /// flagged, and is not covered yet.
    #[test]
    fn off_topic_requests_get_no_ready_call_to_a_changing_tool() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let shared = root.join("../shared/catalogs");
        if !shared.is_dir() {
            return;
        }
        let sources = crate::catalog::CatalogSources {
            no_builtin: true,
            foreign_catalogs: ["github", "filesystem", "git", "memory", "slack", "stripe"]
                .iter()
                .map(|name| shared.join(format!("{name}.json")))
                .collect(),
            ..Default::default()
        };
        let catalog = Catalog::load(&sources).unwrap();
        let index = Index::build(&catalog);
        let labels =
            crate::select::eval::read_labels(&root.join("tests/data/select_offtopic.jsonl"))
                .unwrap();
        let (mut flagged, mut changing) = (0, 0);
        for label in &labels {
            let ranking = index.ranking(&label.query);
            if !ranking.no_clear_fit() {
                continue;
            }
            flagged += 1;
            let Some(first) = ranking.ranked.first() else {
                continue;
            };
            let changes =
                index.changes_state[first.mode_index] || index.destructive[first.mode_index];
            changing += usize::from(changes);
            assert!(
                !changes || ranking.first_unasked_destructive,
                "{:?} got a ready call to {}",
                label.query,
                catalog.modes()[first.mode_index].name()
            );
        }
        let share = flagged as f64 / labels.len() as f64;
        assert!(share >= 0.5, "{share:.3} flagged");
        assert!(
            changing > 0,
            "no flagged request ranked a changing tool first"
        );
    }

    #[test]
    fn hostile_queries_do_not_panic() {
        let (_, index) = builtin_index();
        let long = "debug ".repeat(5_000);
        for query in ["", " ", "🦀", "\u{0}", long.as_str(), "İ ß ǅ", "a'b'c'd"] {
            let ranking = index.ranking(query);
            assert!(ranking.no_fit.is_finite());
        }
    }

    #[test]
    fn empty_catalog_ranks_nothing() {
        let catalog = Catalog::from_modes(Vec::new());
        let index = Index::build(&catalog);
        assert!(index.rank("debug this crash").is_empty());
    }
}
