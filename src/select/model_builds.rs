//! The one thread that builds model indexes for `Index::build_model_later`.
//!
//! A gateway rebuilds its catalog each time an upstream restarts or changes
//! its tools, which a failing server can do many times a second; a thread
//! per build piled up threads, each with a copy of the catalog, faster
//! than they finished (the fuzz campaign's server grew past a gigabyte and
//! stopped answering pings). Builds now wait in line for a single thread,
//! and an index dropped before its turn (replaced by a newer catalog) is
//! skipped: only the slot's weak reference waits with the catalog.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Condvar, Mutex, OnceLock, PoisonError, Weak,
        atomic::{AtomicBool, Ordering},
    },
};

use super::{
    index::Index,
    tuning::{Ranker, Tuning},
};
use crate::catalog::Catalog;

/// What builds the model's index: `Index::build_with_model`, handed in by
/// `construct.rs` (which queues the builds) so that this file does not call
/// back into it. `None` if the model cannot be opened.
pub(super) type Build = fn(&Catalog, Ranker, Tuning) -> Option<Index>;

struct Job {
    slot: Weak<OnceLock<Index>>,
    catalog: Catalog,
    ranker: Ranker,
    tuning: Tuning,
    build: Build,
}

struct Line {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
}

static LINE: OnceLock<Result<Arc<Line>, String>> = OnceLock::new();

/// Set once a build found that the model cannot be opened: every later
/// one would fail too, so nobody should wait for a model index then.
static GAVE_UP: AtomicBool = AtomicBool::new(false);

/// Whether the model's indexes will never come (the model cannot be opened).
pub(super) fn gave_up() -> bool {
    GAVE_UP.load(Ordering::Acquire)
}

/// Puts a build for `slot` in line; an error if the thread cannot be
/// started (the caller then builds in place).
pub(super) fn queue(
    slot: &Arc<OnceLock<Index>>,
    catalog: &Catalog,
    ranker: Ranker,
    tuning: Tuning,
    build: Build,
) -> Result<(), String> {
    let line = LINE
        .get_or_init(|| {
            let line = Arc::new(Line {
                jobs: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
            });
            let worker = Arc::clone(&line);
            std::thread::Builder::new()
                .name("zenmode-model-index".into())
                .spawn(move || work(&worker))
                .map(|_| line)
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)?;
    let mut jobs = line.jobs.lock().unwrap_or_else(PoisonError::into_inner);
    // Jobs whose index is gone would only be skipped later; dropping
    // them now keeps their catalogs from waiting in memory.
    jobs.retain(|job| job.slot.strong_count() > 0);
    jobs.push_back(Job {
        slot: Arc::downgrade(slot),
        catalog: catalog.clone(),
        ranker,
        tuning,
        build,
    });
    line.ready.notify_one();
    Ok(())
}

fn work(line: &Line) {
    loop {
        let job = {
            let mut jobs = line.jobs.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                match jobs.pop_front() {
                    Some(job) => break job,
                    None => {
                        jobs = line
                            .ready
                            .wait(jobs)
                            .unwrap_or_else(PoisonError::into_inner)
                    }
                }
            }
        };
        if job.slot.strong_count() == 0 {
            continue;
        }
        let started = std::time::Instant::now();
        let Some(built) = (job.build)(&job.catalog, job.ranker, job.tuning) else {
            GAVE_UP.store(true, Ordering::Release);
            continue;
        };
        // What building took and left: the texts' batches, their scratch.
        crate::platform::pages::return_freed_heap();
        if let Some(slot) = job.slot.upgrade() {
            let _ = slot.set(built);
            tracing::info!(
                modes = job.catalog.len(),
                seconds = started.elapsed().as_secs_f32(),
                "the embedding model's index is ready"
            );
        }
    }
}
