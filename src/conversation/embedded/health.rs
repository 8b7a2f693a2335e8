//! How the store fares ([`Health`]): whether its files can be used and
//! whether its writes commit, shared by a store's threads so that a failure
//! that lasts many calls is logged once, and its end once.

use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
};

/// How the store fares, shared by a store's threads so that a failure that
/// lasts many calls is logged once, and its end once: whether its files
/// can be used (checked before every batch, by every thread), and whether
/// its writes commit.
#[derive(Debug, Default)]
pub(super) struct Health {
    pub(super) files: Episode,
    pub(super) writes: Episode,
}

/// Whether the last attempt of one kind failed.
#[derive(Debug, Default)]
pub(super) struct Episode(AtomicBool);

impl Episode {
    pub(super) fn failed(&self, path: &Path, reason: &str) {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                path = %path.display(),
                "the conversation store is unavailable ({reason}); calls that need it fail until it is back"
            );
        }
    }

    pub(super) fn succeeded(&self, path: &Path) {
        if self.0.swap(false, Ordering::Relaxed) {
            tracing::info!(path = %path.display(), "the conversation store works again");
        }
    }
}
