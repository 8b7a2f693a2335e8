//! Logging that can neither end nor stall the server.
//!
//! Logs go to stderr, which the server does not control: a client may close
//! it (writes then fail with `EPIPE`, and `eprintln!` would panic) or never
//! read it (writes then block once the pipe is full). So log lines are
//! handed to a bounded queue and written by a thread of their own:
//! - the serving path only ever does a non-blocking `try_send`; when the
//!   queue is full the line is dropped and counted, and the writer reports
//!   the count with its next line;
//! - write errors are ignored;
//! - at exit, [`Guard`] waits a moment (at most [`FLUSH_WAIT`]) for the
//!   queue to drain, and never longer.
//!
//! Every line, whoever emits it (zenmode, rmcp, hyper), passes through
//! [`crate::platform::redact::for_log`] before it is queued, so a secret an upstream
//! echoes into a library's error line never reaches stderr.
//!
//! [`RateLimit`] keeps one noisy call site (a client sending thousands of
//! malformed lines) from flooding the log.

use std::{
    io::{self, Write},
    sync::{
        Mutex, OnceLock, PoisonError,
        atomic::{AtomicU64, Ordering},
        mpsc::{self, Receiver, SyncSender, TrySendError},
    },
    thread,
    time::{Duration, Instant},
};

use tracing_subscriber::{fmt::MakeWriter, layer::SubscriberExt, util::SubscriberInitExt};

/// Lines held while the writer is behind; beyond this they are dropped.
const QUEUE_LINES: usize = 1024;

/// Longest wait at exit for queued lines to reach stderr.
pub const FLUSH_WAIT: Duration = Duration::from_millis(250);

/// rmcp's transport worker is off: when a remote upstream fails it logs the
/// failure as a Rust structure, and the gateway already reports it in words
/// (see `gateway::http_errors`).
const DEFAULT_FILTER: &str = "zenmode=info,rmcp=warn,rmcp::transport::worker=off";

/// The default of commands that print their own report (`setup`, `doctor`,
/// `status`, `upstream ...`): the servers they start log at INFO (their
/// stderr among it), and those lines fell between the report's own.
pub const QUIET_FILTER: &str = "zenmode=warn,rmcp=warn,rmcp::transport::worker=off";

enum Message {
    Line(Vec<u8>),
    /// Acknowledged once every earlier line was written.
    Flush(SyncSender<()>),
}

/// The sending side of the log queue.
#[derive(Clone)]
struct Queue {
    sender: SyncSender<Message>,
}

/// Lines dropped because the queue was full, not yet reported.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// The process's queue, once [`init`] ran.
static QUEUE: OnceLock<Queue> = OnceLock::new();

impl Queue {
    fn start() -> Queue {
        let (sender, receiver) = mpsc::sync_channel(QUEUE_LINES);
        let spawned = thread::Builder::new()
            .name("zenmode-log".to_owned())
            .spawn(move || write_lines(receiver, &mut io::stderr()));
        if let Err(error) = spawned {
            // Without the thread every line is dropped: still never blocks.
            let _ = writeln!(io::stderr(), "zenmode: logging is off: {error}");
        }
        Queue { sender }
    }

    /// Never blocks: a full queue drops the line. Every line is cleaned of
    /// known secrets and URL credentials first, whoever wrote it.
    fn push(&self, line: Vec<u8>) {
        let line = without_secrets(line);
        match self.sender.try_send(Message::Line(line)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// `line` with [`crate::platform::redact::for_log`] applied.
fn without_secrets(line: Vec<u8>) -> Vec<u8> {
    match crate::platform::redact::for_log(&String::from_utf8_lossy(&line)) {
        Some(cleaned) => cleaned.into_bytes(),
        None => line,
    }
}

/// The writer thread: writes each line, ignoring errors, and reports lines
/// that were dropped before it.
fn write_lines(receiver: Receiver<Message>, out: &mut impl Write) {
    while let Ok(message) = receiver.recv() {
        match message {
            Message::Line(line) => {
                let dropped = DROPPED.swap(0, Ordering::Relaxed);
                if dropped > 0 {
                    let _ = writeln!(
                        out,
                        "zenmode: {dropped} log lines were dropped (stderr was not being read fast enough)"
                    );
                }
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
            Message::Flush(done) => {
                let _ = done.try_send(());
            }
        }
    }
}

/// A tracing writer: collects one formatted event and queues it on drop.
pub struct LineWriter {
    queue: Option<Queue>,
    line: Vec<u8>,
}

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if let Some(queue) = &self.queue
            && !self.line.is_empty()
        {
            queue.push(std::mem::take(&mut self.line));
        }
    }
}

/// Hands tracing a [`LineWriter`] per event.
#[derive(Clone)]
pub struct QueueWriter;

impl<'a> MakeWriter<'a> for QueueWriter {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter {
            queue: QUEUE.get().cloned(),
            line: Vec::new(),
        }
    }
}

/// Flushes the queue (briefly) when dropped; keep it alive in `main`.
#[must_use = "dropping the guard at once loses the last log lines"]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        flush(FLUSH_WAIT);
    }
}

/// Waits at most `wait` for the lines queued so far to be written.
pub fn flush(wait: Duration) {
    let Some(queue) = QUEUE.get() else { return };
    let deadline = Instant::now() + wait;
    let (done, acknowledged) = mpsc::sync_channel(1);
    let mut message = Message::Flush(done);
    loop {
        match queue.sender.try_send(message) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                message = back;
                thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
    let _ = acknowledged.recv_timeout(deadline.saturating_duration_since(Instant::now()));
}

/// Sets up `tracing` to log to stderr through the queue. `RUST_LOG` sets
/// the filter (default [`DEFAULT_FILTER`]).
pub fn init() -> Guard {
    init_with(DEFAULT_FILTER)
}

/// [`init`] with another default filter (`RUST_LOG` still wins).
pub fn init_with(default_filter: &str) -> Guard {
    QUEUE.get_or_init(Queue::start);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(QueueWriter)
        .with_ansi(false)
        .finish()
        .with(ClientLeftQuietly)
        .try_init();
    Guard(())
}

/// rmcp logs at ERROR when a session ends while answers to its requests are
/// still on their way ("... during drain"): over HTTP, a client that reads
/// what it needs and closes its session (`claude mcp list` does this on
/// every run) leaves such answers behind. Nobody is waiting for them, so
/// nothing needs a person's attention: those two lines are not logged.
struct ClientLeftQuietly;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClientLeftQuietly {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        let metadata = event.metadata();
        if *metadata.level() != tracing::Level::ERROR || metadata.target() != "rmcp::service" {
            return true;
        }
        let mut message = MessageText(String::new());
        event.record(&mut message);
        !is_drain_after_client_left(&message.0)
    }
}

fn is_drain_after_client_left(message: &str) -> bool {
    message.contains("during drain")
}

struct MessageText(String);

impl tracing::field::Visit for MessageText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Prints one line on stderr the same way as logs (queued, never blocking,
/// never panicking). Before [`init`], writes directly and ignores errors.
pub fn print(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    match QUEUE.get() {
        Some(queue) => queue.push(bytes),
        None => {
            let _ = io::stderr().write_all(&without_secrets(bytes));
        }
    }
}

/// Lets through at most `per_second` events a second from one call site
/// and counts the rest, for the next event let through to report.
///
/// ```
/// static REJECTED: zenmode::server::logging::RateLimit = zenmode::server::logging::RateLimit::new(10);
/// if let Some(suppressed) = REJECTED.allow() {
///     tracing::warn!(suppressed, "rejected a message");
/// }
/// ```
#[derive(Debug)]
pub struct RateLimit {
    per_second: u32,
    state: Mutex<RateState>,
}

#[derive(Debug)]
struct RateState {
    window: Option<Instant>,
    used: u32,
    suppressed: u64,
}

impl RateLimit {
    pub const fn new(per_second: u32) -> Self {
        RateLimit {
            per_second,
            state: Mutex::new(RateState {
                window: None,
                used: 0,
                suppressed: 0,
            }),
        }
    }

    /// `Some(suppressed)` when this event may be logged, with how many were
    /// held back since the last one that was; `None` to hold it back.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = state
            .window
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1));
        if fresh {
            state.window = Some(now);
            state.used = 0;
        }
        if state.used < self.per_second {
            state.used += 1;
            Some(std::mem::take(&mut state.suppressed))
        } else {
            state.suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_leaving_before_its_answers_is_not_an_error_line() {
        use std::sync::Arc;
        #[derive(Clone, Default)]
        struct Captured(Arc<Mutex<Vec<u8>>>);
        impl Write for Captured {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish()
            .with(ClientLeftQuietly);
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "rmcp::service", error = "closed", "failed to send pending response during drain");
            tracing::error!(target: "rmcp::service", error = "closed", "response send task failed during drain");
            tracing::error!(target: "rmcp::service", "some other failure");
            tracing::error!(target: "zenmode::x", "an error of ours during drain");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("pending response"), "{text}");
        assert!(!text.contains("send task"), "{text}");
        assert!(text.contains("some other failure"), "{text}");
        assert!(text.contains("an error of ours"), "{text}");
    }

    use super::*;

    #[test]
    fn rate_limit_counts_what_it_holds_back() {
        let limit = RateLimit::new(3);
        let start = Instant::now();
        let first: Vec<Option<u64>> = (0..5).map(|_| limit.allow_at(start)).collect();
        assert_eq!(first, [Some(0), Some(0), Some(0), None, None]);
        // The next window lets events through again and reports the two.
        let later = start + Duration::from_secs(1);
        assert_eq!(limit.allow_at(later), Some(2));
        assert_eq!(limit.allow_at(later), Some(0));
    }

    #[test]
    fn the_writer_ignores_write_errors_and_reports_drops() {
        struct Broken(Vec<u8>, usize);
        impl Write for Broken {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.1 += 1;
                if self.1 == 1 {
                    return Err(io::Error::from(io::ErrorKind::BrokenPipe));
                }
                self.0.extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let (sender, receiver) = mpsc::sync_channel(4);
        sender.send(Message::Line(b"lost\n".to_vec())).unwrap();
        sender.send(Message::Line(b"kept\n".to_vec())).unwrap();
        drop(sender);
        let mut out = Broken(Vec::new(), 0);
        write_lines(receiver, &mut out);
        assert_eq!(out.0, b"kept\n");
    }
}
