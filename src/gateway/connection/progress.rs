//! Where an upstream's progress notifications go: the call whose request
//! carried the token.
//!
//! rmcp picks a request's progress token as it sends the request, so a call
//! learns its token only once the request is on its way. A quick server
//! (one that reports progress as soon as a call arrives) can be heard from
//! before the call has noted its token; those notifications are kept a
//! moment and handed over when the call notes it, instead of being lost.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use rmcp::model::{ProgressNotificationParam, ProgressToken};

use crate::call::ProgressSink;

/// How many notifications for tokens no call has noted are kept, at most
/// (their messages are already stripped of the server's secrets).
const EARLY_KEPT: usize = 32;
/// How long such a notification is kept for its call to note its token.
const EARLY_FOR: Duration = Duration::from_secs(10);

/// The progress routes of one upstream connection.
#[derive(Clone, Default)]
pub(super) struct ProgressRoutes {
    inner: Arc<Mutex<Routes>>,
}

#[derive(Default)]
struct Routes {
    sinks: HashMap<ProgressToken, Arc<dyn ProgressSink>>,
    early: VecDeque<(Instant, ProgressNotificationParam)>,
}

impl ProgressRoutes {
    fn lock(&self) -> MutexGuard<'_, Routes> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that `token`'s progress goes to `sink`, and gives back what
    /// arrived for it before, oldest first.
    pub(super) fn route(
        &self,
        token: ProgressToken,
        sink: Arc<dyn ProgressSink>,
    ) -> Vec<ProgressNotificationParam> {
        let mut routes = self.lock();
        let mut early = Vec::new();
        routes.early.retain(|(_, params)| {
            let mine = params.progress_token == token;
            if mine {
                early.push(params.clone());
            }
            !mine
        });
        routes.sinks.insert(token, sink);
        early
    }

    /// Forgets `token` once its call has ended.
    pub(super) fn unroute(&self, token: &ProgressToken) {
        self.lock().sinks.remove(token);
    }

    /// The sink of `params`'s token, or `None` when no call noted it yet
    /// (the notification is then kept for it, within bounds).
    pub(super) fn sink_of(
        &self,
        params: &ProgressNotificationParam,
    ) -> Option<Arc<dyn ProgressSink>> {
        let mut routes = self.lock();
        if let Some(sink) = routes.sinks.get(&params.progress_token) {
            return Some(sink.clone());
        }
        let now = Instant::now();
        routes
            .early
            .retain(|(at, _)| now.duration_since(*at) < EARLY_FOR);
        if routes.early.len() >= EARLY_KEPT {
            routes.early.pop_front();
        }
        routes.early.push_back((now, params.clone()));
        None
    }
}

/// Passes one notification on to its call's client, as the server sent it
/// (its message already stripped of the server's secrets).
pub(super) async fn pass_on(sink: &dyn ProgressSink, params: ProgressNotificationParam) {
    sink.report_detail(params.progress, params.total, params.message)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use rmcp::model::NumberOrString;

    /// A call's client, which hears nothing here: the tests read what
    /// the routes hand over.
    struct Client;

    #[async_trait]
    impl ProgressSink for Client {
        async fn report(&self, _progress: f64, _message: String) {}
    }

    fn token_of(token: &str) -> ProgressToken {
        ProgressToken(NumberOrString::String(token.into()))
    }

    fn progress(token: &str, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(token_of(token), progress)
    }

    #[test]
    fn progress_heard_before_its_call_noted_the_token_is_handed_over_in_order() {
        let routes = ProgressRoutes::default();
        assert!(routes.sink_of(&progress("7", 1.0)).is_none());
        assert!(routes.sink_of(&progress("8", 5.0)).is_none());
        assert!(routes.sink_of(&progress("7", 2.0)).is_none());
        let early = routes.route(token_of("7"), Arc::new(Client));
        let values: Vec<f64> = early.iter().map(|p| p.progress).collect();
        assert_eq!(values, [1.0, 2.0]);
        assert!(routes.sink_of(&progress("7", 3.0)).is_some());
        // Another token's stays kept for its own call, and is handed over once.
        assert_eq!(routes.route(token_of("8"), Arc::new(Client)).len(), 1);
        assert!(routes.route(token_of("8"), Arc::new(Client)).is_empty());
    }

    #[test]
    fn progress_after_its_call_ended_reaches_nobody_and_is_kept_within_a_bound() {
        let routes = ProgressRoutes::default();
        routes.route(token_of("0"), Arc::new(Client));
        routes.unroute(&token_of("0"));
        assert!(routes.sink_of(&progress("0", 1.0)).is_none());
        for n in 1..(EARLY_KEPT * 4) {
            routes.sink_of(&progress(&n.to_string(), 0.0));
        }
        assert_eq!(routes.lock().early.len(), EARLY_KEPT);
        // The oldest went first.
        assert!(routes.route(token_of("0"), Arc::new(Client)).is_empty());
    }
}
