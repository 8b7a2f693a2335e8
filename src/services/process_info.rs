//! Facts about the running process that the layers above record and the
//! `version` mode reads.
//!
//! The engine notes each executor it starts, and the tool surface notes how
//! it presents the catalog. Keeping the record here lets `version` report them
//! without any executor reaching up into the engine or the surface.

use std::{
    collections::BTreeSet,
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

/// How the catalog is presented to clients: fixed for the life of the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    /// The strategy's name, e.g. `zen` or `full`.
    pub strategy: String,
    /// The tool names `tools/list` shows at the start of a session.
    pub listed_tools: Vec<String>,
}

#[derive(Debug)]
pub struct ProcessInfo {
    started: Instant,
    presentation: OnceLock<Presentation>,
    executors_started: Mutex<BTreeSet<String>>,
}

impl Default for ProcessInfo {
    fn default() -> Self {
        ProcessInfo {
            started: Instant::now(),
            presentation: OnceLock::new(),
            executors_started: Mutex::new(BTreeSet::new()),
        }
    }
}

impl ProcessInfo {
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Records the presentation; the first record wins (it never changes).
    pub fn set_presentation(&self, presentation: Presentation) {
        let _ = self.presentation.set(presentation);
    }

    /// `None` when nothing presents the catalog (the CLI's `exec`).
    pub fn presentation(&self) -> Option<&Presentation> {
        self.presentation.get()
    }

    pub fn note_executor_started(&self, mode: &str) {
        self.lock().insert(mode.to_owned());
    }

    /// Modes whose executor has been instantiated, sorted.
    pub fn executors_started(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    /// A panic while holding the lock cannot leave the set half-written, so a
    /// poisoned lock is still safe to read.
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.executors_started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_executors_once_and_sorted_and_keeps_the_first_presentation() {
        let info = ProcessInfo::default();
        info.note_executor_started("planner");
        info.note_executor_started("chat");
        info.note_executor_started("planner");
        assert_eq!(info.executors_started(), ["chat", "planner"]);
        assert!(info.presentation().is_none());
        let first = Presentation {
            strategy: "zen".into(),
            listed_tools: vec!["a".into()],
        };
        info.set_presentation(first.clone());
        info.set_presentation(Presentation {
            strategy: "full".into(),
            listed_tools: vec![],
        });
        assert_eq!(info.presentation(), Some(&first));
    }
}
