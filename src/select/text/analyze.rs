//! Turns text into index terms: stems, phrase bigrams, compounds and concepts.
//!
//! The same analyzer runs over the manifests (when the index is built) and
//! over each query, so both sides always agree on what a term is:
//!
//! - **word**: the English (Snowball) stem of a content word: "crashes",
//!   "crashed" and "crashing" are all `crash`;
//! - **surface**: the word exactly as written (`=branches`), so the exact form
//!   earns a bonus over a mere inflection: in tool catalogs the plural is
//!   signal ("branches" is `list_branches`, "branch" is `create_branch`);
//! - **phrase**: two adjacent words of one run, as stems joined by a space
//!   (`unit test`, `call graph`): much rarer than either word, so a matching
//!   phrase weighs a lot;
//! - **compound**: the same two words glued (`precommit`, `codereview`), so
//!   "pre-commit", "pre commit" and "precommit" meet whichever way either side
//!   spells it;
//! - **concept**: the synonym group of a word or phrase (`~defect` for "bug",
//!   "crash", "stack trace"...), see [`super::synonyms`].

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap as HashMap;

use super::{synonyms, words};

/// Longest word the stemmer sees; longer tokens (hashes, base64) stay as they are.
const MAX_STEMMED_CHARS: usize = 40;

/// What a term is; decides how much a query term weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TermKind {
    Word,
    Surface,
    Phrase,
    Compound,
    Concept,
}

impl TermKind {
    /// Query-side weight. Concepts are discounted so an exact word always
    /// beats a synonym; phrases and compounds are rare, so their IDF already
    /// makes a match count without an extra boost.
    pub fn weight(self) -> f32 {
        match self {
            TermKind::Word | TermKind::Phrase => 1.0,
            TermKind::Surface => 1.0,
            TermKind::Compound => 0.5,
            TermKind::Concept => 0.4,
        }
    }
}

/// One analyzed term.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The index key: a stem, "=word", "stem stem", a glued stem or "~concept".
    pub key: String,
    pub kind: TermKind,
    /// The words as written (lower-cased), shown in the select reply's reason.
    pub surface: String,
}

/// Which normalizations run. The plain BM25 baseline turns them all off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub stem: bool,
    pub phrases: bool,
    pub synonyms: bool,
    /// Whether a number counts as a term on its own, or only inside a
    /// phrase ("http 500"). In imported tool text numbers are values or
    /// version tags ("diabetes type 2", `Travel_1_Search`), so "what is
    /// 2*3" or "1 ticket" would match them; the built-in modes' example
    /// phrasings use numbers in context, and keep them.
    pub numbers_alone: bool,
}

impl Options {
    pub const FULL: Options = Options {
        stem: true,
        phrases: true,
        synonyms: true,
        numbers_alone: true,
    };
    pub const PLAIN: Options = Options {
        stem: false,
        phrases: false,
        synonyms: false,
        numbers_alone: true,
    };
}

pub struct Analyzer {
    options: Options,
    stemmer: Stemmer,
    /// Word or phrase key -> concept keys ("~defect").
    concepts: HashMap<String, Vec<String>>,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("options", &self.options)
            .field("concept_keys", &self.concepts.len())
            .finish()
    }
}

impl Analyzer {
    pub fn new(options: Options) -> Self {
        let mut analyzer = Analyzer {
            options,
            stemmer: Stemmer::create(Algorithm::English),
            concepts: HashMap::default(),
        };
        if options.synonyms {
            analyzer.concepts = analyzer.concept_table();
        }
        analyzer
    }

    pub fn options(&self) -> Options {
        self.options
    }

    /// Stems the table's members with this analyzer, so lookups match exactly
    /// what [`Analyzer::analyze`] produces.
    fn concept_table(&self) -> HashMap<String, Vec<String>> {
        let mut table: HashMap<String, Vec<String>> = HashMap::default();
        for (concept, members) in synonyms::GROUPS {
            let concept_key = format!("~{concept}");
            for member in *members {
                let stems: Vec<String> = words::words(member)
                    .iter()
                    .map(|w| self.stem_word(w))
                    .collect();
                let entry = table.entry(stems.join(" ")).or_default();
                if !entry.contains(&concept_key) {
                    entry.push(concept_key.clone());
                }
            }
        }
        table
    }

    fn stem_word(&self, word: &str) -> String {
        if !self.options.stem
            || word.chars().count() > MAX_STEMMED_CHARS
            || word.chars().all(|c| c.is_ascii_digit())
        {
            return word.to_owned();
        }
        self.stemmer.stem(word).into_owned()
    }

    /// Analyzes a query: every term, with the words as written.
    pub fn analyze(&self, text: &str) -> Vec<Term> {
        let mut terms = Vec::new();
        self.walk(
            text,
            &mut |word, out| out.push_str(&self.stem_word(word)),
            true,
            true,
            &mut |key, kind, surface| {
                terms.push(Term {
                    key: key.to_owned(),
                    kind,
                    surface: surface.to_owned(),
                })
            },
        );
        terms
    }

    /// Analyzes text for the index, calling `emit` with each term's key and
    /// kind. Keys are borrowed, so the caller allocates only for terms it has
    /// not seen; stems are cached in `cache`, since an index over a thousand
    /// tools stems the same few thousand words again and again.
    ///
    /// `compounds: false` skips glued compounds: in long prose nearly every
    /// word pair glues into a unique non-word, which costs build time and
    /// never matches. Names and keywords keep them ("pre-commit").
    pub fn for_each_term(
        &self,
        text: &str,
        compounds: bool,
        cache: &mut HashMap<String, String>,
        emit: &mut dyn FnMut(&str, TermKind),
    ) {
        let mut stem = |word: &str, out: &mut String| {
            if let Some(stem) = cache.get(word) {
                out.push_str(stem);
                return;
            }
            let stem = self.stem_word(word);
            out.push_str(&stem);
            cache.insert(word.to_owned(), stem);
        };
        self.walk(text, &mut stem, false, compounds, &mut |key, kind, _| {
            emit(key, kind)
        });
    }

    /// The one analysis both paths share. `stem` appends a word's stem to
    /// the buffer it is given (one buffer per run, so no allocation per
    /// word). `surfaces` formats the display text of phrases (queries only);
    /// words are always passed as written.
    fn walk(
        &self,
        text: &str,
        stem: &mut dyn FnMut(&str, &mut String),
        surfaces: bool,
        compounds: bool,
        emit: &mut dyn FnMut(&str, TermKind, &str),
    ) {
        let mut key = String::new();
        let mut surface = String::new();
        let mut glued = String::new();
        let mut compound = String::new();
        // The run's stems, back to back, and where each one ends.
        let mut stems = String::new();
        let mut ends: Vec<usize> = Vec::new();
        for run in words::runs(text) {
            stems.clear();
            ends.clear();
            for word in &run {
                stem(word, &mut stems);
                ends.push(stems.len());
            }
            let stem_of = |i: usize| &stems[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
            for (i, word) in run.iter().enumerate() {
                let word_stem = stem_of(i);
                if !self.options.numbers_alone && word.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                self.emit_concepts(word_stem, word, emit);
                emit(word_stem, TermKind::Word, word);
                if self.options.stem {
                    key.clear();
                    key.push('=');
                    key.push_str(word);
                    emit(&key, TermKind::Surface, word);
                }
            }
            if !self.options.phrases {
                continue;
            }
            for pair in 0..run.len().saturating_sub(1) {
                let (first, second) = (&run[pair], &run[pair + 1]);
                surface.clear();
                if surfaces {
                    surface.push_str(first);
                    surface.push(' ');
                    surface.push_str(second);
                }
                key.clear();
                key.push_str(stem_of(pair));
                key.push(' ');
                key.push_str(stem_of(pair + 1));
                self.emit_concepts(&key, &surface, emit);
                emit(&key, TermKind::Phrase, &surface);
                if compounds {
                    glued.clear();
                    glued.push_str(first);
                    glued.push_str(second);
                    compound.clear();
                    stem(&glued, &mut compound);
                    emit(&compound, TermKind::Compound, &surface);
                }
            }
        }
    }

    fn emit_concepts(&self, key: &str, surface: &str, emit: &mut dyn FnMut(&str, TermKind, &str)) {
        for concept in self.concepts.get(key).into_iter().flatten() {
            emit(concept, TermKind::Concept, surface);
        }
    }
}

/// Term keys interned as dense ids, shared by every part of an index so a
/// query looks each term up once.
#[derive(Debug, Default)]
pub struct Vocabulary {
    ids: HashMap<String, u32>,
}

impl Vocabulary {
    pub fn with_capacity(terms: usize) -> Self {
        let mut ids = HashMap::default();
        ids.reserve(terms);
        Vocabulary { ids }
    }

    /// The id of `key`, allocating one (and the key's only copy) if new.
    pub fn intern(&mut self, key: &str) -> u32 {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(key.to_owned(), id);
        id
    }

    pub fn get(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A query's distinct terms with their weights, sorted by key so scores add
/// up in the same order on every run (f32 sums are order-sensitive).
pub fn query_terms(terms: Vec<Term>) -> Vec<(Term, f32)> {
    let mut by_key: HashMap<String, (Term, f32)> = HashMap::default();
    for term in terms {
        let weight = term.kind.weight();
        match by_key.get_mut(&term.key) {
            Some((existing, w)) if weight > *w => {
                *existing = term;
                *w = weight;
            }
            Some(_) => {}
            None => {
                by_key.insert(term.key.clone(), (term, weight));
            }
        }
    }
    let mut terms: Vec<(Term, f32)> = by_key.into_values().collect();
    terms.sort_by(|a, b| a.0.key.cmp(&b.0.key));
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(analyzer: &Analyzer, text: &str, kind: TermKind) -> Vec<String> {
        analyzer
            .analyze(text)
            .into_iter()
            .filter(|t| t.kind == kind)
            .map(|t| t.key)
            .collect()
    }

    #[test]
    fn stems_inflections_together() {
        let analyzer = Analyzer::new(Options::FULL);
        assert_eq!(
            keys(&analyzer, "crashes crashed crashing", TermKind::Word),
            ["crash", "crash", "crash"]
        );
        assert_eq!(
            keys(&analyzer, "failing tests", TermKind::Word),
            ["fail", "test"]
        );
    }

    #[test]
    fn plain_options_keep_words_as_written() {
        let analyzer = Analyzer::new(Options::PLAIN);
        let terms = analyzer.analyze("Failing unit tests");
        assert!(terms.iter().all(|t| t.kind == TermKind::Word));
        assert_eq!(
            terms.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
            ["failing", "unit", "tests"]
        );
    }

    #[test]
    fn phrases_and_compounds_meet_across_spellings() {
        let analyzer = Analyzer::new(Options::FULL);
        assert!(
            keys(&analyzer, "pre-commit check", TermKind::Compound).contains(&"precommit".into())
        );
        assert!(keys(&analyzer, "precommit", TermKind::Word).contains(&"precommit".into()));
        assert_eq!(
            keys(&analyzer, "unit tests", TermKind::Phrase),
            ["unit test"]
        );
        // No phrase across a stopword or a comma.
        assert!(keys(&analyzer, "cause of the crash, tests", TermKind::Phrase).is_empty());
    }

    #[test]
    fn synonyms_share_a_concept() {
        let analyzer = Analyzer::new(Options::FULL);
        for text in ["a crash", "the exception", "failing", "stack trace"] {
            assert!(
                keys(&analyzer, text, TermKind::Concept).contains(&"~defect".into()),
                "{text}"
            );
        }
        assert!(keys(&analyzer, "refactoring", TermKind::Concept).contains(&"~restructure".into()));
        assert!(keys(&analyzer, "zebra", TermKind::Concept).is_empty());
    }

    #[test]
    fn query_terms_are_distinct_and_sorted() {
        let analyzer = Analyzer::new(Options::FULL);
        let terms = query_terms(analyzer.analyze("bug bug error"));
        let keys: Vec<&str> = terms.iter().map(|(t, _)| t.key.as_str()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted);
        assert!(keys.contains(&"~defect"));
    }

    #[test]
    fn odd_input_does_not_panic() {
        let analyzer = Analyzer::new(Options::FULL);
        let long = "x".repeat(10_000);
        for text in [
            "",
            "ÄÖÜ straße",
            "🦀 crab",
            "İİİ",
            long.as_str(),
            "a-b-c-d",
            "'''",
        ] {
            let _ = analyzer.analyze(text);
        }
    }
}
