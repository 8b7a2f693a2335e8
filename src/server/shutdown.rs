//! Process shutdown: Ctrl-C or SIGTERM cancels one root token, and every
//! session holds a child of it, so one signal ends them all.

use tokio_util::sync::CancellationToken;

/// Returns a token cancelled on the first shutdown signal. The signals are
/// taken over before this returns (not in the task that waits for them),
/// so a signal that arrives as soon as the server is ready is never left to
/// the default action, which would kill the process mid-reply.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    let signals = Signals::listen();
    tokio::spawn(async move {
        signals.wait().await;
        tracing::info!("shutdown signal received");
        trigger.cancel();
    });
    token
}

/// The shutdown signals, registered with the runtime.
struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn listen() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Signals {
                terminate: signal(SignalKind::terminate()).ok(),
                interrupt: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Signals {}
        }
    }

    async fn wait(self) {
        #[cfg(unix)]
        {
            let Signals {
                terminate,
                interrupt,
            } = self;
            let next = |signal: Option<tokio::signal::unix::Signal>| async move {
                match signal {
                    Some(mut signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = next(terminate) => {}
                _ = next(interrupt) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
