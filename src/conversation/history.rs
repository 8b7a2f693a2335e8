//! A thread's history, rebuilt for a model within a token budget.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::thread::{Thread, Turn};
use crate::files::estimate_tokens;

/// History ready to put in front of a model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The included turns in chronological order, framed by a header that
    /// says which turns were left out. Empty when no turn fits.
    pub text: String,
    pub turns_included: usize,
    pub turns_total: usize,
    /// Files referenced by the included turns, newest first, deduplicated:
    /// the order to embed them in, so the newest survive a file budget.
    pub files: Vec<String>,
    /// Estimated tokens of `text` (never below [`estimate_tokens`] of it).
    pub tokens: usize,
}

/// Rebuilds `thread` within `budget_tokens`: the newest turns are taken
/// first until the next one would not fit, so what is cut is always the
/// oldest part; the kept turns are returned in chronological order.
pub fn build_history(thread: &Thread, budget_tokens: usize) -> History {
    let total = thread.turns.len();
    let mut blocks: Vec<String> = Vec::new();
    let mut spent = 0;
    let mut frame_tokens = 0;
    for (index, turn) in thread.turns.iter().enumerate().rev() {
        let block = format_turn(index + 1, turn);
        let block_tokens = estimate_tokens(&block);
        // The frame names the first included turn, so it is priced for
        // the candidate set.
        let frame =
            estimate_tokens(&header(&thread.id, index + 1, total)) + estimate_tokens(FOOTER);
        if spent + block_tokens + frame > budget_tokens {
            break;
        }
        spent += block_tokens;
        frame_tokens = frame;
        blocks.push(block);
    }
    let included = blocks.len();
    if included == 0 {
        return History {
            turns_total: total,
            ..History::default()
        };
    }

    let first = total - included + 1;
    let mut text = header(&thread.id, first, total);
    for block in blocks.iter().rev() {
        text.push_str(block);
    }
    text.push_str(FOOTER);

    let mut seen = HashSet::new();
    let files = thread.turns[first - 1..]
        .iter()
        .rev()
        .flat_map(|turn| turn.files.iter())
        .filter(|file| seen.insert(file.as_str()))
        .cloned()
        .collect();

    History {
        text,
        turns_included: included,
        turns_total: total,
        files,
        tokens: spent + frame_tokens,
    }
}

const FOOTER: &str = "=== END OF CONVERSATION HISTORY ===\n";

/// The opening lines; they say which turns are shown and whether older
/// ones were left out, so the model does not mistake a cut history for
/// the whole conversation.
fn header(id: &str, first: usize, total: usize) -> String {
    let mut header = format!(
        "=== CONVERSATION HISTORY (continuation_id {id}): turns {first}-{total} of {total} ===\n"
    );
    if first > 1 {
        let _ = writeln!(
            header,
            "(Turns 1-{} were left out to fit the token budget.)",
            first - 1
        );
    }
    header.push('\n');
    header
}

fn format_turn(number: usize, turn: &Turn) -> String {
    let mut block = format!(
        "--- Turn {number} ({}, mode {}",
        turn.role.as_str(),
        turn.mode
    );
    if let Some(model) = &turn.model {
        let _ = write!(block, ", model {model}");
    }
    block.push_str(") ---\n");
    if !turn.files.is_empty() {
        let _ = writeln!(block, "Files: {}", turn.files.join(", "));
    }
    if let Some(data) = &turn.data {
        let _ = writeln!(block, "Data: {data}");
    }
    block.push_str(&turn.content);
    if !turn.content.ends_with('\n') {
        block.push('\n');
    }
    block.push('\n');
    block
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::conversation::Turn;

    fn thread(turns: Vec<Turn>) -> Thread {
        Thread {
            id: "00000000-0000-4000-8000-000000000000".to_owned(),
            created: SystemTime::UNIX_EPOCH,
            updated: SystemTime::UNIX_EPOCH,
            turns,
        }
    }

    #[test]
    fn turn_blocks_name_role_mode_model_files_and_data() {
        let turn = Turn::assistant("debug", "Found it.")
            .with_model("gpt-5")
            .with_files(vec!["/a.rs".into(), "/b.rs".into()])
            .with_data(serde_json::json!({"confidence": "high"}));
        assert_eq!(
            format_turn(2, &turn),
            "--- Turn 2 (assistant, mode debug, model gpt-5) ---\nFiles: /a.rs, /b.rs\nData: {\"confidence\":\"high\"}\nFound it.\n\n"
        );
    }

    #[test]
    fn whole_history_when_it_fits() {
        let thread = thread(vec![
            Turn::user("chat", "hello"),
            Turn::assistant("chat", "hi"),
        ]);
        let history = build_history(&thread, 10_000);
        assert_eq!(history.turns_included, 2);
        assert!(history.text.contains("turns 1-2 of 2"));
        assert!(!history.text.contains("left out"));
        assert!(estimate_tokens(&history.text) <= history.tokens);
        assert!(history.text.ends_with(FOOTER));
    }

    #[test]
    fn tiny_budget_gives_empty_history() {
        let thread = thread(vec![Turn::user("chat", "hello")]);
        let history = build_history(&thread, 5);
        assert_eq!(history.turns_included, 0);
        assert_eq!(history.turns_total, 1);
        assert_eq!(history.text, "");
        assert_eq!(history.tokens, 0);
        assert!(history.files.is_empty());
    }
}
