//! Logging that can neither stop nor block the server.
//!
//! Log lines go to stderr through a bounded queue and one writer thread.
//! When the queue is full (a client that pipes stderr and never reads it)
//! lines are dropped and counted, instead of stalling the request that
//! logged them; when stderr is closed, write errors are ignored instead of
//! ending the process. stdout is never touched.

use std::{
    io::Write,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc::{self, SyncSender, TrySendError},
    },
};

use tracing_subscriber::fmt::MakeWriter;

/// How many log lines may wait for the writer thread.
const QUEUE_LINES: usize = 1024;

/// A `MakeWriter` that hands each log line to the writer thread.
#[derive(Clone)]
pub struct QueuedStderr {
    queue: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl QueuedStderr {
    /// Starts the writer thread; it ends when every writer is gone.
    pub fn start() -> Self {
        let (queue, lines) = mpsc::sync_channel::<Vec<u8>>(QUEUE_LINES);
        let dropped = Arc::new(AtomicU64::new(0));
        let counted = dropped.clone();
        let spawned = std::thread::Builder::new()
            .name("zenmode-log".into())
            .spawn(move || {
                let mut stderr = std::io::stderr();
                for line in lines {
                    let lost = counted.swap(0, Ordering::Relaxed);
                    if lost > 0 {
                        let note = format!(
                            "zenmode: {lost} log lines dropped (stderr was not read fast enough)\n"
                        );
                        let _ = stderr.write_all(note.as_bytes());
                    }
                    // A closed or broken stderr must not end the server.
                    let _ = stderr.write_all(&line);
                }
            });
        if spawned.is_err() {
            // Without a writer thread every line is dropped, counted, and
            // the server keeps serving.
            dropped.fetch_add(1, Ordering::Relaxed);
        }
        QueuedStderr { queue, dropped }
    }

    /// Lines dropped since the writer last caught up.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// One log event's bytes, queued when the event is complete.
pub struct LineWriter {
    line: Vec<u8>,
    target: QueuedStderr,
}

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.line);
        match self.target.queue.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.target.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<'a> MakeWriter<'a> for QueuedStderr {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter {
            line: Vec::with_capacity(256),
            target: self.clone(),
        }
    }
}

/// Installs the subscriber: `RUST_LOG` (default `zenmode=info,rmcp=warn`),
/// plain text, to the queued stderr.
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("zenmode=info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(QueuedStderr::start())
        .with_ansi(false)
        .try_init();
}

/// Lets through at most `per_second` events a second and counts the rest,
/// so a flood of bad input cannot turn into a flood of log lines.
pub struct RateLimit {
    per_second: u32,
    window: std::sync::Mutex<(std::time::Instant, u32, u64)>,
}

impl RateLimit {
    pub fn new(per_second: u32) -> Self {
        RateLimit {
            per_second,
            window: std::sync::Mutex::new((std::time::Instant::now(), 0, 0)),
        }
    }

    /// `Some(suppressed)` when this event may be logged, with how many were
    /// held back since the last one that was; `None` to stay quiet.
    pub fn admit(&self) -> Option<u64> {
        let mut window = self
            .window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (started, admitted, suppressed) = &mut *window;
        if started.elapsed() >= std::time::Duration::from_secs(1) {
            *started = std::time::Instant::now();
            *admitted = 0;
        }
        if *admitted < self.per_second {
            *admitted += 1;
            Some(std::mem::take(suppressed))
        } else {
            *suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limit_admits_a_burst_then_counts() {
        let limit = RateLimit::new(3);
        assert_eq!(limit.admit(), Some(0));
        assert_eq!(limit.admit(), Some(0));
        assert_eq!(limit.admit(), Some(0));
        assert_eq!(limit.admit(), None);
        assert_eq!(limit.admit(), None);
    }

    #[test]
    fn a_full_queue_drops_lines_instead_of_blocking() {
        let (queue, _lines) = mpsc::sync_channel::<Vec<u8>>(2);
        let target = QueuedStderr {
            queue,
            dropped: Arc::new(AtomicU64::new(0)),
        };
        for _ in 0..5 {
            let mut writer = target.make_writer();
            writer.write_all(b"a line\n").unwrap();
        }
        assert_eq!(target.dropped(), 3);
    }
}
