//! The categories a mode can belong to: a closed set, so a typo in a
//! manifest is a parse error rather than a new, lonely category.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Talking a problem through with one or more models.
    Conversation,
    /// Breaking work into steps before doing it.
    Planning,
    /// Small helpers that answer at once.
    Utility,
    /// Guided, multi-step investigations.
    Workflow,
    /// Tools imported from another server's `tools/list` (`--catalog`).
    #[serde(rename = "catalog")]
    Imported,
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Conversation,
        Category::Planning,
        Category::Utility,
        Category::Workflow,
        Category::Imported,
    ];

    /// The name manifests use.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Conversation => "conversation",
            Category::Planning => "planning",
            Category::Utility => "utility",
            Category::Workflow => "workflow",
            Category::Imported => "catalog",
        }
    }

    /// One line for people and models browsing by category.
    pub fn description(self) -> &'static str {
        match self {
            Category::Conversation => {
                "Ask one or more models, or another AI CLI, and get their answers"
            }
            Category::Planning => "Break a task into ordered steps, with revisions and branches",
            Category::Utility => "Quick helpers: versions, models, API lookups, critical re-checks",
            Category::Workflow => {
                "Step-by-step investigations: debugging, reviews, audits, tests, docs"
            }
            Category::Imported => "Tools imported from another server's tool list",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for category in Category::ALL {
            let text = serde_json::to_string(&category).unwrap();
            assert_eq!(text, format!("\"{}\"", category.as_str()));
            assert_eq!(serde_json::from_str::<Category>(&text).unwrap(), category);
            assert!(!category.description().is_empty());
        }
        let error = serde_json::from_str::<Category>("\"collaboration\"").unwrap_err();
        assert!(error.to_string().contains("unknown variant"), "{error}");
    }

    #[test]
    fn display_pads_like_a_string() {
        assert_eq!(format!("{:<10}|", Category::Utility), "utility   |");
    }
}
