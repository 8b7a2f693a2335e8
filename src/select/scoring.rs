//! Scoring a request against every mode of an index.
//!
//! A request becomes a [`Query`]: its analyzed terms and their ids, its
//! meaning vector, the actions it asks for, the values it carries and the
//! modes it names. Each mode then gets its four signals ([`Signals`]:
//! lexical, examples, phrasing, meaning), their weighted sum scaled by how
//! much evidence the query holds, and the weight of the request's action
//! and values ([`Index::action_effect`]). The safety rules' test of a mode
//! ([`Index::held`]) is here too, since the action weights use it. What the
//! scores become (an ordered ranking with confidences) is `ranking.rs`'s
//! business; the no-fit calibration (`nofit.rs`) scores its probes here.

use super::{
    index::Index,
    signals::{
        action::{self, Actions},
        embedding::{EmbeddingIndex, QueryMeaning},
        intent,
        values::Values,
    },
    text::{
        analyze::{Term, query_terms},
        words,
    },
    tuning::Ranker,
};

/// A mode's signals before weighting, each about 0..1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    pub lexical: f32,
    pub examples: f32,
    pub phrasing: f32,
    /// Meaning: cosine of the static embeddings, rescaled by
    /// [`Tuning::semantic_floor`](super::tuning::Tuning::semantic_floor); 0
    /// when the signal does not run.
    pub semantic: f32,
    /// With the full model: the tool classifier's probability for a
    /// server's tool, among the catalog's server tools; 0 for zenmode's own
    /// modes and without the model.
    pub trained: f32,
    /// The part of `semantic` that is an estimate, not evidence: what a
    /// tool without examples is credited for the examples it lacks
    /// (`Tuning::unseen_example_lift`).
    pub estimated: f32,
}

/// A query's distinct weighted terms and, in the same order, their ids in
/// the index's vocabulary (`None` for words the catalog never uses).
pub(super) struct Query {
    pub(super) terms: Vec<(Term, f32)>,
    pub(super) ids: Vec<(Option<u32>, f32)>,
    /// The query's meaning vector (and, with the table, its token rows),
    /// when the index has one.
    pub(super) meaning: Option<QueryMeaning>,
    /// The request's first action word's classes ([`Actions::of_request_main`]).
    pub(super) main_action: Actions,
    /// What the request asks to do ([`Actions::of_request`]).
    pub(super) actions: Actions,
    /// Modes the request names, in catalog order.
    pub(super) named: Vec<usize>,
    /// The request asks to be told something ([`action::is_question`],
    /// [`intent::is_lookup`]).
    pub(super) question: bool,
    /// What the request rules out ([`Actions::negated_in_request`]).
    pub(super) negated: Actions,
    /// The request asks for a change: an action that changes state, not
    /// under a negation, or an imperative in a verb the classes do not
    /// know ([`action::opens_with_unclassified_verb`]: "star octo/app").
    pub(super) asks_change: bool,
    /// ... and only by such an unknown verb: what it asks to change is a
    /// guess, which a ranking that is unsure does not act on
    /// (`Index::unsure_change`).
    pub(super) change_by_unknown_verb: bool,
    /// Every word of the request sits under a negation or in a subordinate
    /// clause ("before I post the announcement show me ..."): its main
    /// clause, if any, asks for no change.
    pub(super) nothing_asked: bool,
    /// The request states a wish to act and ends by asking a question ("I
    /// want to delete the secret: which secrets does the worker have?"):
    /// which of the two it asks for is unclear, so a tool that changes
    /// state gets no ready call ([`action::wish_then_question`]).
    pub(super) wish_then_question: bool,
    /// Some of the request is negated or put off ("later", "before I
    /// ...", "don't ... yet").
    pub(super) put_off: bool,
    /// The request's main clause has a verb of a changing action class
    /// (not only an imperative in a verb the classes do not know).
    pub(super) asks_change_by_class: bool,
    /// The first word of the request's main clause past a polite opener.
    pub(super) opening: Option<String>,
    /// ... is a verb that changes state in a tool's name ("set the
    /// status", [`action::opens_with_tool_verb`]).
    pub(super) opens_with_tool_verb: bool,
    /// The request has a word of negation ([`intent::negates`]).
    pub(super) negates: bool,
    /// Per mode, the cosine of the request with the mode's closest example
    /// request (NaN without one), once the meaning signal has run.
    pub(super) closest_example: std::cell::RefCell<Vec<f32>>,
    /// The servers the request names ("in notion", "on jira"), and those
    /// it names only to rule them out ("not Slack").
    pub(super) named_servers: super::servers::Named,
    /// The servers whose own words the request writes
    /// ([`ServerWords::worded_in`](super::servers::ServerWords::worded_in)).
    pub(super) worded_servers: Vec<u32>,
    /// The kinds of value the request carries ([`Values::of_request`]).
    pub(super) values: Values,
}

impl Index {
    /// Each mode's signals before weighting. For evaluations and debugging.
    pub fn signals(&self, query: &str) -> Vec<Signals> {
        self.signals_of(&self.query(query)).0
    }

    pub(super) fn query(&self, text: &str) -> Query {
        self.query_of(text, false)
    }

    /// `probe`: a calibration text (its meaning vector is worth keeping).
    pub(super) fn query_of(&self, text: &str, probe: bool) -> Query {
        // The words and meaning of a negated clause still rank (it often
        // names the object: "instead of overwriting config.yaml, show it"),
        // but it asks for no action, and a lookup after it makes the whole
        // request one ("don't delete Alice, just tell me her observations").
        let split = intent::split(text);
        let read = Actions::of_split(text, &split);
        let opening_words = intent::opening_words(&split.asked);
        let terms = query_terms(self.analyzer.analyze(text));
        let ids: Vec<(Option<u32>, f32)> = terms
            .iter()
            .map(|(term, weight)| (self.vocabulary.get(&term.key), *weight))
            .collect();
        let worded_servers = self.servers.worded_in(&ids);
        let meaning = self.semantic.as_ref().and_then(|semantic| {
            semantic.embed_query(
                &words::spelled_out(text),
                probe,
                self.tuning.request_tokens,
                self.tuning.request_adapter > 0.0 && self.ranker != Ranker::Embed,
            )
        });
        Query {
            terms,
            ids,
            meaning,
            actions: read.all,
            main_action: read.main,
            question: action::asks_to_be_told(text, &split.asked),
            negated: read.negated,
            asks_change: read.all.intersects(Actions::CHANGING)
                || action::opens_with_unclassified_verb(&split.asked),
            change_by_unknown_verb: !read.all.intersects(Actions::CHANGING)
                && action::opens_with_unclassified_verb(&split.asked),
            nothing_asked: split.asked.trim().is_empty(),
            wish_then_question: action::wish_then_question(text),
            closest_example: std::cell::RefCell::new(Vec::new()),
            put_off: !split.negated.trim().is_empty(),
            asks_change_by_class: read.all.intersects(Actions::CHANGING),
            opens_with_tool_verb: action::opens_with_tool_verb(&opening_words),
            opening: opening_words.into_iter().next(),
            negates: intent::negates(text),
            named_servers: self.servers.named_in(text),
            worded_servers,
            values: Values::of_request(text),
            named: self.named_in(text),
        }
    }

    /// The signals and the query's evidence: the summed weighted IDF of its
    /// terms that occur in the catalog (the lexical score's ceiling), plus
    /// the weight of terms only the examples know.
    fn signals_of(&self, query: &Query) -> (Vec<Signals>, f32) {
        let mut lexical = vec![0.0f32; self.modes];
        let mut ceiling = 0.0f32;
        // Terms only the examples know add half a unit each: they are
        // evidence too, but have no IDF on the lexical scale, and words that
        // only example phrasings use are mostly generic ("better", "now").
        let mut example_only = 0.0f32;
        for &(id, weight) in &query.ids {
            let Some(id) = id else { continue };
            let most = self.lexical.accumulate(id, weight, &mut lexical);
            ceiling += most;
            if most == 0.0 && self.examples.as_ref().is_some_and(|e| e.knows(id)) {
                example_only += 0.5 * weight;
            }
        }
        if ceiling > 0.0 {
            for score in &mut lexical {
                *score /= ceiling;
            }
        }
        let examples = match &self.examples {
            Some(examples) => {
                let mut scores =
                    examples.scores(&query.ids, self.modes, self.tuning.second_best_share);
                // Another server's examples weigh as `tool_example_weight`
                // says (alone, `--ranker examples`, in full).
                if self.ranker != Ranker::Examples {
                    for (score, _) in scores
                        .iter_mut()
                        .zip(&self.has_tool_examples)
                        .filter(|(_, has)| **has)
                    {
                        *score *= self.tuning.tool_example_weight;
                    }
                }
                scores
            }
            None => vec![0.0; self.modes],
        };
        let phrasing = match &self.phrasing {
            Some(model) => {
                let mut posterior = model.posterior(&query.ids, self.tuning.phrasing_temperature);
                // Alone (`--ranker phrasing`) it still scores every mode.
                let alone = self.ranker == Ranker::Phrasing;
                for ((p, &has), &tool) in posterior
                    .iter_mut()
                    .zip(&self.has_examples)
                    .zip(&self.has_tool_examples)
                {
                    if tool && !alone {
                        *p *= self.tuning.tool_phrasing_weight;
                    } else if !has && !alone {
                        *p = 0.0;
                    }
                }
                posterior
            }
            None => vec![0.0; self.modes],
        };
        // The descriptions' plain cosines, kept for the tool classifier.
        let mut description_cosines = Vec::new();
        // What the examples would likely add for a tool without any.
        let mut lift = 0.0f32;
        let mut estimated = vec![0.0f32; self.modes];
        let semantic = match (&self.semantic, &query.meaning) {
            (Some(index), Some(meaning)) => {
                let floor = self.tuning.semantic_floor;
                // Only for modes without example phrasings (alone, `--ranker
                // embed`, it scores every mode). Modes with examples already
                // have two signals of how they are asked for; a third let
                // them outscore imported tools on requests that were not
                // theirs (built-in modes beside the live catalog: top-1 on
                // its dev half 0.558 with it, 0.646 without).
                //
                // With the full model, `Tuning::builtin_meaning` gives them
                // the model's cosine too, so that built-ins and tools are
                // ranked by the same signal.
                let alone = self.ranker == Ranker::Embed;
                let builtin = self.tuning.builtin_meaning;
                let shared = builtin > 0.0 && index.is_full_model();
                let raw = index.similarities(&meaning.vector);
                description_cosines.clone_from(&raw);
                let blended = match meaning.adapted.as_deref() {
                    None => raw,
                    Some(adapted) => {
                        let share = self.tuning.request_adapter.clamp(0.0, 1.0);
                        raw.into_iter()
                            .zip(index.similarities(adapted))
                            .map(|(raw, adapted)| (1.0 - share) * raw + share * adapted)
                            .collect()
                    }
                };
                let mut cosines: Vec<f32> = blended
                    .into_iter()
                    .zip(&self.has_examples)
                    .map(|(cos, &has)| {
                        if has && !alone && !shared {
                            f32::NAN
                        } else {
                            cos
                        }
                    })
                    .collect();
                // A tool's closest example request moves its cosine up
                // towards that example's (`Tuning::example_meaning`).
                let pull = self.tuning.example_meaning;
                if pull > 0.0 && index.example_count() > 0 {
                    let best = index.example_similarities(
                        &meaning.vector,
                        cosines.len(),
                        self.tuning.example_neighbours,
                        self.tuning.example_shortlist,
                    );
                    *query.closest_example.borrow_mut() = best
                        .iter()
                        .map(|b| b.map_or(f32::NAN, |(_, closest)| closest))
                        .collect();
                    let mut pulls: Vec<(f32, f32)> = Vec::new();
                    for (cos, best) in cosines.iter_mut().zip(best) {
                        if let Some((best, _)) = best
                            && !cos.is_nan()
                        {
                            let gap = (best - *cos).max(0.0);
                            pulls.push((*cos, gap));
                            *cos += pull * gap;
                        }
                    }
                    lift = self.lift_for_tools_without_examples(&mut pulls);
                }
                self.add_soft_match(index, meaning, &mut cosines);
                let scale = |cos: f32| ((cos - floor) / (1.0 - floor)).max(0.0);
                cosines
                    .into_iter()
                    .enumerate()
                    .map(|(mode, cos)| {
                        if cos.is_nan() {
                            0.0
                        } else if self.has_examples.get(mode) == Some(&true) && !alone {
                            builtin * scale(cos)
                        } else if lift > 0.0 && self.has_tool_examples.get(mode) == Some(&false) {
                            if let Some(slot) = estimated.get_mut(mode) {
                                *slot = scale(cos + lift) - scale(cos);
                            }
                            scale(cos + lift)
                        } else {
                            scale(cos)
                        }
                    })
                    .collect()
            }
            _ => vec![0.0; self.modes],
        };
        let trained = self.classifier_probabilities(query, &description_cosines);
        let signals = lexical
            .into_iter()
            .zip(examples)
            .zip(phrasing)
            .zip(semantic)
            .zip(trained)
            .zip(estimated)
            .map(
                |(((((lexical, examples), phrasing), semantic), trained), estimated)| Signals {
                    lexical,
                    examples,
                    phrasing,
                    semantic,
                    trained,
                    estimated,
                },
            )
            .collect();
        (signals, ceiling + example_only)
    }

    /// Per mode, the tool classifier's softmax over the catalog's tools
    /// (`catalog::tool_classifier`), from the model's vector of the
    /// request: a tool with a row by its row, one without by its
    /// description's cosine on the rows' scale; 0 for zenmode's own modes,
    /// and for every mode without the full model (the classifier was
    /// fitted on its vectors) or in a catalog where no tool has a row.
    fn classifier_probabilities(&self, query: &Query, description_cosines: &[f32]) -> Vec<f32> {
        let mut probabilities = vec![0.0f32; self.modes];
        let vector = match (&self.semantic, &query.meaning) {
            (Some(index), Some(meaning)) if index.is_full_model() => &meaning.vector,
            _ => return probabilities,
        };
        if self.tuning.classifier_weight <= 0.0 || self.classifier_rows.iter().all(Option::is_none)
        {
            return probabilities;
        }
        let classifier = crate::catalog::tool_classifier::current();
        // A tool without a row (a server never seen) competes on the rows'
        // scale through its description's cosine, so that the rows of the
        // servers beside it do not take its requests by default.
        let logits: Vec<(usize, f32)> = self
            .classifier_rows
            .iter()
            .enumerate()
            .filter_map(|(mode, row)| match row {
                Some(row) => Some((mode, classifier.score(*row, vector)?)),
                None if self.has_examples.get(mode) == Some(&false) => {
                    let unseen = classifier.unseen()?;
                    let cosine = description_cosines
                        .get(mode)
                        .copied()
                        .filter(|c| c.is_finite())?;
                    let bias = unseen.bias + self.tuning.unseen_classifier_bias;
                    Some((mode, unseen.scale * cosine + bias))
                }
                None => None,
            })
            .collect();
        let top = logits
            .iter()
            .map(|&(_, l)| l)
            .fold(f32::NEG_INFINITY, f32::max);
        // A request that names a server means that server's tools: the
        // rows do not know which server a request means.
        let named = &query.named_servers.servers;
        let unnamed = self.tuning.classifier_unnamed_server;
        for (mode, logit) in logits {
            let other = !named.is_empty()
                && self
                    .servers
                    .of_mode
                    .get(mode)
                    .copied()
                    .flatten()
                    .is_some_and(|server| !named.contains(&server));
            probabilities[mode] = (logit - top).exp() * if other { unnamed } else { 1.0 };
        }
        let total: f32 = probabilities.iter().sum();
        if !(total.is_finite() && total > 0.0) {
            probabilities.fill(0.0);
            return probabilities;
        }
        for probability in &mut probabilities {
            *probability /= total;
        }
        probabilities
    }

    /// How much to raise the cosine of a tool without examples, in a
    /// catalog where others have them: `Tuning::unseen_example_lift` of
    /// the median pull (`pulls`: each shortlisted tool's cosine and the
    /// gap its closest examples closed) of the
    /// `Tuning::unseen_lift_neighbours` tools the pull put closest to the
    /// request. Their examples lift the tools that fit the request; one
    /// without examples that fits as well would have been lifted as much.
    fn lift_for_tools_without_examples(&self, pulls: &mut [(f32, f32)]) -> f32 {
        let share = self.tuning.unseen_example_lift * self.tuning.example_meaning;
        if share <= 0.0 || pulls.is_empty() {
            return 0.0;
        }
        pulls.sort_unstable_by(|a, b| (b.0 + b.1).total_cmp(&(a.0 + a.1)));
        let count = self.tuning.unseen_lift_neighbours.clamp(1, pulls.len());
        let near = &mut pulls[..count];
        near.sort_unstable_by(|a, b| a.1.total_cmp(&b.1));
        share * near[near.len() / 2].1
    }

    /// Blends the word-by-word match into the cosines (NaN: a mode the
    /// signal skips) of the best
    /// [`Tuning::soft_match_candidates`](super::tuning::Tuning::soft_match_candidates)
    /// modes.
    fn add_soft_match(&self, index: &EmbeddingIndex, meaning: &QueryMeaning, cosines: &mut [f32]) {
        let weight = self.tuning.soft_match_weight;
        if weight <= 0.0 || self.tuning.soft_match_candidates == 0 {
            return;
        }
        let mut order: Vec<usize> = (0..cosines.len())
            .filter(|&m| !cosines[m].is_nan())
            .collect();
        let keep = self.tuning.soft_match_candidates.min(order.len());
        if keep < order.len() {
            order.select_nth_unstable_by(keep, |&a, &b| cosines[b].total_cmp(&cosines[a]));
            order.truncate(keep);
        }
        let soft = index.soft_matches(meaning, &order);
        for (mode, soft) in order.into_iter().zip(soft) {
            cosines[mode] = (cosines[mode] + weight * soft) / (1.0 + weight);
        }
    }

    /// Every mode's weighted score, in catalog order, before the request's
    /// action counts and with the example signals at full weight (the
    /// scale the no-fit score is calibrated on).
    pub(super) fn scores(&self, query: &Query) -> Vec<f32> {
        self.scores_with_actions(query).0
    }

    /// [`Index::scores`]; the scores that order the modes: with the
    /// request's action counted ([`Index::action_effect`]), the tool
    /// classifier's share and the lift of tools without examples
    /// ([`Signals::estimated`]) added and, in a mixed catalog, the example
    /// signals at
    /// [`Tuning::mixed_examples_weight`](super::tuning::Tuning::mixed_examples_weight);
    /// and how much of each of those comes from the classifier and the
    /// lift (neither is on the no-fit scale).
    pub(super) fn scores_with_actions(&self, query: &Query) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let tuning = &self.tuning;
        let (signals, evidence) = self.signals_of(query);
        let strength = 1.0 - (-evidence / tuning.evidence_scale.max(f32::MIN_POSITIVE)).exp();
        let examples_weight = if self.mixed {
            tuning.mixed_examples_weight
        } else {
            1.0
        };
        let mut base = Vec::with_capacity(self.modes);
        let mut scores = Vec::with_capacity(self.modes);
        let mut shares = Vec::with_capacity(self.modes);
        for (mode, s) in signals.into_iter().enumerate() {
            let lexical = tuning.lexical_weight * s.lexical;
            let examples = tuning.example_weight * s.examples + tuning.phrasing_weight * s.phrasing;
            // The classifier orders the tools it knows but stays off the
            // no-fit scale: its softmax finds some tool likely for any
            // request, an off-topic one too. So does the lift, a guess.
            let trained = tuning.classifier_weight * s.trained;
            let semantic = tuning.semantic_weight * s.semantic;
            let fair = strength * (lexical + examples_weight * (examples + trained)) + semantic;
            let (factor, bonus) = self.action_effect(query, mode);
            let estimated = tuning.semantic_weight * s.estimated;
            base.push(strength * (lexical + examples) + semantic - estimated);
            scores.push(fair * factor + bonus * strength);
            shares.push((strength * examples_weight * trained + estimated) * factor);
        }
        (base, scores, shares)
    }

    /// How the request's action weighs on a mode's score: more for a tool
    /// that does what the request asks, less for one that does something
    /// else, and much less for a destructive tool the request does not ask
    /// for; more for a mode that takes a value the request carries. Modes
    /// with example phrasings keep their score otherwise: their examples
    /// already say how they are asked for.
    /// Returns a factor and an addend (before the evidence strength).
    fn action_effect(&self, query: &Query, mode: usize) -> (f32, f32) {
        if self.ranker != Ranker::Full {
            return (1.0, 0.0);
        }
        let tool = self.name_actions.get(mode).copied().unwrap_or_default();
        let (mut factor, mut bonus) = (1.0, 0.0);
        if !query.actions.is_empty() && !tool.is_empty() {
            // The main action counts whole, the others half.
            let main = query.main_action.shared(tool) as f32;
            let rest = query.actions.without(query.main_action).shared(tool) as f32;
            let shared = (main + 0.5 * rest).min(2.0);
            if shared > 0.0 {
                factor += self.tuning.verb_match * shared;
                bonus += self.tuning.verb_bonus * shared;
            } else {
                factor -= self.tuning.verb_mismatch;
            }
        }
        let takes = self.takes.get(mode).copied().unwrap_or_default();
        let has_examples = self.has_examples.get(mode).copied().unwrap_or(false);
        // A day or a record's id is a weaker sign than an address or a
        // path: many tools take one as an optional filter or a parent's id.
        let weak = [
            (Values::DATE, self.tuning.date_match),
            (Values::IDENTIFIER, self.tuning.id_match),
        ];
        let values = weak
            .iter()
            .fold(query.values, |values, (kind, _)| values.without(*kind));
        if !values.is_empty() {
            let shared = values.shared(takes).min(2) as f32;
            let weight = if has_examples {
                self.tuning.value_match_examples
            } else {
                self.tuning.value_match
            };
            if shared > 0.0 {
                factor += weight * shared;
            } else {
                factor -= self.tuning.value_mismatch;
            }
        }
        if !has_examples {
            for (kind, weight) in weak {
                if query.values.shared(kind) > 0 && takes.shared(kind) > 0 {
                    factor += weight;
                }
            }
        }
        // A server the request names ("in notion") is the one it means,
        // unless it names it to rule it out ("not Slack");
        // a tool its own server calls deprecated gives way to its successor.
        // Words only its tools use point at it too, for a tool whose
        // examples do not already say how it is asked for.
        if let Some(Some(server)) = self.servers.of_mode.get(mode) {
            let weight = if query.named_servers.servers.contains(server) {
                self.tuning.server_named
            } else if query.named_servers.ruled_out.contains(server) {
                self.tuning.server_ruled_out
            } else if query.worded_servers.contains(server)
                && self.has_tool_examples.get(mode) == Some(&false)
            {
                self.tuning.server_vocabulary
            } else {
                1.0
            };
            factor *= weight;
            bonus *= weight;
        }
        if self.deprecated.get(mode).copied().unwrap_or(false) {
            factor *= self.tuning.deprecated;
        }
        if self.unasked_destructive_in_order(query, mode) {
            factor *= self.tuning.unasked_destructive;
            bonus *= self.tuning.unasked_destructive;
        }
        (factor, bonus)
    }

    /// A mode the safety rules keep from being the first candidate: a
    /// destructive one the request does not ask for, or a tool that changes
    /// state, that the request does not name, for a question or lookup (it
    /// asks to be told, not to have something done), for a request that
    /// rules out what the tool does ("don't commit, just show the diff"),
    /// or for one that asks for no change at all ("the staged diff, please").
    pub(super) fn held(&self, query: &Query, mode: usize) -> bool {
        self.held_by(query, mode, &self.changes_state)
    }

    /// [`Index::held`] as the ranking's order reads it: whether a tool
    /// changes state by the action classes alone, or, for a tool with
    /// example requests, by what they ask for.
    ///
    /// Such a tool's examples show how its change is asked for ("open a new
    /// issue", "tack a bullet onto the notes"), in verbs the action classes
    /// may read otherwise: it is held for a question or lookup, a change
    /// the request rules out or puts off, not for a verb they do not know.
    pub(super) fn held_in_order(&self, query: &Query, mode: usize) -> bool {
        if self.has_tool_examples.get(mode).copied().unwrap_or(false) {
            let changes = self.examples_change.get(mode).copied().unwrap_or(false);
            return self.unasked_destructive(query, mode)
                || (changes && !query.named.contains(&mode) && self.not_asked_for(query, mode));
        }
        self.unasked_destructive_in_order(query, mode)
            || self.held_as_change(query, mode, &self.changes_state_by_class)
    }

    /// Whether `mode`, ranked with `confidence` beside the no-fit share
    /// `no_fit`, gets no ready call: the rules of [`Index::held`], and
    /// more. A tool that changes state (or may destroy) gets one only when
    /// the ranking is clear (confidence at least
    /// [`ReplyThresholds::low_confidence`](super::ReplyThresholds::low_confidence), above the
    /// no-fit share) and the request's main clause asks for a change. A
    /// tool with example requests that the ranking is clear about is asked
    /// for by a request that reads like them, whatever its verb, unless it
    /// asks a question, rules the change out or puts it off.
    pub(super) fn held_for_ready(
        &self,
        query: &Query,
        mode: usize,
        confidence: f32,
        no_fit: f32,
    ) -> bool {
        if query.named.contains(&mode) {
            return self.held(query, mode);
        }
        let changes = self.changes_state.get(mode).copied().unwrap_or(false)
            || self.destructive.get(mode).copied().unwrap_or(false);
        let clear = confidence >= self.tuning.reply.low_confidence && confidence > no_fit;
        if changes && (!clear || query.nothing_asked || query.wish_then_question) {
            return true;
        }
        if self.has_tool_examples.get(mode).copied().unwrap_or(false) {
            // Its examples' opening verbs ("open", "file", "tack") ask for
            // it as much as the action classes' do.
            let opens_like_examples = query.opening.as_ref().is_some_and(|word| {
                self.example_openers
                    .get(mode)
                    .is_some_and(|openers| openers.binary_search(word).is_ok())
            });
            let asked = query.asks_change_by_class || (opens_like_examples && !query.put_off);
            // And it reads like one of them: "merge these two sentences"
            // shares a verb with "merge PR 42", not much else.
            let closest = query
                .closest_example
                .borrow()
                .get(mode)
                .copied()
                .unwrap_or(f32::NAN);
            let like_examples = closest.is_nan() || closest >= self.tuning.example_ready_cosine;
            return self.unasked_destructive(query, mode)
                || (changes && (self.not_asked_for(query, mode) || !asked || !like_examples));
        }
        // Without examples, only the action classes say what the request
        // asks of the tool: a verb they read as another change ("set an
        // alarm" beside a tool that creates events), or a request ruling
        // out what they cannot read ("don't click anything, just take a
        // screenshot") may not ask for its change: recommended, no ready call.
        if changes && !query.named.contains(&mode) && self.may_ask_another_change(query, mode) {
            return true;
        }
        self.held(query, mode)
    }

    /// Whether the request asks for a change other than `mode`'s by the
    /// action classes (an opening verb of tools' names reads as an update),
    /// or, when they cannot say what `mode` changes, negates something.
    fn may_ask_another_change(&self, query: &Query, mode: usize) -> bool {
        let does = self
            .actions
            .get(mode)
            .copied()
            .unwrap_or_default()
            .intersection(Actions::CHANGING);
        if does.is_empty() {
            return query.negates && !query.asks_change_by_class;
        }
        let asked = if query.opens_with_tool_verb {
            query.actions.union(Actions::UPDATE)
        } else {
            query.actions
        };
        asked.intersects(Actions::CHANGING) && !asked.intersects(does)
    }

    /// A question or lookup, a request that rules out what `mode` does, or
    /// one whose every word is negated or put off.
    fn not_asked_for(&self, query: &Query, mode: usize) -> bool {
        query.question || query.nothing_asked || self.negated_for(query, mode)
    }

    fn held_by(&self, query: &Query, mode: usize, changing: &[bool]) -> bool {
        self.unasked_destructive(query, mode) || self.held_as_change(query, mode, changing)
    }

    /// A tool that changes state (by `changing`) that the request does not
    /// name, for a question, a request asking no change, or one that rules
    /// out what it does.
    fn held_as_change(&self, query: &Query, mode: usize, changing: &[bool]) -> bool {
        changing.get(mode).copied().unwrap_or(false)
            && !query.named.contains(&mode)
            && (query.question || !query.asks_change || self.negated_for(query, mode))
    }

    /// [`Index::unasked_destructive`] as the ranking's order reads it.
    /// Servers mark most tools that are not read-only destructive (Jira's
    /// `add_worklog`, `transition_issue`), so for another server's tool
    /// the order reads the name's verb alone; the ready-call rules still
    /// read the annotations.
    fn unasked_destructive_in_order(&self, query: &Query, mode: usize) -> bool {
        if matches!(self.servers.of_mode.get(mode), Some(Some(_))) {
            self.unasked_destructive_by_name(query, mode)
        } else {
            self.unasked_destructive(query, mode)
        }
    }

    /// Whether the request rules out what `mode` does ("don't commit").
    fn negated_for(&self, query: &Query, mode: usize) -> bool {
        let does = self.actions.get(mode).copied().unwrap_or_default();
        query.negated.intersects(if does.is_empty() {
            Actions::CHANGING
        } else {
            does
        })
    }

    /// A destructive mode that the request neither names nor asks for.
    ///
    /// A tool with example requests is destructive by its name's verb
    /// only: servers mark every tool that is not read-only destructive
    /// (Notion's search, Playwright's click), and its examples say what it
    /// is asked for; the ready-call rules still read its annotations
    /// ([`Index::changes_state`]).
    fn unasked_destructive(&self, query: &Query, mode: usize) -> bool {
        let destructive = if self.has_tool_examples.get(mode).copied().unwrap_or(false) {
            &self.destructive_by_name
        } else {
            &self.destructive
        };
        destructive.get(mode).copied().unwrap_or(false)
            && !query.named.contains(&mode)
            && !query
                .actions
                .licenses(self.actions.get(mode).copied().unwrap_or_default())
    }

    /// [`Index::unasked_destructive`] by the name's verb alone.
    fn unasked_destructive_by_name(&self, query: &Query, mode: usize) -> bool {
        self.destructive_by_name.get(mode).copied().unwrap_or(false)
            && !query.named.contains(&mode)
            && !query
                .actions
                .licenses(self.actions.get(mode).copied().unwrap_or_default())
    }

    /// The modes whose name or alias the request writes as a word of its
    /// own (`git_status`, `memory__create_entities`).
    fn named_in(&self, text: &str) -> Vec<usize> {
        if self.identifiers.is_empty() {
            return Vec::new();
        }
        let mut named: Vec<usize> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map(|token| token.trim_matches(|c: char| c == '.' || c == '-'))
            .filter(|token| !token.is_empty())
            .filter_map(|token| self.identifiers.get(&token.to_lowercase()))
            .flatten()
            .copied()
            .collect();
        named.sort_unstable();
        named.dedup();
        named
    }
}
