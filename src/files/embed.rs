//! Files embedded into a prompt ([`FileAccess::embed`]): read in the
//! caller's order of priority (directories expanded), binary files skipped,
//! each file line-numbered in a block naming its path, and no file added
//! once one did not fit the token budget; what was left out is summarised
//! ([`LeftOut`]) rather than listed whole.

use std::{
    collections::HashSet,
    io::{self, Read},
    path::{Path, PathBuf},
};

use super::{
    confine::{FileAccess, open_confined},
    error::{SkipReason, SkippedFile},
    expand::Found,
    tokens::estimate_tokens,
};

/// How many leading bytes are searched for a NUL byte to call a file binary
/// (git's heuristic).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Smallest width of the line-number column (wider files get a wider one).
const LINE_NUMBER_WIDTH: usize = 4;

/// How many left-out files a summary names one by one.
pub const LEFT_OUT_SAMPLE: usize = 20;

impl Embedded {
    /// The files left out, summarised: how many, how many for each reason,
    /// and the first [`LEFT_OUT_SAMPLE`] by name. A directory of 100,000
    /// files must not turn into a 100,000-line reply or prompt.
    pub fn left_out_summary(&self) -> Option<LeftOut> {
        if self.skipped.is_empty() {
            return None;
        }
        let mut by_reason: Vec<(String, usize)> = Vec::new();
        for skipped in &self.skipped {
            // Unreadable files are counted together, whatever the message.
            let reason = match &skipped.reason {
                SkipReason::Unreadable(_) => "unreadable".to_owned(),
                other => other.to_string(),
            };
            match by_reason.iter_mut().find(|(known, _)| *known == reason) {
                Some((_, count)) => *count += 1,
                None => by_reason.push((reason, 1)),
            }
        }
        Some(LeftOut {
            count: self.skipped.len(),
            by_reason,
            sample: self
                .skipped
                .iter()
                .take(LEFT_OUT_SAMPLE)
                .map(ToString::to_string)
                .collect(),
        })
    }
}

/// A summary of the files an embedding left out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeftOut {
    pub count: usize,
    /// Each reason with how many files it left out, in order of first use.
    pub by_reason: Vec<(String, usize)>,
    /// The first few, each saying why.
    pub sample: Vec<String>,
}

impl LeftOut {
    /// The summary as prompt text.
    pub fn to_markdown(&self) -> String {
        let mut text = self
            .sample
            .iter()
            .map(|line| format!("- {line}"))
            .collect::<Vec<_>>()
            .join("\n");
        if self.count > self.sample.len() {
            let reasons: Vec<String> = self
                .by_reason
                .iter()
                .map(|(reason, count)| format!("{count} {reason}"))
                .collect();
            text.push_str(&format!(
                "\n- ... {} files in all ({})",
                self.count,
                reasons.join(", ")
            ));
        }
        text
    }
}

/// One embedded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedFile {
    /// The canonical path (also the one shown to the model).
    pub path: PathBuf,
    pub lines: usize,
    /// Estimated tokens of this file's block in [`Embedded::text`].
    pub tokens: usize,
}

/// The result of [`FileAccess::embed`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Embedded {
    /// The line-numbered blocks of every embedded file, in order.
    pub text: String,
    pub files: Vec<EmbeddedFile>,
    pub skipped: Vec<SkippedFile>,
    /// Sum of the files' estimates (never below the estimate of `text`).
    pub tokens: usize,
}

impl FileAccess {
    /// Reads `paths` in the given order (the caller orders them by
    /// priority), expanding directories (recursively, sorted, honouring
    /// `.gitignore`, `.ignore` and hidden files), and returns the files
    /// line-numbered.
    ///
    /// Binary files are skipped and reported. Once a file does not fit in
    /// `budget_tokens`, no further file is added (they are reported as over
    /// budget and not read), so a lower-priority file never displaces a
    /// higher-priority one. A file reached twice is embedded once.
    pub fn embed(&self, paths: &[String], budget_tokens: usize) -> Embedded {
        let mut embedder = Embedder {
            roots: self.roots.clone(),
            out: Embedded::default(),
            budget: budget_tokens,
            spent: false,
            seen: HashSet::new(),
        };
        for path in paths {
            let canonical = match self.resolve(path) {
                Ok(canonical) => canonical,
                Err(error) => {
                    embedder.skip(path.clone(), error.into());
                    continue;
                }
            };
            if canonical.is_dir() {
                for found in self.expand_dir(&canonical) {
                    match found {
                        Found::File(file) => embedder.add(&file, None),
                        Found::Skipped(skipped) => embedder.out.skipped.push(skipped),
                    }
                }
            } else {
                embedder.add(&canonical, Some(path));
            }
        }
        embedder.out
    }
}

/// The state of one [`FileAccess::embed`] call.
struct Embedder {
    /// The allowed roots, to check each file actually opened.
    roots: Vec<PathBuf>,
    out: Embedded,
    budget: usize,
    /// Set once a file did not fit: later files are not read.
    spent: bool,
    seen: HashSet<PathBuf>,
}

impl Embedder {
    fn skip(&mut self, path: String, reason: SkipReason) {
        self.out.skipped.push(SkippedFile { path, reason });
    }

    /// Embeds the canonical, checked file `path`; `given` is the caller's
    /// spelling, used when reporting a skip.
    fn add(&mut self, path: &Path, given: Option<&String>) {
        if !self.seen.insert(path.to_path_buf()) {
            return;
        }
        let shown = given.cloned().unwrap_or_else(|| path.display().to_string());
        if self.spent {
            return self.skip(shown, SkipReason::OverBudget);
        }
        let remaining = self.budget.saturating_sub(self.out.tokens);
        match read_text(path, &self.roots, remaining) {
            Ok(content) => {
                let (block, lines) = number_file(path, &content);
                let tokens = estimate_tokens(&block);
                if tokens > remaining {
                    self.spent = true;
                    return self.skip(shown, SkipReason::OverBudget);
                }
                self.out.text.push_str(&block);
                self.out.tokens += tokens;
                self.out.files.push(EmbeddedFile {
                    path: path.to_path_buf(),
                    lines,
                    tokens,
                });
            }
            Err(reason) => {
                if reason == SkipReason::OverBudget {
                    self.spent = true;
                }
                self.skip(shown, reason);
            }
        }
    }
}

/// Reads a regular file as UTF-8 text, reading no more than a file that
/// could fit in `remaining_tokens` can hold.
fn read_text(
    path: &Path,
    roots: &[PathBuf],
    remaining_tokens: usize,
) -> Result<String, SkipReason> {
    let unreadable = |error: io::Error| SkipReason::Unreadable(error.to_string());
    // A character is at most 4 bytes and a token at least 4 characters in
    // our estimate, so a file over 16 bytes per remaining token cannot fit.
    // At least the sniffed prefix is read so binary files are reported as
    // binary.
    let limit = remaining_tokens
        .saturating_mul(16)
        .max(BINARY_SNIFF_BYTES)
        .saturating_add(1);
    let mut bytes = Vec::new();
    open_confined(path, roots)
        .and_then(|file| file.take(limit as u64).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    let sniffed = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniffed.contains(&0) {
        return Err(SkipReason::Binary);
    }
    if bytes.len() >= limit {
        return Err(SkipReason::OverBudget);
    }
    String::from_utf8(bytes).map_err(|_| SkipReason::Binary)
}

/// Formats a file block: a header naming the path, each line as
/// `   12│ text` (the number right-aligned to a width fitting the last
/// line, at least 4), and an end marker. Returns the block and its line
/// count.
fn number_file(path: &Path, content: &str) -> (String, usize) {
    use std::fmt::Write as _;

    let lines = content.lines().count();
    let width = lines.to_string().len().max(LINE_NUMBER_WIDTH);
    let shown = path.display();
    let mut block = String::with_capacity(content.len() + lines * (width + 3) + 128);
    let _ = writeln!(block, "--- BEGIN FILE: {shown} ---");
    for (index, line) in content.lines().enumerate() {
        let _ = writeln!(block, "{:>width$}│ {line}", index + 1);
    }
    let _ = writeln!(block, "--- END FILE: {shown} ---");
    block.push('\n');
    (block, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_right_aligned() {
        let (block, lines) = number_file(Path::new("/x/y.rs"), "fn main() {}\r\n\nend\n");
        assert_eq!(lines, 3);
        assert_eq!(
            block,
            "--- BEGIN FILE: /x/y.rs ---\n   1│ fn main() {}\n   2│ \n   3│ end\n--- END FILE: /x/y.rs ---\n\n"
        );
        let long = "x\n".repeat(12_345);
        let (block, lines) = number_file(Path::new("/big"), &long);
        assert_eq!(lines, 12_345);
        assert!(block.contains("\n    1│ x\n"));
        assert!(block.contains("\n12345│ x\n"));
    }
}
