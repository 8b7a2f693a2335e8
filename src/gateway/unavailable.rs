//! What the model cannot reach, and why, in one short line
//! (`Unavailable`): a server still starting or failed (told by the last
//! line of its stderr when there is one), a bad entry, a broken upstreams
//! file.

/// The longest reason shown to the model for one unavailable server.
const MAX_REASON_CHARS: usize = 160;

/// Something the model cannot reach, and why, in one line.
#[derive(Debug, Clone)]
pub(super) struct Unavailable {
    /// Mode names of this server start with `<prefix>__`.
    pub(super) prefix: Option<String>,
    pub(super) line: String,
    /// Still waiting for the first answer (start-up may wait for these).
    pub(super) starting: bool,
}

/// A start failure as the model needs it: the last line the server wrote
/// on stderr when there is one (it usually says what is wrong), else the
/// message without the server's name.
pub(super) fn failure_in_brief(server: &str, message: &str) -> String {
    const STDERR: &str = "its stderr ended with: ";
    if let Some(at) = message.find(STDERR) {
        let tail = &message[at + STDERR.len()..];
        // The tail's lines are joined with " | ".
        if let Some(last) = tail
            .rsplit(" | ")
            .map(str::trim)
            .find(|line| !line.is_empty())
        {
            return last.to_owned();
        }
    }
    message
        .trim_start_matches(&format!("server {server:?} "))
        .to_owned()
}

/// `line` cut to [`MAX_REASON_CHARS`], on one line.
pub(super) fn short(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_REASON_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_failure_is_told_by_the_last_stderr_line_or_without_the_name() {
        let with_stderr = "server \"git\" did not complete the MCP handshake: closed; its stderr ended with: Traceback | ModuleNotFoundError: no git";
        assert_eq!(
            failure_in_brief("git", with_stderr),
            "ModuleNotFoundError: no git"
        );
        assert_eq!(
            failure_in_brief("git", "server \"git\" did not finish starting within 30s"),
            "did not finish starting within 30s"
        );
        let long = "x".repeat(500);
        assert_eq!(short(&long).chars().count(), MAX_REASON_CHARS);
        assert_eq!(short("a\n  b"), "a b");
    }
}
