//! Confined file access, and the embedding of files into prompts.
//!
//! Modes receive paths from the calling agent (`relevant_files`,
//! `absolute_file_paths`, ...) and embed those files for a model. The paths
//! come from outside, so every one is checked against the allowed roots
//! before anything is opened:
//!
//! - paths are canonicalized (symlinks and `..` resolved) and must lie under
//!   a root; relative paths are refused, because the server's working
//!   directory is not the agent's;
//! - files found by expanding a directory get the same check, so a symlink
//!   inside a root that points outside is refused;
//! - directories are walked by our own small walker rather than
//!   `ignore::WalkBuilder`, because the walker reads `.gitignore` files in
//!   every parent directory up to `/` (even with `parents(false)`), and
//!   nothing outside the roots may be read. The ignore files themselves are
//!   parsed and matched by the `ignore` crate.
//!
//! Token counts here are estimates ([`estimate_tokens`]): the real
//! tokenizers are never loaded on the serving path.
//!
//! All functions do blocking I/O; async callers run them in
//! `tokio::task::spawn_blocking`.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// How many leading bytes are searched for a NUL byte to call a file binary
/// (git's heuristic).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Directory expansion stops descending below this depth. Real trees are far
/// shallower; the limit only keeps a pathological tree from exhausting the
/// stack.
const MAX_WALK_DEPTH: usize = 64;

/// Smallest width of the line-number column (wider files get a wider one).
const LINE_NUMBER_WIDTH: usize = 4;

/// A cheap token estimate: a quarter of the characters, rounded up.
///
/// Good enough for budgets (English text and code average about four
/// characters per token) and free of any tokenizer, which is never loaded on
/// the serving path.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Splits a path list such as `ZEN_ALLOWED_ROOTS` (separated by `:` on unix,
/// `;` on Windows) into roots, dropping empty entries.
pub fn parse_root_list(value: &OsStr) -> Vec<PathBuf> {
    std::env::split_paths(value)
        .filter(|path| !path.as_os_str().is_empty())
        .collect()
}

/// Why a path cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error(
        "{path} is outside the allowed roots ({}); add its directory with --allow-root DIR or ZEN_ALLOWED_ROOTS",
        display_roots(roots)
    )]
    OutsideRoots { path: String, roots: Vec<PathBuf> },
    #[error("{path} does not exist")]
    Missing { path: String },
    #[error(
        "{path:?} is not an absolute path; send absolute paths (for example /home/me/project/src/main.rs)"
    )]
    Relative { path: String },
    #[error("{path} cannot be read: {message}")]
    Io { path: String, message: String },
    /// An allowed root (the working directory, `--allow-root` or
    /// `ZEN_ALLOWED_ROOTS`) cannot be used.
    #[error("allowed root {path} cannot be used: {message}")]
    Root { path: String, message: String },
}

fn display_roots(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|root| root.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a requested file was not embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    OutsideRoots,
    Missing,
    Relative,
    /// A NUL byte in the first 8 KiB, or invalid UTF-8.
    Binary,
    /// The token budget was spent before this file.
    OverBudget,
    /// Directory expansion does not follow symlinked directories (they can
    /// form cycles); the agent can list the target itself.
    SymlinkedDirectory,
    Unreadable(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutsideRoots => f.write_str("outside the allowed roots"),
            Self::Missing => f.write_str("does not exist"),
            Self::Relative => f.write_str("not an absolute path"),
            Self::Binary => f.write_str("binary file"),
            Self::OverBudget => f.write_str("over the token budget"),
            Self::SymlinkedDirectory => f.write_str("symbolic link to a directory, not followed"),
            Self::Unreadable(message) => write!(f, "unreadable: {message}"),
        }
    }
}

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

/// A file that was requested (or found in a requested directory) but not
/// embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// The path as given, or as found by directory expansion.
    pub path: String,
    pub reason: SkipReason,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.reason {
            SkipReason::OutsideRoots => {
                write!(f, "{path} is outside the allowed roots and was not read")
            }
            SkipReason::Missing => write!(f, "{path} does not exist"),
            SkipReason::Relative => {
                write!(f, "{path:?} is not an absolute path and was not read")
            }
            SkipReason::Binary => write!(f, "{path} is a binary file and was skipped"),
            SkipReason::OverBudget => {
                write!(
                    f,
                    "{path} was skipped because the file token budget was spent"
                )
            }
            SkipReason::SymlinkedDirectory => write!(
                f,
                "{path} is a symbolic link to a directory and was not followed; list its target to include it"
            ),
            SkipReason::Unreadable(message) => write!(f, "{path} could not be read: {message}"),
        }
    }
}

impl From<FileError> for SkipReason {
    fn from(error: FileError) -> Self {
        match error {
            FileError::OutsideRoots { .. } => Self::OutsideRoots,
            FileError::Missing { .. } => Self::Missing,
            FileError::Relative { .. } => Self::Relative,
            FileError::Io { message, .. } | FileError::Root { message, .. } => {
                Self::Unreadable(message)
            }
        }
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

/// File access confined to a set of allowed roots.
#[derive(Debug, Clone)]
pub struct FileAccess {
    /// Canonical, deduplicated; the working directory first.
    roots: Vec<PathBuf>,
}

impl FileAccess {
    /// Allows `cwd` plus `extra_roots` (from `--allow-root DIR` and
    /// `ZEN_ALLOWED_ROOTS`, see [`parse_root_list`]). Relative extra roots
    /// are taken relative to `cwd`. Each root is canonicalized; a root that
    /// is missing or not a directory is an error naming it, so a typo does
    /// not silently shrink what the agent may read.
    pub fn new(cwd: &Path, extra_roots: &[PathBuf]) -> Result<Self, FileError> {
        let mut roots: Vec<PathBuf> = Vec::with_capacity(1 + extra_roots.len());
        for root in
            std::iter::once(cwd.to_path_buf()).chain(extra_roots.iter().map(|r| cwd.join(r)))
        {
            let canonical = canonical_root(&root)?;
            if !roots.contains(&canonical) {
                roots.push(canonical);
            }
        }
        Ok(Self { roots })
    }

    /// The canonical allowed roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Canonicalizes `path` (resolving symlinks and `..`) and checks that it
    /// lies under a root. Relative paths are refused: tools send absolute
    /// paths.
    ///
    /// A missing path outside the roots is reported as outside, not as
    /// missing, so errors do not reveal what exists outside the roots.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, FileError> {
        let raw = Path::new(path);
        if path.is_empty() || !raw.is_absolute() {
            return Err(FileError::Relative {
                path: path.to_owned(),
            });
        }
        self.check(raw, path)
    }

    /// The check behind [`resolve`](Self::resolve), for an absolute path;
    /// `shown` names it in errors.
    fn check(&self, raw: &Path, shown: &str) -> Result<PathBuf, FileError> {
        match fs::canonicalize(raw) {
            Ok(canonical) if self.is_inside(&canonical) => Ok(canonical),
            Ok(_) => Err(self.outside(shown)),
            Err(error) => {
                if !self.would_be_inside(raw) {
                    Err(self.outside(shown))
                } else if is_not_found(&error) {
                    Err(FileError::Missing {
                        path: shown.to_owned(),
                    })
                } else {
                    Err(FileError::Io {
                        path: shown.to_owned(),
                        message: error.to_string(),
                    })
                }
            }
        }
    }

    fn outside(&self, shown: &str) -> FileError {
        FileError::OutsideRoots {
            path: shown.to_owned(),
            roots: self.roots.clone(),
        }
    }

    fn is_inside(&self, canonical: &Path) -> bool {
        self.roots.iter().any(|root| canonical.starts_with(root))
    }

    /// For a path that cannot be canonicalized: would it lie under a root?
    /// Canonicalizes its deepest existing ancestor and applies the rest
    /// lexically (a missing directory cannot be a symlink).
    fn would_be_inside(&self, raw: &Path) -> bool {
        for ancestor in raw.ancestors().skip(1) {
            let Ok(mut resolved) = fs::canonicalize(ancestor) else {
                continue;
            };
            let Ok(rest) = raw.strip_prefix(ancestor) else {
                return false;
            };
            for component in rest.components() {
                match component {
                    Component::Normal(name) => resolved.push(name),
                    Component::ParentDir => {
                        resolved.pop();
                    }
                    Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                }
            }
            return self.is_inside(&resolved);
        }
        false
    }

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

    /// Lists the files under the canonical directory `dir`, sorted by path.
    fn expand_dir(&self, dir: &Path) -> Vec<Found> {
        let mut ignores = self.ancestor_ignores(dir);
        let mut found = Vec::new();
        self.walk(dir, 0, &mut ignores, &mut found);
        found
    }

    /// The ignore rules of `dir`'s ancestors that lie within a root (as
    /// ripgrep honours a parent's `.gitignore` when given a subdirectory).
    /// Ancestors outside every root are never read.
    fn ancestor_ignores(&self, dir: &Path) -> Vec<Gitignore> {
        // The outermost root containing `dir` gives the most ancestors.
        let Some(root) = self
            .roots
            .iter()
            .filter(|root| dir.starts_with(root))
            .min_by_key(|root| root.components().count())
        else {
            return Vec::new();
        };
        let mut ancestors: Vec<&Path> = dir
            .ancestors()
            .skip(1)
            .take_while(|ancestor| ancestor.starts_with(root))
            .collect();
        ancestors.reverse();
        let mut ignores = Vec::new();
        for ancestor in ancestors {
            self.push_ignores(ancestor, &mut ignores);
        }
        ignores
    }

    /// Loads `dir`'s `.gitignore` then `.ignore` (so `.ignore`, checked
    /// first from the end, takes precedence, as in ripgrep).
    fn push_ignores(&self, dir: &Path, ignores: &mut Vec<Gitignore>) {
        for name in [".gitignore", ".ignore"] {
            let file = dir.join(name);
            let Ok(meta) = fs::symlink_metadata(&file) else {
                continue;
            };
            // A symlinked ignore file is read only if its target is inside.
            if meta.file_type().is_symlink() {
                match fs::canonicalize(&file) {
                    Ok(target) if self.is_inside(&target) && target.is_file() => {}
                    _ => continue,
                }
            } else if !meta.is_file() {
                continue;
            }
            let mut builder = GitignoreBuilder::new(dir);
            if let Some(error) = builder.add(&file) {
                tracing::debug!(file = %file.display(), %error, "partly invalid ignore file");
            }
            match builder.build() {
                Ok(matcher) if !matcher.is_empty() => ignores.push(matcher),
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(file = %file.display(), %error, "ignore file not used");
                }
            }
        }
    }

    /// Depth-first walk in sorted order. Symlinks are never followed into
    /// directories; a symlinked file is included only if its target is
    /// inside the roots.
    fn walk(&self, dir: &Path, depth: usize, ignores: &mut Vec<Gitignore>, found: &mut Vec<Found>) {
        if depth > MAX_WALK_DEPTH {
            found.push(Found::skipped(
                dir,
                SkipReason::Unreadable(format!(
                    "directories nested deeper than {MAX_WALK_DEPTH} levels are not expanded"
                )),
            ));
            return;
        }
        let inherited = ignores.len();
        self.push_ignores(dir, ignores);
        let mut entries: Vec<fs::DirEntry> = match fs::read_dir(dir) {
            Ok(entries) => entries.filter_map(Result::ok).collect(),
            Err(error) => {
                found.push(Found::skipped(
                    dir,
                    SkipReason::Unreadable(error.to_string()),
                ));
                ignores.truncate(inherited);
                return;
            }
        };
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name();
            if name.as_encoded_bytes().first() == Some(&b'.') {
                continue;
            }
            let path = entry.path();
            let Ok(file_type) = entry.file_type() else {
                found.push(Found::skipped(
                    &path,
                    SkipReason::Unreadable("cannot read its file type".to_owned()),
                ));
                continue;
            };
            // Sockets, FIFOs and devices are skipped silently, as ripgrep
            // does: opening a FIFO would block.
            if !(file_type.is_dir() || file_type.is_file() || file_type.is_symlink()) {
                continue;
            }
            // A symlink is matched by its own name, as a file.
            if is_ignored(ignores, &path, file_type.is_dir()) {
                continue;
            }
            if file_type.is_dir() {
                self.walk(&path, depth + 1, ignores, found);
            } else if file_type.is_file() {
                found.push(Found::File(path));
            } else {
                found.push(self.symlink_entry(&path));
            }
        }
        ignores.truncate(inherited);
    }

    fn symlink_entry(&self, link: &Path) -> Found {
        let shown = link.display().to_string();
        match self.check(link, &shown) {
            Ok(target) if target.is_dir() => Found::skipped(link, SkipReason::SymlinkedDirectory),
            Ok(target) => Found::File(target),
            Err(error) => Found::skipped(link, error.into()),
        }
    }
}

fn canonical_root(root: &Path) -> Result<PathBuf, FileError> {
    let shown = root.display().to_string();
    let canonical = fs::canonicalize(root).map_err(|error| FileError::Root {
        path: shown.clone(),
        message: if is_not_found(&error) {
            "it does not exist".to_owned()
        } else {
            error.to_string()
        },
    })?;
    if !canonical.is_dir() {
        return Err(FileError::Root {
            path: shown,
            message: "it is not a directory".to_owned(),
        });
    }
    Ok(canonical)
}

fn is_not_found(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Whether the innermost rule matching `path` ignores it (`ignores` is
/// ordered from lowest to highest precedence).
fn is_ignored(ignores: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for matcher in ignores.iter().rev() {
        match matcher.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// One result of directory expansion.
enum Found {
    /// A canonical path inside the roots.
    File(PathBuf),
    Skipped(SkippedFile),
}

impl Found {
    fn skipped(path: &Path, reason: SkipReason) -> Self {
        Self::Skipped(SkippedFile {
            path: path.display().to_string(),
            reason,
        })
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

/// Opens a checked path for reading, only if it is still a regular file
/// inside the roots.
///
/// The path was canonicalized and checked before, but the file system can
/// change in between. So the open does not block (a FIFO would otherwise
/// hang it), does not follow a symlink swapped in at the last component,
/// and the file actually opened must be a regular file whose real path (as
/// the kernel reports it for the open descriptor) lies inside a root: a
/// directory swapped for a symlink after the check is caught here.
fn open_confined(path: &Path, roots: &[PathBuf]) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let opened = fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
        if !roots.iter().any(|root| opened.starts_with(root)) {
            return Err(io::Error::other(
                "the file changed into one outside the allowed roots",
            ));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = roots;
    Ok(file)
}

impl FileAccess {
    /// Reads a checked (canonical) path whole, refusing anything that is not
    /// a regular file inside the roots or that is larger than `cap` bytes;
    /// the cap holds while reading, whatever the file claims its size is.
    pub fn read_file(&self, canonical: &Path, cap: usize) -> io::Result<Vec<u8>> {
        let file = open_confined(canonical, &self.roots)?;
        let mut bytes = Vec::new();
        file.take(cap as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() > cap {
            return Err(io::Error::other(format!("larger than {cap} bytes")));
        }
        Ok(bytes)
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
    fn estimate_rounds_up_by_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Characters, not bytes.
        assert_eq!(estimate_tokens("éééé"), 1);
    }

    #[test]
    fn root_list_splits_and_drops_empty_entries() {
        let roots = parse_root_list(OsStr::new("/a::/b/c:"));
        assert_eq!(roots, vec![PathBuf::from("/a"), PathBuf::from("/b/c")]);
    }

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

    #[test]
    fn skip_messages_name_the_path() {
        let skipped = SkippedFile {
            path: "/etc/passwd".to_owned(),
            reason: SkipReason::OutsideRoots,
        };
        assert_eq!(
            skipped.to_string(),
            "/etc/passwd is outside the allowed roots and was not read"
        );
        let error = FileError::OutsideRoots {
            path: "/etc/passwd".to_owned(),
            roots: vec![PathBuf::from("/work"), PathBuf::from("/data")],
        };
        assert!(
            error
                .to_string()
                .starts_with("/etc/passwd is outside the allowed roots (/work, /data)")
        );
    }
}
