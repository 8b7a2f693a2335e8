//! A stdio upstream's stderr: read as bytes without ever blocking the
//! server (a line without an end keeps only its last bytes), logged with
//! the server's name and its secrets hidden at a bounded pace, copied to
//! its log file for a serving zenmode, and its last lines kept to explain
//! a failure.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

use tokio::io::{AsyncBufReadExt, BufReader};

use super::upstream::Upstream;
use crate::gateway::{config::Redactor, status_file::StderrLog};

/// Lines of an upstream's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 12;

/// Characters of one stderr line that reach the log.
const STDERR_LINE_CHARS: usize = 400;

/// Bytes of one stderr line held while reading it: a line without an end
/// keeps only its last bytes, so a flood costs this much at most.
const STDERR_LINE_KEPT_BYTES: usize = 16 * 1024;

impl Upstream {
    /// Logs the server's stderr line by line until it closes. Reads bytes,
    /// never text: invalid UTF-8 is replaced, not a reason to stop (a pipe
    /// left unread would block the server, a closed one would kill it). A
    /// line without an end keeps only its last [`STDERR_LINE_KEPT_BYTES`].
    pub(super) fn drain_stderr(&self, stderr: tokio::process::ChildStderr) {
        let tail = self.stderr_tail.clone();
        let redactor = self.redactor.clone();
        let server = self.name().to_owned();
        let log = self.recorder.as_ref().map(|recorder| {
            let dirs = self.dirs.clone();
            let name = server.clone();
            recorder.log.get_or_init(|| StderrLog::open(&dirs, &name));
            recorder.log.clone()
        });
        let sink = move |line: &str| {
            if let Some(Some(log)) = log.as_ref().and_then(|log| log.get()) {
                log.line(line);
            }
        };
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = BoundedLine::default();
            let mut pace = StderrPace::default();
            loop {
                let (consumed, ended) = match reader.fill_buf().await {
                    Ok([]) | Err(_) => break,
                    Ok(bytes) => match bytes.iter().position(|&b| b == b'\n') {
                        Some(at) => {
                            line.push(&bytes[..at]);
                            (at + 1, true)
                        }
                        None => {
                            line.push(bytes);
                            (bytes.len(), false)
                        }
                    },
                };
                reader.consume(consumed);
                if !ended {
                    continue;
                }
                // A flood of short lines costs a log event each: past the
                // pace they are only counted, and the count is logged.
                match pace.allow(Instant::now()) {
                    Some(left_out) => {
                        if left_out > 0 {
                            sink(&log_stderr_line(
                                &server,
                                &redactor,
                                &tail,
                                left_out_note(left_out),
                            ));
                        }
                        sink(&log_stderr_line(&server, &redactor, &tail, line.take()));
                    }
                    None => line.discard(),
                }
            }
            if !line.is_empty() && pace.allow(Instant::now()).is_some() {
                sink(&log_stderr_line(&server, &redactor, &tail, line.take()));
            }
            if pace.left_out > 0 {
                sink(&log_stderr_line(
                    &server,
                    &redactor,
                    &tail,
                    left_out_note(pace.left_out),
                ));
            }
        });
    }

    /// The end of the server's stderr, for error messages.
    pub(super) fn stderr_note(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("; its stderr ended with: {}", lines.join(" | "))
        }
    }
}

/// One stderr line being read: at most [`STDERR_LINE_KEPT_BYTES`] of it,
/// its end, and how many bytes before that were dropped.
#[derive(Default)]
struct BoundedLine {
    kept: Vec<u8>,
    dropped: u64,
}

impl BoundedLine {
    fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= STDERR_LINE_KEPT_BYTES {
            self.dropped += (self.kept.len() + bytes.len() - STDERR_LINE_KEPT_BYTES) as u64;
            self.kept.clear();
            self.kept
                .extend_from_slice(&bytes[bytes.len() - STDERR_LINE_KEPT_BYTES..]);
            return;
        }
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > STDERR_LINE_KEPT_BYTES {
            let excess = self.kept.len() - STDERR_LINE_KEPT_BYTES;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped == 0
    }

    /// Forgets the line without reading it as text.
    fn discard(&mut self) {
        self.kept.clear();
        self.dropped = 0;
    }

    /// The line as text (invalid UTF-8 replaced), with a note of what was
    /// cut; starts over.
    fn take(&mut self) -> String {
        let dropped = std::mem::take(&mut self.dropped);
        let kept = std::mem::take(&mut self.kept);
        let text = String::from_utf8_lossy(&kept);
        let text = text.trim_end_matches('\r');
        if dropped == 0 {
            return text.to_owned();
        }
        // The cut may split a secret: start the kept part at a word boundary.
        let start = text
            .char_indices()
            .take(256)
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8());
        let cut = dropped + start as u64;
        format!("[{cut} bytes cut] {}", &text[start..])
    }
}

/// Logs one stderr line and keeps it in the tail; returns it as logged
/// (secrets hidden, cut to [`STDERR_LINE_CHARS`]) for the log file.
/// How many stderr lines of one server are logged each second; the rest
/// are counted and the count logged with the next line let through.
const STDERR_LINES_PER_SECOND: u32 = 100;

/// The pace of one server's stderr lines in the log.
#[derive(Default)]
struct StderrPace {
    window: Option<Instant>,
    used: u32,
    left_out: u64,
}

impl StderrPace {
    /// `Some(left out before this line)` when the line may be logged.
    fn allow(&mut self, now: Instant) -> Option<u64> {
        if self
            .window
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(1))
        {
            self.window = Some(now);
            self.used = 0;
        }
        if self.used < STDERR_LINES_PER_SECOND {
            self.used += 1;
            Some(std::mem::take(&mut self.left_out))
        } else {
            self.left_out += 1;
            None
        }
    }
}

fn left_out_note(count: u64) -> String {
    format!(
        "[{count} stderr lines left out: the server wrote more than {STDERR_LINES_PER_SECOND} a second]"
    )
}

fn log_stderr_line(
    server: &str,
    redactor: &Redactor,
    tail: &Mutex<VecDeque<String>>,
    line: String,
) -> String {
    let line: String = redactor
        .redact(&line)
        .chars()
        .take(STDERR_LINE_CHARS)
        .collect();
    tracing::info!(target: "zenmode::upstream::stderr", server, "[{server}] {line}");
    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
    if tail.len() == STDERR_TAIL_LINES {
        tail.pop_front();
    }
    tail.push_back(line.clone());
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stderr_flood_is_paced_and_counted() {
        let mut pace = StderrPace::default();
        let start = Instant::now();
        let allowed = (0..250).filter(|_| pace.allow(start).is_some()).count();
        assert_eq!(allowed, STDERR_LINES_PER_SECOND as usize);
        assert_eq!(pace.allow(start + Duration::from_secs(1)), Some(150));
    }
}
