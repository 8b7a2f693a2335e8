//! The [`Index`] type, and assembling it from a catalog.
//!
//! An index holds, for one catalog, everything a request is ranked against:
//! the interned vocabulary and the analyzer, each signal's precomputed part
//! (BM25 postings, example vectors, the phrasing model, the meaning
//! vectors), and per mode what the action and value rules need (what it
//! does, which values it takes, whether it is destructive or changes
//! state, the identifiers that name it). Assembling it is one pass over the
//! catalog; the public ways to build one (which encoder, the calibrated
//! no-fit score, the model's index on a thread) are in `construct.rs`, and
//! scoring a request with it in `scoring.rs`.

use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap as HashMap;

use super::{
    servers::ServerWords,
    signals::{
        action::Actions,
        bm25::{self, Bm25F, Document, Field},
        embedding::{self, EmbeddingIndex},
        examples::ExampleIndex,
        intent,
        phrasing::{PhrasingCounts, PhrasingModel},
        values::Values,
    },
    text::{
        analyze::{Analyzer, Options, TermKind, Vocabulary},
        words,
    },
    tuning::{PLAIN_FIELDS, Ranker, Tuning},
};
use crate::catalog::{Catalog, Manifest};

/// Texts up to this long are analyzed once per index build, however often
/// they occur.
const MEMO_MAX_BYTES: usize = 64;

/// The precomputed index over a catalog.
#[derive(Debug)]
pub struct Index {
    pub(super) ranker: Ranker,
    pub(super) tuning: Tuning,
    pub(super) analyzer: Analyzer,
    /// Every term of the catalog, interned; the parts below are keyed by id.
    pub(super) vocabulary: Vocabulary,
    pub(super) lexical: Bm25F,
    pub(super) examples: Option<ExampleIndex>,
    pub(super) phrasing: Option<PhrasingModel>,
    pub(super) semantic: Option<EmbeddingIndex>,
    /// Per mode: does it have example phrasings? The phrasing model only
    /// counts for those (see [`Tuning::phrasing_weight`]).
    pub(super) has_examples: Vec<bool>,
    /// Per mode: another server's tool with example requests
    /// ([`Manifest::tool_examples`]); they feed the example signal and,
    /// each as its own vector, the meaning signal.
    pub(super) has_tool_examples: Vec<bool>,
    /// Per mode: its row in the tool classifier, for another server's tool
    /// fitted on its shipped examples ([`Manifest::classifier_row`]).
    pub(super) classifier_rows: Vec<Option<u32>>,
    /// Per tool with example requests: do most of them ask for a change
    /// ([`asks_for_change`])? How the ranking's order reads whether such
    /// a tool changes state: its examples say what it is asked for better
    /// than annotations that call a search destructive. Ready calls still
    /// read [`Index::changes_state`].
    pub(super) examples_change: Vec<bool>,
    /// Per tool with example requests: the first words of its examples'
    /// main clauses (past a polite opener), sorted: a request that opens
    /// the same way asks for what they ask.
    pub(super) example_openers: Vec<Vec<String>>,
    /// Per mode: a name that deletes, removes, resets, drops or
    /// overwrites ([`crate::catalog::named_destructive`]): what makes a
    /// tool with examples destructive for the ranking's order.
    pub(super) destructive_by_name: Vec<bool>,
    /// Each mode's server and the words that point at one
    /// ([`ServerWords`]).
    pub(super) servers: ServerWords,
    /// Per mode: its description says it is deprecated.
    pub(super) deprecated: Vec<bool>,
    /// Per mode without example phrasings: what it does, from its name and
    /// description ([`Actions::of_tool`]); empty for the others.
    pub(super) actions: Vec<Actions>,
    /// Per mode without example phrasings: the actions its name alone
    /// names (what the ranking favours; the description's first word,
    /// often a generic "Returns" or "Gets", only widens what a destructive
    /// tool's request may ask for).
    pub(super) name_actions: Vec<Actions>,
    /// Per mode: the kinds of value its parameters take
    /// ([`Values::of_parameters`]). Built-in modes count too: a review
    /// request naming `auth.py` stays with the mode that takes files.
    pub(super) takes: Vec<Values>,
    /// Per mode: may it delete or overwrite ([`Manifest::destructive`])?
    pub(super) destructive: Vec<bool>,
    /// Per mode: does it change state ([`changes_state`])? A question is
    /// not offered one first.
    pub(super) changes_state: Vec<bool>,
    /// Per mode: does it change state by the action classes alone
    /// (`changes_state_with(.., false)`)? What orders a ranking; the
    /// ready calls read [`Index::changes_state`].
    pub(super) changes_state_by_class: Vec<bool>,
    /// Names and aliases that look like identifiers (`git_status`,
    /// `memory__create_entities`, `get-sum`), lower-cased, to the modes
    /// they name: a request that writes one asks for that mode.
    pub(super) identifiers: HashMap<String, Vec<usize>>,
    /// Some modes have example phrasings and some do not
    /// ([`Tuning::mixed_examples_weight`]).
    pub(super) mixed: bool,
    /// The score of the "no mode fits" candidate: [`Tuning::no_fit_score`],
    /// or calibrated per catalog when the meaning signal runs.
    pub(super) no_fit_score: f32,
    pub(super) modes: usize,
    /// With the full model loaded (fused ranker only): the same catalog
    /// indexed with the model as the meaning signal, asked when this
    /// index's own ranking is unsure ([`Tuning::ask_model_below`]). Empty
    /// while [`Index::build_model_later`]'s thread is still encoding the
    /// tools; the table answers alone until then.
    pub(super) model: Option<Arc<OnceLock<Index>>>,
}

impl Index {
    /// One index, with `encoder` (if any) as the meaning signal and the
    /// no-fit score at [`Tuning::no_fit_score`] (`construct.rs` calibrates it).
    pub(super) fn assemble(
        catalog: &Catalog,
        ranker: Ranker,
        tuning: Tuning,
        encoder: Option<embedding::Encoder>,
    ) -> Self {
        let full = ranker != Ranker::Bm25;
        // Modes with example phrasings are routed well without the meaning
        // signal; the table is only parsed when some mode has none
        // (imported tools). Such catalogs also drop lone numbers.
        let has_examples: Vec<bool> = catalog
            .modes()
            .iter()
            .map(|m| !m.manifest().examples.is_empty())
            .collect();
        let needs_meaning = has_examples.contains(&false);
        let tuning = match encoder {
            Some(encoder) if encoder.is_full_model() => ranker.tuning(
                tuning
                    .for_full_model()
                    .overridden_by_env(crate::platform::settings::SELECT_MODEL_TUNING),
            ),
            _ => ranker.tuning(tuning),
        };
        let analyzer = Analyzer::new(if full {
            Options {
                numbers_alone: tuning.analysis.numbers_alone && !needs_meaning,
                ..tuning.analysis
            }
        } else {
            Options::PLAIN
        });
        // About one distinct term per 8 bytes of text in real catalogs.
        let text_bytes: usize = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().description.len() + m.manifest().summary.len())
            .sum();
        let mut vocabulary = Vocabulary::with_capacity(text_bytes / 8);
        let mut cache = HashMap::default();
        let mut memo: HashMap<&str, Vec<(u32, TermKind)>> = HashMap::default();
        let mut scratch: Vec<(u32, TermKind)> = Vec::new();
        let mut ids: Vec<u32> = Vec::new();
        let mut documents = Vec::with_capacity(catalog.len());
        let mut example_terms: Vec<(usize, Vec<(u32, TermKind)>)> = Vec::new();
        let mut phrasing = PhrasingCounts::new(catalog.len());
        // Terms of the fields written to say what a mode is for, by id.
        let mut intent_terms: Vec<bool> = Vec::new();
        // Per mode, the words of what it is and does (not its parameters).
        let mut mode_words: Vec<Vec<u32>> = Vec::with_capacity(catalog.len());
        for (mode_index, mode) in catalog.modes().iter().enumerate() {
            let manifest = mode.manifest();
            let mut document = Document::default();
            let mut own_words: Vec<u32> = Vec::new();
            for (field, text) in field_texts(manifest) {
                let field = if full { field } else { Field::Description };
                scratch.clear();
                // Short texts (parameter names, titles equal to names) repeat
                // across a big catalog: analyze each once.
                match memo.get(text) {
                    Some(terms) => scratch.extend_from_slice(terms),
                    None => {
                        let compounds = field != Field::Description;
                        analyzer.for_each_term(text, compounds, &mut cache, &mut |key, kind| {
                            scratch.push((vocabulary.intern(key), kind));
                        });
                        if text.len() <= MEMO_MAX_BYTES {
                            memo.insert(text, scratch.clone());
                        }
                    }
                }
                ids.clear();
                ids.extend(scratch.iter().map(|&(id, _)| id));
                if field != Field::Parameters {
                    own_words.extend(
                        scratch
                            .iter()
                            .filter(|(_, kind)| *kind == TermKind::Word)
                            .map(|&(id, _)| id),
                    );
                }
                if !matches!(field, Field::Description | Field::Parameters) {
                    intent_terms.resize(vocabulary.len(), false);
                    for &id in &ids {
                        intent_terms[id as usize] = true;
                    }
                    phrasing.add(mode_index, &ids, tuning.intent_text_weight);
                } else if field == Field::Description && tuning.description_phrasing_weight > 0.0 {
                    phrasing.add(mode_index, &ids, tuning.description_phrasing_weight);
                }
                add_terms(document.field_mut(field), &scratch);
            }
            documents.push(document);
            own_words.sort_unstable();
            own_words.dedup();
            mode_words.push(own_words);
            if full {
                for example in &manifest.examples {
                    let mut terms = Vec::new();
                    // No glued compounds: across thousands of phrasings they
                    // are mostly non-words and cost half the build.
                    analyzer.for_each_term(example, false, &mut cache, &mut |key, kind| {
                        terms.push((vocabulary.intern(key), kind));
                    });
                    ids.clear();
                    ids.extend(terms.iter().map(|&(id, _)| id));
                    phrasing.add(mode_index, &ids, 1.0);
                    example_terms.push((mode_index, terms));
                }
                if manifest.examples.is_empty() && tuning.tool_example_weight > 0.0 {
                    for example in manifest.tool_examples.iter() {
                        let mut terms = Vec::new();
                        analyzer.for_each_term(example, false, &mut cache, &mut |key, kind| {
                            terms.push((vocabulary.intern(key), kind));
                        });
                        if tuning.tool_phrasing_weight > 0.0 {
                            ids.clear();
                            ids.extend(terms.iter().map(|&(id, _)| id));
                            phrasing.add(mode_index, &ids, 1.0);
                        }
                        example_terms.push((mode_index, terms));
                    }
                }
            }
        }
        let has_tool_examples: Vec<bool> = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().examples.is_empty() && !m.manifest().tool_examples.is_empty())
            .collect();
        let classifier_rows: Vec<Option<u32>> = catalog
            .modes()
            .iter()
            .map(|m| m.manifest())
            .map(|m| m.classifier_row.filter(|_| m.examples.is_empty()))
            .collect();
        let terms = vocabulary.len();
        let lexical = Bm25F::build(
            &documents,
            if full { &tuning.fields } else { &PLAIN_FIELDS },
            terms,
        );
        let examples = (!example_terms.is_empty()).then(|| {
            let is_intent = |id: u32| intent_terms.get(id as usize).copied().unwrap_or(false);
            ExampleIndex::build(&example_terms, terms, &is_intent, tuning.topic_weight)
        });
        let phrasing =
            full.then(|| PhrasingModel::build(phrasing, terms, tuning.phrasing_smoothing));
        let semantic = encoder.map(|encoder| {
            let parameters = encoder.is_full_model() && tuning.meaning_parameters;
            let texts: Vec<String> = catalog
                .modes()
                .iter()
                .map(|m| meaning_text(m.manifest(), parameters))
                .collect();
            let examples: Vec<(usize, &str)> = if tuning.example_meaning > 0.0 {
                catalog
                    .modes()
                    .iter()
                    .enumerate()
                    .filter(|(mode, _)| has_tool_examples[*mode])
                    .flat_map(|(mode, m)| {
                        m.manifest()
                            .tool_examples
                            .iter()
                            .map(move |e| (mode, e.as_str()))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            EmbeddingIndex::build_with_examples(
                encoder,
                texts.iter().map(String::as_str),
                &examples,
            )
        });
        let actions = catalog
            .modes()
            .iter()
            .zip(&has_examples)
            .map(|(m, &has)| {
                let manifest = m.manifest();
                if has {
                    Actions::NONE
                } else {
                    Actions::of_tool(
                        manifest.upstream_tool.as_deref().unwrap_or(&manifest.name),
                        &manifest.description,
                    )
                }
            })
            .collect();
        let destructive = catalog
            .modes()
            .iter()
            .map(|m| m.manifest().destructive())
            .collect();
        let name_actions: Vec<Actions> = catalog
            .modes()
            .iter()
            .zip(&has_examples)
            .map(|(m, &has)| {
                let manifest = m.manifest();
                if has {
                    Actions::NONE
                } else {
                    Actions::of_tool(
                        manifest.upstream_tool.as_deref().unwrap_or(&manifest.name),
                        "",
                    )
                }
            })
            .collect();
        let takes = catalog
            .modes()
            .iter()
            .map(|m| Values::of_tool(m.name(), m.manifest().properties()))
            .collect();
        let changes_state = catalog
            .modes()
            .iter()
            .map(|m| changes_state(m.manifest()))
            .collect();
        let changes_state_by_class = catalog
            .modes()
            .iter()
            .map(|m| changes_state_with(m.manifest(), false))
            .collect();
        let examples_change = catalog
            .modes()
            .iter()
            .zip(&has_tool_examples)
            .map(|(m, &has)| {
                let examples = &m.manifest().tool_examples;
                has && examples.iter().filter(|e| asks_for_change(e)).count() * 2 >= examples.len()
            })
            .collect();
        let example_openers = catalog
            .modes()
            .iter()
            .zip(&has_tool_examples)
            .map(|(m, &has)| {
                if !has {
                    return Vec::new();
                }
                let mut openers: Vec<String> = m
                    .manifest()
                    .tool_examples
                    .iter()
                    .filter(|e| asks_for_change(e))
                    .filter_map(|e| intent::opening_word(&intent::split(e).asked))
                    .collect();
                openers.sort_unstable();
                openers.dedup();
                openers
            })
            .collect();
        let destructive_by_name = catalog
            .modes()
            .iter()
            .map(|m| {
                let manifest = m.manifest();
                crate::catalog::named_destructive(
                    manifest.upstream_tool.as_deref().unwrap_or(&manifest.name),
                )
            })
            .collect();
        let servers = ServerWords::of(catalog, &mode_words);
        let deprecated = catalog
            .modes()
            .iter()
            .map(|m| {
                let description = &m.manifest().description;
                description
                    .get(..200.min(description.len()))
                    .is_some_and(|start| {
                        start.contains("DEPRECATED")
                            || start.to_lowercase().starts_with("deprecated")
                    })
            })
            .collect();
        Index {
            example_openers,
            servers,
            deprecated,
            examples_change,
            destructive_by_name,
            changes_state,
            changes_state_by_class,
            ranker,
            tuning,
            analyzer,
            vocabulary,
            lexical,
            examples,
            phrasing,
            semantic,
            actions,
            name_actions,
            takes,
            destructive,
            identifiers: identifiers(catalog),
            mixed: has_examples.contains(&true) && has_examples.contains(&false),
            has_examples,
            has_tool_examples,
            classifier_rows,
            no_fit_score: tuning.no_fit_score,
            modes: catalog.len(),
            model: None,
        }
    }

    pub fn ranker(&self) -> Ranker {
        self.ranker
    }

    /// Whether this index ranks by meaning too (some mode has no example
    /// phrasings, so the static embedding table was loaded).
    pub fn uses_meaning(&self) -> bool {
        self.semantic.is_some()
    }

    /// The score below which the "no mode fits" candidate wins.
    pub fn no_fit_score(&self) -> f32 {
        self.no_fit_score
    }
}

/// Whether calling a mode changes state: its server's `readOnlyHint` when
/// it gives one (a server knows its tools better than their names say:
/// `star_repository` changes state, `trigger-long-running-operation` does
/// not), else a destructive tool or one whose name's main action creates,
/// updates, writes, moves, sends, commits ([`Actions::main_of_tool`]).
/// zenmode's own modes (those with example phrasings) never do. The
/// safety rules and `zenmode eval` read it here.
pub fn changes_state(manifest: &Manifest) -> bool {
    changes_state_with(manifest, true)
}

/// [`changes_state`], with (`true`) or without the verbs read in tool
/// names only ([`Actions::main_of_tool_with`]).
fn changes_state_with(manifest: &Manifest, tool_verbs: bool) -> bool {
    if !manifest.examples.is_empty() {
        return false;
    }
    if let Some(read_only) = manifest
        .annotations
        .get("readOnlyHint")
        .and_then(serde_json::Value::as_bool)
    {
        return !read_only;
    }
    let name = manifest.upstream_tool.as_deref().unwrap_or(&manifest.name);
    // With the tool-name verbs, a tool that runs commands changes state.
    let changing = if tool_verbs {
        Actions::CHANGING.union(Actions::RUN)
    } else {
        Actions::CHANGING
    };
    manifest.destructive()
        || Actions::main_of_tool_with(name, &manifest.description, tool_verbs).intersects(changing)
}

/// Whether a tool is known to leave state alone: annotated read-only, or,
/// without the annotation, read by [`changes_state`] as not changing and
/// named with a verb that reads (a name that names no action is not known
/// to). What a script may call when writes are not allowed.
pub fn leaves_state(manifest: &Manifest) -> bool {
    if let Some(read_only) = manifest
        .annotations
        .get("readOnlyHint")
        .and_then(serde_json::Value::as_bool)
    {
        return read_only;
    }
    let name = manifest.upstream_tool.as_deref().unwrap_or(&manifest.name);
    !changes_state(manifest) && !Actions::main_of_tool(name, &manifest.description).is_empty()
}

/// Whether a request asks for a change, read as a request is: an action
/// that changes state outside a negation or a subordinate clause, or an
/// imperative in a verb the action classes do not know, and no question.
pub(super) fn asks_for_change(text: &str) -> bool {
    use super::signals::action;
    let split = intent::split(text);
    let read = Actions::of_split(text, &split);
    let question = action::asks_to_be_told(text, &split.asked);
    !question
        && (read.all.intersects(Actions::CHANGING)
            || action::opens_with_unclassified_verb(&split.asked))
}

/// Names and aliases of a catalog that look like identifiers (with `_`,
/// `-` or a camelCase hump: a plain word such as `debug` or `fetch` is
/// ranked like any other word), lower-cased, and for a server's tool its
/// name without the server's prefix too.
fn identifiers(catalog: &Catalog) -> HashMap<String, Vec<usize>> {
    let looks_like_identifier = |name: &str| {
        name.contains(['_', '-'])
            || name
                .chars()
                .zip(name.chars().skip(1))
                .any(|(a, b)| a.is_lowercase() && b.is_uppercase())
    };
    let mut map: HashMap<String, Vec<usize>> = HashMap::default();
    for (mode_index, mode) in catalog.modes().iter().enumerate() {
        let manifest = mode.manifest();
        let own = manifest
            .name
            .split_once(crate::catalog::gateway_modes::SEPARATOR)
            .map(|(_, tool)| tool);
        let names = std::iter::once(manifest.name.as_str())
            .chain(manifest.upstream_tool.as_deref())
            .chain(own)
            .chain(manifest.aliases.iter().map(String::as_str));
        for name in names {
            if looks_like_identifier(name) {
                let entry = map.entry(name.to_lowercase()).or_default();
                if !entry.contains(&mode_index) {
                    entry.push(mode_index);
                }
            }
        }
    }
    map
}

/// The texts the full model embeds for `catalog`'s modes, as an index
/// built with the default tuning embeds them (`benches/model.rs` measures
/// the model on them).
pub fn model_texts(catalog: &Catalog) -> Vec<String> {
    catalog
        .modes()
        .iter()
        .map(|m| meaning_text(m.manifest(), Tuning::DEFAULT.meaning_parameters))
        .collect()
}

/// What the meaning signal embeds for a mode: its name as words, then what
/// it does (the shape the distillation corpus used).
///
/// `parameters`: then its parameter names as words, which say what the
/// tool works on (a path, a repository, an entity).
fn meaning_text(manifest: &Manifest, parameters: bool) -> String {
    let name = words::split_identifier(&manifest.name);
    let about = if manifest.description.is_empty() {
        &manifest.summary
    } else {
        &manifest.description
    };
    let mut text = format!("{name}: {about}");
    if let Some(properties) = manifest
        .properties()
        .filter(|p| parameters && !p.is_empty())
    {
        let names: Vec<String> = properties
            .keys()
            .map(|p| words::split_identifier(p))
            .collect();
        text.push_str(" (parameters: ");
        text.push_str(&names.join(", "));
        text.push(')');
    }
    text
}

/// The text of each field of a manifest.
fn field_texts(manifest: &Manifest) -> Vec<(Field, &str)> {
    let mut texts = vec![
        (Field::Name, manifest.name.as_str()),
        (Field::Title, manifest.title.as_str()),
        (Field::Summary, manifest.summary.as_str()),
        (Field::Description, manifest.description.as_str()),
    ];
    texts.extend(
        manifest
            .keywords
            .iter()
            .map(|k| (Field::Keywords, k.as_str())),
    );
    if let Some(properties) = manifest.properties() {
        texts.extend(properties.keys().map(|p| (Field::Parameters, p.as_str())));
    }
    texts
}

/// Adds terms to a field; only words count toward its length.
fn add_terms(field: &mut bm25::FieldTerms, terms: &[(u32, TermKind)]) {
    for &(id, kind) in terms {
        field.occurrences.push(id);
        if kind == TermKind::Word {
            field.length += 1.0;
        }
    }
}
