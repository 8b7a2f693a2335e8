//! The model registry: which models zenmode knows by name, who serves them,
//! and what they can do.
//!
//! The table is deliberately short: a few current models per provider, enough
//! for `auto` to choose well and for the aliases people actually type. A
//! custom endpoint accepts any model name, and OpenRouter accepts any
//! `vendor/model` id, so nothing is lost by keeping the table small.

/// The provider families zenmode can talk to, in the order `auto` and name
/// lookups prefer them: direct APIs first (cheaper and faster than a proxy),
/// then OpenRouter, then a local or self-hosted endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ProviderKind {
    Gemini,
    OpenAi,
    Xai,
    OpenRouter,
    Custom,
}

impl ProviderKind {
    pub(crate) const ALL: [ProviderKind; 5] = [
        ProviderKind::Gemini,
        ProviderKind::OpenAi,
        ProviderKind::Xai,
        ProviderKind::OpenRouter,
        ProviderKind::Custom,
    ];

    /// The provider's name as shown to users (`ModelInfo::provider`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Xai => "xai",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Custom => "custom",
        }
    }

    /// The environment variable whose presence enables the provider.
    pub(crate) fn enabling_var(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "GEMINI_API_KEY",
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Xai => "XAI_API_KEY",
            ProviderKind::OpenRouter => "OPENROUTER_API_KEY",
            ProviderKind::Custom => "CUSTOM_API_URL",
        }
    }

    /// The environment variable holding the credential, named in auth errors.
    pub(crate) fn key_var(self) -> &'static str {
        match self {
            ProviderKind::Custom => "CUSTOM_API_KEY",
            other => other.enabling_var(),
        }
    }

    /// Preference tier for `auto`: a lower tier is always preferred.
    fn tier(self) -> u8 {
        match self {
            ProviderKind::Gemini | ProviderKind::OpenAi | ProviderKind::Xai => 0,
            ProviderKind::OpenRouter => 1,
            ProviderKind::Custom => 2,
        }
    }
}

/// How a model exposes extended reasoning, which decides what a
/// `thinking_mode` turns into on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Thinking {
    /// The model does not reason before answering; `thinking_mode` is ignored.
    None,
    /// The model always reasons and offers no knob (e.g. Grok 4).
    BuiltIn,
    /// A `reasoning_effort` level (OpenAI style; OpenRouter's
    /// `reasoning.effort`). Lists the levels the model accepts, lowest first.
    Effort(&'static [&'static str]),
    /// Gemini's `thinkingBudget` in tokens, within the model's bounds.
    Budget { min: u32, max: u32 },
}

impl Thinking {
    pub(crate) fn supported(self) -> bool {
        !matches!(self, Thinking::None)
    }
}

/// The `thinking_mode` values zenmode accepts, lowest first.
pub(crate) const THINKING_MODES: [&str; 5] = ["minimal", "low", "medium", "high", "max"];

/// Maps a `thinking_mode` to the closest effort level the model accepts:
/// the lowest accepted level at or above the request, else the highest.
/// `max` means "as much as it offers". Unknown modes yield `None` (ignored).
pub(crate) fn effort_level(mode: &str, accepted: &'static [&'static str]) -> Option<&'static str> {
    let wanted = THINKING_MODES
        .iter()
        .position(|m| m.eq_ignore_ascii_case(mode.trim()))?;
    let rank = |level: &str| THINKING_MODES.iter().position(|m| *m == level);
    accepted
        .iter()
        .find(|level| rank(level).is_some_and(|r| r >= wanted))
        .or(accepted.last())
        .copied()
}

/// Maps a `thinking_mode` to a Gemini thinking budget: a share of the
/// model's maximum, clamped to what the model allows. The shares follow the
/// spirit of the modes: minimal is a glance, max is everything.
pub(crate) fn thinking_budget(mode: &str, min: u32, max: u32) -> Option<u32> {
    let share = match mode.trim().to_ascii_lowercase().as_str() {
        "minimal" => 0.005,
        "low" => 0.08,
        "medium" => 0.33,
        "high" => 0.67,
        "max" => 1.0,
        _ => return None,
    };
    let budget = (f64::from(max) * share).round() as u32;
    Some(budget.clamp(min, max))
}

/// One model zenmode knows by name.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModelSpec {
    pub name: &'static str,
    /// Short names people type; matched case-insensitively.
    pub aliases: &'static [&'static str],
    pub provider: ProviderKind,
    pub context_window: u64,
    pub images: bool,
    pub thinking: Thinking,
    /// Reasoning models of OpenAI reject any temperature but the default.
    pub temperature: bool,
    /// How well it reasons (0-10), for `auto` on analysis-heavy modes.
    pub strength: u8,
    /// How well it suits quick turns (0-10), for `auto` on chat. The
    /// smallest models share the top score with their bigger siblings, so
    /// ties (won by the earlier row) hand chat the more capable fast model.
    pub speed: u8,
}

const OPENAI_EFFORT: &[&str] = &["minimal", "low", "medium", "high"];
const O_SERIES_EFFORT: &[&str] = &["low", "medium", "high"];
const GROK_MINI_EFFORT: &[&str] = &["low", "high"];
const OPENROUTER_EFFORT: &[&str] = &["low", "medium", "high"];

// Positional so each row of the table stays on a line or two; the column
// order is the field order of `ModelSpec`.
#[allow(clippy::too_many_arguments)]
const fn spec(
    name: &'static str,
    aliases: &'static [&'static str],
    provider: ProviderKind,
    context_window: u64,
    images: bool,
    thinking: Thinking,
    temperature: bool,
    strength: u8,
    speed: u8,
) -> ModelSpec {
    ModelSpec {
        name,
        aliases,
        provider,
        context_window,
        images,
        thinking,
        temperature,
        strength,
        speed,
    }
}

use ProviderKind::{Gemini, OpenAi, OpenRouter, Xai};

/// The known models. Within a provider, earlier rows win ties in `auto`.
#[rustfmt::skip]
pub(crate) static MODELS: &[ModelSpec] = &[
    // Google Gemini, native API.
    spec("gemini-2.5-pro", &["pro", "gemini-pro", "gemini pro"], Gemini, 1_048_576, true,
         Thinking::Budget { min: 128, max: 32_768 }, true, 9, 4),
    spec("gemini-2.5-flash", &["flash", "gemini-flash"], Gemini, 1_048_576, true,
         Thinking::Budget { min: 0, max: 24_576 }, true, 7, 9),
    spec("gemini-2.5-flash-lite", &["flash-lite", "flashlite", "lite"], Gemini, 1_048_576, true,
         Thinking::Budget { min: 512, max: 24_576 }, true, 5, 9),
    // OpenAI.
    spec("gpt-5", &["gpt5"], OpenAi, 400_000, true, Thinking::Effort(OPENAI_EFFORT), false, 9, 4),
    spec("gpt-5-mini", &["mini", "gpt5-mini", "gpt5mini"], OpenAi, 400_000, true,
         Thinking::Effort(OPENAI_EFFORT), false, 7, 9),
    spec("gpt-5-nano", &["nano", "gpt5-nano"], OpenAi, 400_000, true,
         Thinking::Effort(OPENAI_EFFORT), false, 5, 9),
    spec("o3", &[], OpenAi, 200_000, true, Thinking::Effort(O_SERIES_EFFORT), false, 8, 3),
    spec("gpt-4.1", &["gpt4.1", "gpt-41"], OpenAi, 1_047_576, true, Thinking::None, true, 6, 7),
    // xAI.
    spec("grok-4", &["grok", "grok4"], Xai, 256_000, true, Thinking::BuiltIn, true, 8, 4),
    spec("grok-4-fast-reasoning", &["grok-fast", "grok4-fast"], Xai, 2_000_000, true,
         Thinking::BuiltIn, true, 7, 9),
    spec("grok-3-mini", &["grok-mini", "grok3-mini"], Xai, 131_072, false,
         Thinking::Effort(GROK_MINI_EFFORT), true, 5, 8),
    // OpenRouter: other vendors' models through one key. The bare names are
    // aliases so that "gpt-5" still works when only OpenRouter is configured.
    spec("openai/gpt-5", &["gpt-5", "gpt5"], OpenRouter, 400_000, true,
         Thinking::Effort(OPENROUTER_EFFORT), false, 9, 4),
    spec("openai/gpt-5-mini", &["gpt-5-mini", "mini"], OpenRouter, 400_000, true,
         Thinking::Effort(OPENROUTER_EFFORT), false, 7, 8),
    spec("google/gemini-2.5-pro", &["gemini-2.5-pro", "pro"], OpenRouter, 1_048_576, true,
         Thinking::Effort(OPENROUTER_EFFORT), true, 9, 4),
    spec("google/gemini-2.5-flash", &["gemini-2.5-flash", "flash"], OpenRouter, 1_048_576, true,
         Thinking::Effort(OPENROUTER_EFFORT), true, 7, 8),
    spec("anthropic/claude-sonnet-4.5", &["sonnet", "claude-sonnet", "claude"], OpenRouter, 200_000,
         true, Thinking::Effort(OPENROUTER_EFFORT), true, 9, 6),
    spec("anthropic/claude-opus-4.1", &["opus", "claude-opus"], OpenRouter, 200_000, true,
         Thinking::Effort(OPENROUTER_EFFORT), true, 9, 2),
    spec("x-ai/grok-4", &["grok-4", "grok"], OpenRouter, 256_000, true, Thinking::BuiltIn, true, 8, 4),
    spec("deepseek/deepseek-r1", &["r1", "deepseek"], OpenRouter, 163_840, false,
         Thinking::BuiltIn, true, 7, 3),
];

/// The context window assumed for models outside the table (a custom
/// endpoint's model or an OpenRouter id): small enough to be safe for most
/// local models, so prompts are not built for a window the model lacks.
pub(crate) const UNKNOWN_CONTEXT_WINDOW: u64 = 32_768;

/// Capabilities assumed for a model outside the table: no thinking knob,
/// temperature passed through, middling scores so a known model wins `auto`.
pub(crate) fn unlisted(name: &str, provider: ProviderKind) -> OwnedSpec {
    OwnedSpec {
        name: name.to_owned(),
        aliases: Vec::new(),
        provider,
        context_window: UNKNOWN_CONTEXT_WINDOW,
        images: false,
        thinking: Thinking::None,
        temperature: true,
        strength: 3,
        speed: 5,
    }
}

/// A registry row with an owned name, for models named at run time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OwnedSpec {
    pub name: String,
    pub aliases: Vec<String>,
    pub provider: ProviderKind,
    pub context_window: u64,
    pub images: bool,
    pub thinking: Thinking,
    pub temperature: bool,
    pub strength: u8,
    pub speed: u8,
}

impl From<&ModelSpec> for OwnedSpec {
    fn from(spec: &ModelSpec) -> Self {
        OwnedSpec {
            name: spec.name.to_owned(),
            aliases: spec.aliases.iter().map(|a| (*a).to_owned()).collect(),
            provider: spec.provider,
            context_window: spec.context_window,
            images: spec.images,
            thinking: spec.thinking,
            temperature: spec.temperature,
            strength: spec.strength,
            speed: spec.speed,
        }
    }
}

impl OwnedSpec {
    pub(crate) fn matches(&self, requested: &str) -> bool {
        self.name.eq_ignore_ascii_case(requested)
            || self
                .aliases
                .iter()
                .any(|a| a.eq_ignore_ascii_case(requested))
    }
}

/// The table rows of one provider.
pub(crate) fn models_of(kind: ProviderKind) -> impl Iterator<Item = &'static ModelSpec> {
    MODELS.iter().filter(move |m| m.provider == kind)
}

/// The table row of `model` at `kind`, by canonical name.
pub(crate) fn lookup(kind: ProviderKind, model: &str) -> Option<&'static ModelSpec> {
    models_of(kind).find(|m| m.name.eq_ignore_ascii_case(model))
}

/// What a mode needs most from an `auto` model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Careful multi-step analysis: pick the strongest reasoner.
    Reasoning,
    /// Conversation and quick answers: pick the fastest good model.
    Speed,
    /// Anything else: weigh both.
    Balanced,
}

impl Need {
    pub(crate) fn for_purpose(purpose: &str) -> Need {
        match purpose.trim().to_ascii_lowercase().as_str() {
            "thinkdeep" | "codereview" | "debug" | "precommit" | "secaudit" | "analyze"
            | "refactor" | "testgen" | "tracer" | "planner" | "consensus" | "docgen" => {
                Need::Reasoning
            }
            "chat" | "challenge" | "apilookup" | "clink" => Need::Speed,
            _ => Need::Balanced,
        }
    }

    fn score(self, spec: &OwnedSpec) -> u8 {
        match self {
            Need::Reasoning => spec.strength,
            Need::Speed => spec.speed,
            Need::Balanced => spec.strength.saturating_add(spec.speed),
        }
    }
}

/// Picks the model `auto` uses for `need` among `candidates` (in provider
/// priority order). The best provider tier present wins outright; within
/// it the highest score wins, earlier candidates breaking ties.
pub(crate) fn pick_auto(candidates: &[OwnedSpec], need: Need) -> Option<&OwnedSpec> {
    let tier = candidates.iter().map(|c| c.provider.tier()).min()?;
    let mut best: Option<&OwnedSpec> = None;
    for candidate in candidates.iter().filter(|c| c.provider.tier() == tier) {
        if best.is_none_or(|b| need.score(candidate) > need.score(b)) {
            best = Some(candidate);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_and_aliases_are_unique_within_a_provider() {
        for kind in ProviderKind::ALL {
            let mut seen = HashSet::new();
            for model in models_of(kind) {
                for name in std::iter::once(&model.name).chain(model.aliases) {
                    assert!(
                        seen.insert(name.to_ascii_lowercase()),
                        "{name} appears twice for {}",
                        kind.name()
                    );
                }
            }
        }
    }

    #[test]
    fn every_remote_provider_has_models() {
        for kind in ProviderKind::ALL {
            if kind != ProviderKind::Custom {
                assert!(models_of(kind).count() >= 3, "{}", kind.name());
            }
        }
    }

    #[test]
    fn gemini_budgets_fit_the_model() {
        for model in MODELS {
            if let Thinking::Budget { min, max } = model.thinking {
                assert!(min <= max, "{}", model.name);
                assert_eq!(thinking_budget("max", min, max), Some(max));
                assert_eq!(
                    thinking_budget("minimal", min, max).map(|b| b >= min),
                    Some(true)
                );
            }
        }
        assert_eq!(thinking_budget("high", 128, 32_768), Some(21_955));
        assert_eq!(thinking_budget("minimal", 512, 24_576), Some(512));
        assert_eq!(thinking_budget("ludicrous", 0, 100), None);
    }

    #[test]
    fn effort_rounds_up_to_an_accepted_level() {
        assert_eq!(effort_level("minimal", OPENAI_EFFORT), Some("minimal"));
        assert_eq!(effort_level("minimal", O_SERIES_EFFORT), Some("low"));
        assert_eq!(effort_level("medium", GROK_MINI_EFFORT), Some("high"));
        assert_eq!(effort_level("MAX", OPENAI_EFFORT), Some("high"));
        assert_eq!(effort_level("low", GROK_MINI_EFFORT), Some("low"));
        assert_eq!(effort_level("turbo", OPENAI_EFFORT), None);
    }

    #[test]
    fn purposes_map_to_needs() {
        assert_eq!(Need::for_purpose("thinkdeep"), Need::Reasoning);
        assert_eq!(Need::for_purpose("CodeReview"), Need::Reasoning);
        assert_eq!(Need::for_purpose("chat"), Need::Speed);
        assert_eq!(Need::for_purpose("something-new"), Need::Balanced);
    }

    #[test]
    fn auto_prefers_direct_providers_then_score() {
        let all: Vec<OwnedSpec> = [ProviderKind::Gemini, ProviderKind::OpenRouter]
            .into_iter()
            .flat_map(models_of)
            .map(OwnedSpec::from)
            .collect();
        let pick = |need| pick_auto(&all, need).map(|s| s.name.clone());
        assert_eq!(pick(Need::Reasoning).as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(pick(Need::Speed).as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(pick(Need::Balanced).as_deref(), Some("gemini-2.5-flash"));

        let local = vec![unlisted("llama3.2", ProviderKind::Custom)];
        assert_eq!(
            pick_auto(&local, Need::Reasoning).map(|s| s.name.as_str()),
            Some("llama3.2")
        );
        assert!(pick_auto(&[], Need::Speed).is_none());
    }
}
