//! The ranker's constants ([`Tuning`]) and which ranking runs ([`Ranker`]).
//!
//! Every weight, temperature and threshold of the selection is a field of
//! [`Tuning`], documented with what was measured when it was chosen
//! (docs/selection.md has the grids), so that an evaluation can try other
//! values (`ZEN_SELECT_TUNING`, `ZEN_SELECT_MODEL_TUNING`) without touching
//! the code that reads them. The bottom of the ranking's own files: the
//! index (`index.rs`) and everything that scores with it read these
//! constants, and this file needs no more than BM25's field table and the
//! analyzer's options.

use super::{
    signals::bm25::{FieldParams, FieldTable},
    text::analyze::Options,
};

/// The ranker's constants. [`Tuning::DEFAULT`] is what the select tool
/// uses; the struct exists so evaluations can measure alternatives.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Which text normalizations run (the baseline turns them all off).
    pub analysis: Options,
    /// Field weights and length normalization, by [`Field`] order.
    ///
    /// [`Field`]: super::signals::bm25::Field
    pub fields: FieldTable,
    /// Weight of the lexical signal in a mode's score.
    pub lexical_weight: f32,
    /// Weight of the example-similarity signal in a mode's score.
    pub example_weight: f32,
    /// Weight of the phrasing-model posterior in the score of a mode with
    /// example phrasings. Without examples the model only knows a name and a
    /// description, which the lexical signal already weighs better: on the
    /// foreign development sets it cost top-1, so it is left out there.
    pub phrasing_weight: f32,
    /// Weight of the meaning signal (static embeddings) in a mode's score;
    /// it runs only for catalogs with a mode that has no example phrasings.
    pub semantic_weight: f32,
    /// Cosine similarity that counts as no shared meaning at all: the
    /// meaning signal is `(cos - floor) / (1 - floor)`, clamped at 0.
    pub semantic_floor: f32,
    /// With the table: weight of the word-by-word match
    /// ([`EmbeddingIndex::soft_matches`]) beside the sentence cosine; the
    /// meaning signal's cosine becomes `(cos + w * soft) / (1 + w)`.
    ///
    /// [`EmbeddingIndex::soft_matches`]: super::signals::embedding::EmbeddingIndex::soft_matches
    pub soft_match_weight: f32,
    /// With the table: how many modes (the best by sentence cosine) get the
    /// word-by-word match; the rest keep their cosine. It costs a few
    /// microseconds per mode, and a mode the sentence vector ranks far down
    /// did not reach the top with it on the dev halves.
    pub soft_match_candidates: usize,
    /// In the phrasing model: weight of a name, title, summary or keyword
    /// phrase relative to one example task.
    pub intent_text_weight: f32,
    /// In the phrasing model: weight of the description (0 leaves it out).
    pub description_phrasing_weight: f32,
    /// In the phrasing model: additive smoothing pseudo-count.
    pub phrasing_smoothing: f32,
    /// In the phrasing model: temperature of the posterior.
    pub phrasing_temperature: f32,
    /// How much a mode's second-best example adds to its best.
    pub second_best_share: f32,
    /// Weight of a topic word (in one example only, in no mode's intent
    /// fields) in the example vectors.
    pub topic_weight: f32,
    /// Softmax temperature over scores: lower is more decisive.
    pub temperature: f32,
    /// The score of the implicit "no mode fits" candidate (catalogs ranked
    /// without the meaning signal).
    pub no_fit_score: f32,
    /// With the meaning signal: which quantile of the probes' best scores
    /// a request must beat (src/select/nofit.rs). The median: higher
    /// quantiles (0.67, 0.8 with the model) flagged 13-33% of relevant
    /// requests on four foreign sets, and with the built-in modes a flagged
    /// request is served `chat`
    /// (docs/decisions/0015-no-fit-at-the-probes-median.md).
    pub no_fit_quantile: f32,
    /// With the meaning signal: how far above that quantile.
    pub no_fit_margin: f32,
    /// How much query evidence (summed IDF of the query's known terms) makes
    /// a ranking count fully; see `Index::ranking`.
    pub evidence_scale: f32,
    /// With the full model loaded: the table's ranking answers when its best
    /// mode's confidence reaches this; below it, the model ranks the
    /// request (`Index::ranking`). 0 never asks the model, above 1 always.
    /// The default asks it always once its index is ready: on the
    /// real-server tune half with the built-in modes on, asking below 0.3
    /// (42% of the requests) gave 0.576 top-1 and asking always 0.638;
    /// the request is encoded once per select either way.
    pub ask_model_below: f32,
    /// For a tool without example phrasings: its score is multiplied by
    /// `1 + verb_match` for each of its actions the request asks for
    /// ([`Actions`], at most two counted), ...
    ///
    /// [`Actions`]: super::signals::action::Actions
    pub verb_match: f32,
    /// ... plus this much (times the query's evidence strength) for each,
    /// so that a tool whose words the request does not share but whose
    /// action it asks for is still a candidate, ...
    pub verb_bonus: f32,
    /// ... and by `1 - verb_mismatch` when the request asks for actions
    /// and none is the tool's.
    pub verb_mismatch: f32,
    /// For a tool without example phrasings: its score is multiplied by
    /// `1 + value_match` when it takes a kind of value the request carries
    /// (a URL, a path, a time zone ...: [`Values`]), ...
    ///
    /// [`Values`]: super::signals::values::Values
    pub value_match: f32,
    /// ... and by `1 - value_mismatch` when the request carries values and
    /// the tool takes none of their kinds. Off: on the real-server tune
    /// half it changed nothing with the model, and on BFCL's live catalog,
    /// whose parameters are often generic (`query`, `params`), it cost
    /// top-1.
    pub value_mismatch: f32,
    /// [`Tuning::value_match`] for a mode with example phrasings (zenmode's
    /// own): a review request naming `auth.py` stays with the mode that
    /// takes files, but the examples already carry most of the evidence.
    /// 0.5: the built-in dev set beside the live catalog kept 0.943 top-1
    /// (0.937 at 0, under its floor of 0.94), and the real-server tune half
    /// lost less on the table path than at 1 or 2 (docs/selection.md).
    pub value_match_examples: f32,
    /// For a tool without example phrasings: its score is multiplied by
    /// `1 + date_match` when the request names a day and the tool takes
    /// one (`date`, `start_date_time`): the forecast for Friday, not the
    /// weather now.
    pub date_match: f32,
    /// ... and by `1 + id_match` when the request carries a record's id
    /// (`pu_7731`, a UUID, "id 1234") and the tool takes one: the record
    /// by its id, not the list it is in.
    pub id_match: f32,
    /// A destructive tool's score is multiplied by this when the request
    /// does not ask for what it does ([`Actions::licenses`]); whatever its
    /// score, it never ranks above every harmless candidate then.
    ///
    /// [`Actions::licenses`]: super::signals::action::Actions::licenses
    pub unasked_destructive: f32,
    /// In a catalog that mixes modes with example phrasings (zenmode's
    /// own) and tools without (a gateway's servers): the weight of the
    /// example and phrasing signals of the former. Both are relative (a
    /// posterior shares out all its mass, whatever the request), so at
    /// full weight they gave the built-in modes a head start that a
    /// server's tool, with only its name and description, could not make
    /// up.
    pub mixed_examples_weight: f32,
    /// With the full model only: the weight of the model's cosine for a
    /// mode with example phrasings (zenmode's own), read against its name
    /// and description as for any tool. Without it a built-in mode and a
    /// server tool are ranked by different signals, and a request that
    /// shares a few words with a built-in's examples took it from a tool
    /// whose meaning fits better. 0 leaves the built-ins to their examples.
    pub builtin_meaning: f32,
    /// With the full model only: the text the model reads for a tool also
    /// lists its parameter names as words ("parameters: repo path,
    /// max count"), which say what the tool works on.
    pub meaning_parameters: bool,
    /// With the full model only: how much of a description's cosine comes
    /// from the request's vector through the request adapter
    /// (`data/embedding/request_adapter.f32`, trained on the shipped example
    /// requests) rather than from the vector as the model gave it; example
    /// requests are always compared with the latter. 0: no adapter.
    /// docs/decisions/0020-request-adapter.md has the measurement.
    pub request_adapter: f32,
    /// With the full model only: the most tokens it reads of a request,
    /// `[CLS]` and `[SEP]` included (over it, the middle of the request is
    /// left out: `Transformer::embed_within`). The encoder's time grows with the
    /// tokens; docs/decisions/0014-request-token-budget.md has what each
    /// budget cost and gave.
    pub request_tokens: usize,
    /// For another server's tool with example requests
    /// (`catalog::tool_examples`): the weight of its example signal (the
    /// TF-IDF cosine of its closest examples) against a built-in mode's.
    pub tool_example_weight: f32,
    /// ... and of its phrasing model (0: tools are left out of it).
    pub tool_phrasing_weight: f32,
    /// ... and how far its meaning moves from its description's cosine
    /// towards its closest example's, when that is higher: 1 takes the
    /// larger of the two, 0 ignores the examples.
    pub example_meaning: f32,
    /// A tool without example requests, in a catalog where others have
    /// them, has its cosine raised by this share of the median pull
    /// (`example_meaning`) that the examples gave the tools they put
    /// closest to the request: without it, a server zenmode has no
    /// examples for lost its requests to look-alike tools that have some.
    /// The lift orders the ranking; whether a ready call is safe and
    /// whether anything fits are judged without it. 0 turns it off.
    pub unseen_example_lift: f32,
    /// ... the median of this many tools.
    pub unseen_lift_neighbours: usize,
    /// ... averaging the cosines of its this many closest examples
    /// (at most `signals::embedding::MAX_NEAREST`).
    pub example_neighbours: usize,
    /// ... among the examples of only this many modes, those whose
    /// examples' centroid is closest to the request (0: every mode's).
    pub example_shortlist: usize,
    /// A tool of a server the request names ("in notion", "on jira") has
    /// its score multiplied by this.
    pub server_named: f32,
    /// ... and a tool of a server it names only to rule out ("not Slack",
    /// "a Gmail draft, not a Notion page") by this.
    pub server_ruled_out: f32,
    /// Factor on the tools without examples of a server whose own words
    /// (used by two of its tools and by no other mode) the request writes
    /// and whose name it does not: beside servers with examples, a server
    /// never seen loses its requests to their look-alikes ("revoke ben's
    /// access to my outlook calendar" to another calendar's tools).
    pub server_vocabulary: f32,
    /// A tool whose description calls it deprecated has its score
    /// multiplied by this: its server offers a successor.
    pub deprecated: f32,
    /// A tool with example requests that changes state gets a ready call
    /// only for a request at least this close (cosine) to one of its
    /// examples: 0.4 with the table, 0.5 with the model (on the routing
    /// tune sets, 0.4 with the model let a request to write a regex
    /// through to Playwright's `browser_type`; 0.3 with the table, once
    /// the examples grew to about 25 a tool, "merge these two sentences"
    /// to GitHub's `merge_pull_request`).
    pub example_ready_cosine: f32,
    /// With the full model only: the weight, beside the example signal, of
    /// the tool classifier's probability for a tool fitted on its shipped
    /// examples (`catalog::tool_classifier`,
    /// docs/decisions/0021-tool-classifier.md). 0 leaves it out.
    pub classifier_weight: f32,
    /// Added to the classifier's logit for a tool without a row (a server
    /// never seen) over the bias its fit calibrated. The calibration scores
    /// held-out servers through an encoder overlay trained on their
    /// examples, whose cosines are higher than a truly unseen server's, so
    /// the fitted bias sells such a server short
    /// (docs/decisions/0032-unseen-servers-classifier-bias.md).
    pub unseen_classifier_bias: f32,
    /// For a request that names a server ("the open PRs in the Bitbucket
    /// repo"), the classifier's odds for the tools of servers it does not
    /// name are multiplied by this before its softmax: its rows know the
    /// servers they were fitted on, not which one the request means, and
    /// pulled such requests to a look-alike of a server it has rows for.
    /// 1 leaves them as they are.
    pub classifier_unnamed_server: f32,
    /// How many of the best modes share the confidence (with the no-fit
    /// candidate); the long tail of a big catalog would otherwise dilute it.
    pub confidence_candidates: usize,
    /// What a select reply makes of a ranking's confidences.
    pub reply: ReplyThresholds,
}

/// The thresholds by which a select reply reads a ranking
/// (`select::decision`): when it is unsure, when one mode stands out, which
/// modes are close, how many it shows. A ranking carries a copy of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplyThresholds {
    /// Below this confidence the best mode is flagged as a weak match.
    pub low_confidence: f32,
    /// The best mode stands out when it is at least this many times as
    /// likely as the second: then it is the answer even when no mode
    /// clearly fits (on the real-server tune half, 9 of 13 tools standing
    /// out by 2 in a reply that fell back to `chat` were right; `chat`
    /// never was).
    pub clear_margin: f32,
    /// A mode with at least this share of the best one's confidence is
    /// about as likely: the reply offers both and asks to choose. (At 0.8 a
    /// sixth of the real-server tune half's replies asked to choose, and
    /// the first was the right one in 30 of the 32 where one was.)
    pub close_share: f32,
    /// The share of the confidence the modes a reply shows by default
    /// cover, ...
    pub shown_confidence: f32,
    /// ... showing at least this many modes ...
    pub shown_at_least: usize,
    /// ... and at most this many: when the first ones are unsure the right
    /// tool is often fourth or fifth (real-server requests: among the first
    /// three 0.78, the first five 0.84), and two more names cost less than
    /// a wrong call.
    pub shown_at_most: usize,
}

impl Default for ReplyThresholds {
    fn default() -> Self {
        Tuning::DEFAULT.reply
    }
}

impl Tuning {
    /// The settings for the full model (`--embedding-model`). Its cosines
    /// are sharper than the table's: the right tool stands further above
    /// the rest. So the meaning signal weighs more (3 against the table's
    /// 1.5: on the real-server tune half with the built-ins on, 2 gave
    /// 0.638 top-1 and 3 0.650, 4 and 6 less). Its floor, 0.15, drops the
    /// small cosines unrelated texts keep under the encoder overlay
    /// (MetaTool dev fused 0.623 at 0.05, 0.637 at 0.15, 0.634 at 0.2);
    /// the no-fit bar a little above the probes' median keeps the share
    /// of irrelevant requests flagged where the median held it under the
    /// previous overlay
    /// (docs/decisions/0031-an-overlay-held-less-near-the-model.md).
    /// The word-by-word match does not run: the model weighs words in
    /// context.
    pub const fn for_full_model(self) -> Tuning {
        Tuning {
            semantic_weight: self.semantic_weight * 2.0,
            semantic_floor: 0.15,
            no_fit_quantile: 0.53,
            example_ready_cosine: self.example_ready_cosine + 0.1,
            ..self
        }
    }

    pub const DEFAULT: Tuning = Tuning {
        analysis: Options::FULL,
        // Names and keywords are written to be matched; descriptions are long
        // and wordy; parameter names are shared by many modes (step, model...).
        fields: [
            field(3.0, 0.3),  // name
            field(2.0, 0.5),  // title
            field(2.0, 0.5),  // summary
            field(3.0, 0.5),  // keywords
            field(1.0, 0.75), // description
            field(2.0, 0.75), // parameters
        ],
        lexical_weight: 1.0,
        example_weight: 1.0,
        phrasing_weight: 1.0,
        semantic_weight: 1.5,
        semantic_floor: 0.2,
        soft_match_weight: 0.5,
        soft_match_candidates: 16,
        intent_text_weight: 3.0,
        description_phrasing_weight: 0.5,
        phrasing_smoothing: 0.2,
        phrasing_temperature: 3.0,
        second_best_share: 0.3,
        topic_weight: 0.5,
        temperature: 0.2,
        no_fit_score: 0.6,
        no_fit_quantile: 0.5,
        no_fit_margin: 1.0,
        evidence_scale: 8.0,
        ask_model_below: 2.0,
        verb_match: 0.3,
        verb_bonus: 0.1,
        verb_mismatch: 0.15,
        value_match: 2.0,
        value_mismatch: 0.0,
        value_match_examples: 0.5,
        date_match: 0.5,
        id_match: 0.5,
        mixed_examples_weight: 0.75,
        unasked_destructive: 0.5,
        builtin_meaning: 0.0,
        meaning_parameters: false,
        request_tokens: 48,
        // Off: it costs no-fit detection more than it gives (decision 0020).
        request_adapter: 0.0,
        tool_example_weight: 1.0,
        tool_phrasing_weight: 1.0,
        example_meaning: 1.0,
        unseen_example_lift: 0.75,
        unseen_lift_neighbours: 8,
        example_neighbours: 5,
        example_shortlist: 128,
        server_named: 2.0,
        server_ruled_out: 0.5,
        server_vocabulary: 1.6,
        deprecated: 0.7,
        example_ready_cosine: 0.4,
        classifier_weight: 8.0,
        unseen_classifier_bias: 1.0,
        classifier_unnamed_server: 0.1,
        confidence_candidates: 10,
        reply: ReplyThresholds {
            low_confidence: 0.4,
            clear_margin: 2.0,
            close_share: 0.9,
            shown_confidence: 0.9,
            shown_at_least: 3,
            shown_at_most: 5,
        },
    };

    /// These constants with the overrides of `spec` (`name=value` pairs,
    /// separated by commas), for measuring alternatives without a rebuild
    /// (`ZEN_SELECT_TUNING`, `ZEN_SELECT_MODEL_TUNING`). An unknown name or
    /// a value that is not a number is an error naming it.
    pub fn with_overrides(self, spec: &str) -> Result<Tuning, String> {
        let mut tuning = self;
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("tuning override `{pair}` is not name=value"))?;
            let value: f32 = value
                .trim()
                .parse()
                .map_err(|_| format!("tuning override `{pair}`: `{value}` is not a number"))?;
            let slot = match name.trim() {
                "lexical_weight" => &mut tuning.lexical_weight,
                "example_weight" => &mut tuning.example_weight,
                "phrasing_weight" => &mut tuning.phrasing_weight,
                "semantic_weight" => &mut tuning.semantic_weight,
                "semantic_floor" => &mut tuning.semantic_floor,
                "temperature" => &mut tuning.temperature,
                "no_fit_score" => &mut tuning.no_fit_score,
                "no_fit_quantile" => &mut tuning.no_fit_quantile,
                "no_fit_margin" => &mut tuning.no_fit_margin,
                "evidence_scale" => &mut tuning.evidence_scale,
                "ask_model_below" => &mut tuning.ask_model_below,
                "verb_match" => &mut tuning.verb_match,
                "verb_bonus" => &mut tuning.verb_bonus,
                "verb_mismatch" => &mut tuning.verb_mismatch,
                "value_match" => &mut tuning.value_match,
                "value_mismatch" => &mut tuning.value_mismatch,
                "value_match_examples" => &mut tuning.value_match_examples,
                "date_match" => &mut tuning.date_match,
                "id_match" => &mut tuning.id_match,
                "unasked_destructive" => &mut tuning.unasked_destructive,
                "mixed_examples_weight" => &mut tuning.mixed_examples_weight,
                "builtin_meaning" => &mut tuning.builtin_meaning,
                "tool_example_weight" => &mut tuning.tool_example_weight,
                "tool_phrasing_weight" => &mut tuning.tool_phrasing_weight,
                "example_meaning" => &mut tuning.example_meaning,
                "unseen_example_lift" => &mut tuning.unseen_example_lift,
                "server_named" => &mut tuning.server_named,
                "server_ruled_out" => &mut tuning.server_ruled_out,
                "server_vocabulary" => &mut tuning.server_vocabulary,
                "deprecated" => &mut tuning.deprecated,
                "example_ready_cosine" => &mut tuning.example_ready_cosine,
                "request_adapter" => &mut tuning.request_adapter,
                "classifier_weight" => &mut tuning.classifier_weight,
                "unseen_classifier_bias" => &mut tuning.unseen_classifier_bias,
                "classifier_unnamed_server" => &mut tuning.classifier_unnamed_server,
                "low_confidence" => &mut tuning.reply.low_confidence,
                "clear_margin" => &mut tuning.reply.clear_margin,
                "close_share" => &mut tuning.reply.close_share,
                "shown_confidence" => &mut tuning.reply.shown_confidence,
                "confidence_candidates" => {
                    tuning.confidence_candidates = value.max(1.0) as usize;
                    continue;
                }
                "shown_at_least" => {
                    tuning.reply.shown_at_least = value.max(1.0) as usize;
                    continue;
                }
                "shown_at_most" => {
                    tuning.reply.shown_at_most = value.max(1.0) as usize;
                    continue;
                }
                "example_neighbours" => {
                    tuning.example_neighbours = value.max(1.0) as usize;
                    continue;
                }
                "unseen_lift_neighbours" => {
                    tuning.unseen_lift_neighbours = value.max(1.0) as usize;
                    continue;
                }
                "example_shortlist" => {
                    tuning.example_shortlist = value.max(0.0) as usize;
                    continue;
                }
                "request_tokens" => {
                    tuning.request_tokens = value.max(0.0) as usize;
                    continue;
                }
                "meaning_parameters" => {
                    tuning.meaning_parameters = value > 0.0;
                    continue;
                }
                other => return Err(format!("tuning override: unknown constant `{other}`")),
            };
            *slot = value;
        }
        Ok(tuning)
    }

    /// [`Tuning::with_overrides`] from the environment variable `name`;
    /// a bad override is reported on stderr and ignored.
    pub(super) fn overridden_by_env(self, name: &str) -> Tuning {
        let Ok(spec) = std::env::var(name) else {
            return self;
        };
        match self.with_overrides(&spec) {
            Ok(tuning) => tuning,
            Err(error) => {
                tracing::warn!(%error, variable = name, "ignoring the tuning override");
                self
            }
        }
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

/// Plain BM25: every field in one bag of words (the description slot).
pub(super) const PLAIN_FIELDS: FieldTable = [
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(0.0, 0.75),
    field(1.0, 0.75),
    field(0.0, 0.75),
];

const fn field(weight: f32, b: f32) -> FieldParams {
    FieldParams { weight, b }
}

/// Which ranking to run: the fused ranker, one of its signals alone (to
/// measure what each adds), or the plain BM25 baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Ranker {
    /// Every signal fused: lexical, examples, phrasing model and meaning.
    #[default]
    Full,
    /// Field-weighted BM25 with stemming, synonyms and phrases, alone.
    Lexical,
    /// Similarity to the closest example phrasings, alone.
    Examples,
    /// The naive Bayes phrasing model, alone.
    Phrasing,
    /// The static-embedding meaning signal, alone.
    Embed,
    /// Plain BM25 over all text as one field: the baseline.
    Bm25,
}

impl Ranker {
    pub fn as_str(self) -> &'static str {
        match self {
            Ranker::Full => "full",
            Ranker::Lexical => "lexical",
            Ranker::Examples => "examples",
            Ranker::Phrasing => "phrasing",
            Ranker::Embed => "embed",
            Ranker::Bm25 => "bm25",
        }
    }

    /// The default constants with every other signal's weight at 0.
    pub(super) fn tuning(self, tuning: Tuning) -> Tuning {
        let only = |lexical: f32, examples: f32, phrasing: f32, semantic: f32| Tuning {
            lexical_weight: tuning.lexical_weight * lexical,
            example_weight: tuning.example_weight * examples,
            classifier_weight: tuning.classifier_weight * examples,
            phrasing_weight: tuning.phrasing_weight * phrasing,
            semantic_weight: tuning.semantic_weight * semantic,
            ..tuning
        };
        match self {
            Ranker::Full => tuning,
            Ranker::Lexical | Ranker::Bm25 => only(1.0, 0.0, 0.0, 0.0),
            Ranker::Examples => only(0.0, 1.0, 0.0, 0.0),
            Ranker::Phrasing => only(0.0, 0.0, 1.0, 0.0),
            Ranker::Embed => only(0.0, 0.0, 0.0, 1.0),
        }
    }
}
