//! Directory expansion: a depth-first walk in sorted order by our own
//! walker, honouring `.gitignore`, `.ignore` and hidden files as ripgrep
//! does, without reading any ignore file outside the roots (the `ignore`
//! crate's walker reads every parent's up to `/`). Symlinks are never
//! followed into directories; a symlinked file counts only if its target
//! is inside the roots.

use std::{
    fs,
    path::{Path, PathBuf},
};

use ignore::{
    Match,
    gitignore::{Gitignore, GitignoreBuilder},
};

use super::{
    confine::FileAccess,
    error::{SkipReason, SkippedFile},
};

/// Directory expansion stops descending below this depth. Real trees are far
/// shallower; the limit only keeps a pathological tree from exhausting the
/// stack.
const MAX_WALK_DEPTH: usize = 64;

impl FileAccess {
    /// Lists the files under the canonical directory `dir`, sorted by path.
    pub(super) fn expand_dir(&self, dir: &Path) -> Vec<Found> {
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
pub(super) enum Found {
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
