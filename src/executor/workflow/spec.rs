//! The `workflow` section of a manifest: what makes one workflow mode differ
//! from another (its prompts, its required actions, when to ask an expert).
//! The engine in `mod.rs` is shared; everything mode-specific is data here.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::catalog::Manifest;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// Whether the final step asks an expert model (when one is configured).
    #[serde(default)]
    pub expert: bool,
    /// The expert's system prompt, written for this mode.
    #[serde(default)]
    pub system_prompt: String,
    /// Field values at which no expert is asked: the agent's own conclusion
    /// stands (debug at confidence "certain", refactor at "complete") or the
    /// caller chose a local review (precommit_type "internal").
    #[serde(default)]
    pub skip_expert_when: BTreeMap<String, Vec<String>>,
    /// What the agent must do before its next call, by phase.
    pub actions: Actions,
    /// What the agent should do with the finished result.
    pub completion: String,
    /// Extra material the engine collects itself.
    #[serde(default)]
    pub gather: Option<Gather>,
    /// A field whose "ask" value means: stop and let the user choose.
    #[serde(default)]
    pub choice: Option<Choice>,
    /// A done/total pair of counters that must meet before the work is complete.
    #[serde(default)]
    pub counter: Option<Counter>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actions {
    /// Step 1: orient and plan the investigation.
    pub first: Vec<String>,
    /// Middle steps: dig deeper.
    pub continuing: Vec<String>,
    /// The step before the last: close gaps and confirm.
    pub before_final: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gather {
    /// Staged, unstaged and compare-to-branch changes of the git repository at `path`.
    GitChanges,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub field: String,
    /// The value that asks the user to choose, e.g. "ask".
    pub ask_value: String,
    /// The other values and what each one does.
    pub options: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    pub done: String,
    pub total: String,
}

impl WorkflowSpec {
    /// Reads a manifest's `workflow` section and checks that every request
    /// field it names is a property of the mode's schema.
    pub fn from_manifest(manifest: &Manifest) -> Result<Self, String> {
        let section = manifest.workflow.clone().ok_or_else(|| {
            format!(
                "mode {:?} uses the workflow executor but has no \"workflow\" section",
                manifest.name
            )
        })?;
        let spec: WorkflowSpec = serde_json::from_value(section)
            .map_err(|e| format!("the workflow section is invalid: {e}"))?;
        let named = spec
            .skip_expert_when
            .keys()
            .map(|field| ("skip_expert_when", field))
            .chain(spec.choice.iter().map(|c| ("choice.field", &c.field)))
            .chain(
                spec.counter
                    .iter()
                    .flat_map(|c| [("counter.done", &c.done), ("counter.total", &c.total)]),
            );
        for (place, field) in named {
            if !manifest.properties().is_some_and(|p| p.contains_key(field)) {
                return Err(format!(
                    "workflow.{place} names {field:?}, which is not a schema property"
                ));
            }
        }
        Ok(spec)
    }
}

/// Where in the investigation a step falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    First,
    Continuing,
    BeforeFinal,
}

impl Phase {
    pub fn of(step_number: u64, total_steps: u64) -> Self {
        if step_number <= 1 {
            Phase::First
        } else if step_number.saturating_add(1) >= total_steps {
            Phase::BeforeFinal
        } else {
            Phase::Continuing
        }
    }
}

impl WorkflowSpec {
    pub fn actions_for(&self, phase: Phase) -> &[String] {
        match phase {
            Phase::First => &self.actions.first,
            Phase::Continuing => &self.actions.continuing,
            Phase::BeforeFinal => &self.actions.before_final,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_follow_the_step_counter() {
        assert_eq!(Phase::of(1, 5), Phase::First);
        assert_eq!(Phase::of(2, 5), Phase::Continuing);
        assert_eq!(Phase::of(4, 5), Phase::BeforeFinal);
        assert_eq!(Phase::of(6, 5), Phase::BeforeFinal);
        assert_eq!(Phase::of(2, 2), Phase::BeforeFinal);
    }

    #[test]
    fn parses_a_minimal_spec_and_rejects_typos() {
        let spec: WorkflowSpec = serde_json::from_value(serde_json::json!({
            "actions": {"first": ["a"], "continuing": ["b"], "before_final": ["c"]},
            "completion": "done", "gather": "git_changes"
        }))
        .unwrap();
        assert_eq!(spec.gather, Some(Gather::GitChanges));
        assert!(!spec.expert);
        let typo = serde_json::from_value::<WorkflowSpec>(serde_json::json!({
            "actions": {"first": [], "continuing": [], "before_final": []},
            "completion": "", "expret": true
        }));
        assert!(typo.is_err());
    }
}
