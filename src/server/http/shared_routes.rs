//! What a shared instance (`serve --shared`) serves besides `/mcp`: each
//! profile's sessions at `/p/NAME/mcp`, the dashboard, and a stop once no
//! client has been connected for a while.
//!
//! A profile's server is built on its first request and kept while the
//! profile stays as the profiles file says; a profile changed in the file
//! gets a new server on its next request (its old sessions are then
//! unknown, and their clients initialize again).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use super::{
    service::{HttpOptions, McpService, mcp_service},
    sessions::CappedSessions,
};
use crate::{
    gateway::profiles::{Profile, Profiles},
    server::ZenServer,
};

/// Makes the server of a profile (its name and definition).
pub type MakeProfileServer = Arc<dyn Fn(&str, &Profile) -> Result<ZenServer, String> + Send + Sync>;

/// What a shared instance serves besides `/mcp`.
pub struct SharedServing {
    pub profiles: ProfileRoutes,
    pub dashboard: Arc<crate::server::dashboard::Dashboard>,
    /// The instance stops once no connection has been open this long.
    pub idle_stop: Duration,
}

/// Each profile's MCP service, built on first use.
pub struct ProfileRoutes {
    file: PathBuf,
    make: MakeProfileServer,
    options: HttpOptions,
    shutdown: CancellationToken,
    built: Mutex<HashMap<String, Built>>,
}

struct Built {
    profile: Profile,
    mcp: McpService,
    sessions: Arc<CappedSessions>,
}

impl ProfileRoutes {
    /// The profiles of `file`, each served by a server `make` builds.
    pub fn new(
        file: PathBuf,
        make: MakeProfileServer,
        options: HttpOptions,
        shutdown: CancellationToken,
    ) -> Self {
        ProfileRoutes {
            file,
            make,
            options,
            shutdown,
            built: Mutex::default(),
        }
    }

    /// The MCP service of profile `name`; an error when there is no such
    /// profile (or its server cannot be built).
    pub(super) fn service(&self, name: &str) -> Result<(McpService, Arc<CappedSessions>), String> {
        let profiles = Profiles::load(&self.file)?;
        let profile = profiles.get(name)?;
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(current) = built.get(name)
            && current.profile == *profile
        {
            return Ok((current.mcp.clone(), current.sessions.clone()));
        }
        let server = (self.make)(name, profile)?;
        let (mcp, sessions) = mcp_service(server, &self.options, &self.shutdown);
        built.insert(
            name.to_owned(),
            Built {
                profile: profile.clone(),
                mcp: mcp.clone(),
                sessions: sessions.clone(),
            },
        );
        Ok((mcp, sessions))
    }
}

/// How many connections are open, and when that last changed.
#[derive(Default)]
pub(super) struct Occupancy {
    open: AtomicUsize,
    last_change: Mutex<Option<Instant>>,
}

impl Occupancy {
    pub(super) fn opened(&self) {
        self.open.fetch_add(1, Ordering::SeqCst);
        self.touch();
    }

    pub(super) fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
        self.touch();
    }

    fn touch(&self) {
        *self
            .last_change
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// How long no connection has been open (`None` while one is).
    fn idle_for(&self, started: Instant) -> Option<Duration> {
        if self.open.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let since = self
            .last_change
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or(started);
        Some(since.elapsed())
    }
}

/// Ends a shared instance once no client has been connected for
/// `idle_stop`: a bridged client keeps a stream open for as long as it
/// runs, so no connection means no client.
pub(super) async fn stop_when_idle(
    occupancy: Arc<Occupancy>,
    idle_stop: Duration,
    shutdown: CancellationToken,
) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if occupancy
            .idle_for(started)
            .is_some_and(|idle| idle >= idle_stop)
        {
            tracing::info!(
                idle_secs = idle_stop.as_secs(),
                "no client connected for the idle time: the shared instance stops"
            );
            shutdown.cancel();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_counts_idle_time_only_with_no_connection() {
        let occupancy = Occupancy::default();
        let started = Instant::now() - Duration::from_secs(5);
        assert!(occupancy.idle_for(started).unwrap() >= Duration::from_secs(5));
        occupancy.opened();
        assert!(occupancy.idle_for(started).is_none());
        occupancy.closed();
        assert!(occupancy.idle_for(started).unwrap() < Duration::from_secs(5));
    }
}
