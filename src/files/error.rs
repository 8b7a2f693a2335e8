//! Why a path cannot be used ([`FileError`]), and why a requested file was
//! not embedded ([`SkipReason`], [`SkippedFile`]), each message naming the
//! path and, where it helps, what to do.

use std::{fmt, path::PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;

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
