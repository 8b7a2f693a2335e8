//! Examples learned from this user's sessions: when a session asked for a
//! recommendation for a task and then ran an upstream tool successfully
//! (the surface notes both), the task becomes an example request of that
//! tool, as the shipped examples are (`tool_examples.rs`). A correction (the
//! tool run was not the one recommended) counts most: it is the last to go
//! when a tool has too many.
//!
//! They stay on this machine, in one file in the state directory
//! ([`crate::platform::dirs::learned_examples_file`]), written owner-only
//! under its lock; a task is cleaned of what may be a secret before it is
//! stored ([`crate::platform::redact::scrub_free_text`]). At most
//! [`MAX_PER_TOOL`] per tool and [`MAX_TOTAL`] in all, the oldest going
//! first. A server's learned examples join its tools when its tools are
//! next read (a start or a reload of the upstreams file); they add to the
//! ranking's example signal and never touch the safety rule.
//! `zenmode examples list|forget` shows and removes them.

use std::{
    collections::HashMap,
    io,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
    time::SystemTime,
};

use serde::{Deserialize, Serialize};

use crate::platform::private_file::{self, Flush};

/// Learned examples kept per tool.
pub const MAX_PER_TOOL: usize = 20;
/// Learned examples kept in all.
pub const MAX_TOTAL: usize = 2000;
/// The longest task kept, in characters.
const MAX_TASK_CHARS: usize = 300;

/// One learned example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learned {
    /// The server's name in the upstreams file.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// The mode it ran as (`prefix__tool`).
    pub mode: String,
    /// The task, as the session wrote it, cleaned.
    pub task: String,
    /// Whether the tool run was not the one recommended.
    pub correction: bool,
    /// When, in milliseconds since the epoch.
    pub at_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LearnedFile {
    #[serde(default)]
    examples: Vec<Learned>,
}

/// The learned examples' file.
#[derive(Debug, Clone)]
pub struct LearnedStore {
    file: PathBuf,
}

impl LearnedStore {
    /// The user's store (in the state directory).
    pub fn of_user() -> Self {
        LearnedStore {
            file: crate::platform::dirs::learned_examples_file(),
        }
    }

    pub fn at(file: PathBuf) -> Self {
        LearnedStore { file }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Every learned example, oldest first; none when the file is missing
    /// or unreadable (a broken file is logged, and replaced on next write).
    pub fn load(&self) -> Vec<Learned> {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return Vec::new();
        };
        match serde_json::from_str::<LearnedFile>(&text) {
            Ok(file) => file.examples,
            Err(error) => {
                tracing::warn!(file = %self.file.display(), %error, "learned examples unreadable; starting afresh");
                Vec::new()
            }
        }
    }

    /// `server`'s learned examples, by tool name. Every server's tools ask
    /// at start-up, so the file is parsed once while it stays the same
    /// (its size and modification time).
    pub fn for_server(&self, server: &str) -> HashMap<String, Vec<String>> {
        let mut tools: HashMap<String, Vec<String>> = HashMap::new();
        for example in self.load_cached().iter().filter(|e| e.server == server) {
            tools
                .entry(example.tool.clone())
                .or_default()
                .push(example.task.clone());
        }
        tools
    }

    fn load_cached(&self) -> Arc<Vec<Learned>> {
        type Parsed = (PathBuf, u64, SystemTime, Arc<Vec<Learned>>);
        static LAST: Mutex<Option<Parsed>> = Mutex::new(None);
        let Ok(meta) = std::fs::metadata(&self.file) else {
            return Arc::default();
        };
        let stamp = (
            meta.len(),
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        );
        let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((file, len, modified, parsed)) = last.as_ref()
            && *file == self.file
            && (*len, *modified) == stamp
        {
            return parsed.clone();
        }
        let parsed = Arc::new(self.load());
        *last = Some((self.file.clone(), stamp.0, stamp.1, parsed.clone()));
        parsed
    }

    /// Keeps `example` (its task cleaned and cut to length); the same task
    /// for the same mode is kept once, as its newest. Returns whether it was
    /// kept (an empty task is not).
    pub fn record(&self, mut example: Learned) -> io::Result<bool> {
        let cleaned = crate::platform::redact::scrub_free_text(example.task.trim());
        example.task = cleaned.chars().take(MAX_TASK_CHARS).collect();
        if example.task.trim().is_empty() {
            return Ok(false);
        }
        self.change(|examples| {
            if let Some(at) = examples
                .iter()
                .position(|e| e.mode == example.mode && e.task == example.task)
            {
                let before = examples.remove(at);
                example.correction |= before.correction;
            }
            examples.push(example);
            trim(examples);
        })?;
        Ok(true)
    }

    /// Removes the examples `forget` picks; returns how many went.
    pub fn forget(&self, forget: impl Fn(&Learned) -> bool) -> io::Result<usize> {
        let mut gone = 0;
        self.change(|examples| {
            let before = examples.len();
            examples.retain(|example| !forget(example));
            gone = before - examples.len();
        })?;
        Ok(gone)
    }

    fn change(&self, edit: impl FnOnce(&mut Vec<Learned>)) -> io::Result<()> {
        let _lock = private_file::lock_beside(&self.file)?;
        let mut examples = self.load();
        edit(&mut examples);
        let text =
            serde_json::to_vec_pretty(&LearnedFile { examples }).map_err(io::Error::other)?;
        private_file::write_private(&self.file, &text, Flush::Later)
    }
}

/// Holds the bounds: per tool, the oldest plain example goes before any
/// correction; in all, the oldest goes.
fn trim(examples: &mut Vec<Learned>) {
    let mut per_mode: HashMap<String, usize> = HashMap::new();
    for example in examples.iter() {
        *per_mode.entry(example.mode.clone()).or_default() += 1;
    }
    for (mode, count) in per_mode {
        let mut excess = count.saturating_sub(MAX_PER_TOOL);
        for corrections in [false, true] {
            while excess > 0 {
                let Some(at) = examples
                    .iter()
                    .position(|e| e.mode == mode && e.correction == corrections)
                else {
                    break;
                };
                examples.remove(at);
                excess -= 1;
            }
        }
    }
    let over = examples.len().saturating_sub(MAX_TOTAL);
    examples.drain(..over);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(mode: &str, task: &str, correction: bool) -> Learned {
        Learned {
            server: "github".into(),
            tool: mode.trim_start_matches("github__").into(),
            mode: mode.into(),
            task: task.into(),
            correction,
            at_ms: 0,
        }
    }

    #[test]
    fn examples_are_bounded_per_tool_keeping_corrections_longest() {
        let dir = tempfile::tempdir().unwrap();
        let store = LearnedStore::at(dir.path().join("learned/examples.json"));
        assert!(store.load().is_empty());
        store
            .record(example(
                "github__create_issue",
                "file a bug about login",
                true,
            ))
            .unwrap();
        for n in 0..MAX_PER_TOOL + 5 {
            store
                .record(example(
                    "github__create_issue",
                    &format!("new issue {n}"),
                    false,
                ))
                .unwrap();
        }
        let kept = store.load();
        assert_eq!(kept.len(), MAX_PER_TOOL);
        assert!(
            kept.iter().any(|e| e.correction),
            "the correction was dropped"
        );
        assert!(
            !kept.iter().any(|e| e.task == "new issue 0"),
            "the oldest stayed"
        );
        // The same task again is kept once.
        store
            .record(example("github__create_issue", "new issue 24", false))
            .unwrap();
        assert_eq!(store.load().len(), MAX_PER_TOOL);
        let tools = store.for_server("github");
        assert_eq!(tools["create_issue"].len(), MAX_PER_TOOL);
        assert!(store.for_server("gitlab").is_empty());
        assert_eq!(store.forget(|e| e.correction).unwrap(), 1);
        assert_eq!(store.load().len(), MAX_PER_TOOL - 1);
    }

    #[test]
    fn a_task_is_cleaned_before_it_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = LearnedStore::at(dir.path().join("examples.json"));
        let secret = "ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3";
        store
            .record(example(
                "github__get_me",
                &format!("who am i with {secret}"),
                false,
            ))
            .unwrap();
        assert!(
            !store
                .record(example("github__get_me", "   ", false))
                .unwrap()
        );
        let text = std::fs::read_to_string(store.file()).unwrap();
        assert!(!text.contains(secret), "{text}");
        assert!(text.contains("who am i with"), "{text}");
        let long = "word ".repeat(200);
        store
            .record(example("github__get_me", &long, false))
            .unwrap();
        assert!(store.load().iter().all(|e| e.task.chars().count() <= 300));
    }

    #[test]
    fn the_total_is_bounded_oldest_first() {
        let mut examples: Vec<Learned> = (0..MAX_TOTAL + 10)
            .map(|n| example(&format!("github__tool{}", n % 200), &format!("t{n}"), false))
            .collect();
        trim(&mut examples);
        assert_eq!(examples.len(), MAX_TOTAL);
        assert_eq!(examples[0].task, "t10");
    }
}
