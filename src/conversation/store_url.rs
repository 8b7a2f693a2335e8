//! `--store URL` (env `ZEN_STORE`): which store holds the threads
//! ([`StoreUrl`], parsed and shown with any password hidden), and where the
//! embedded one lives by default. Opening the store it names is
//! `open.rs`'s.

use std::path::PathBuf;

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `memory:`: this process only, lost on exit.
    Memory,
    /// `sqlite:PATH` (or `embedded`, in the state directory): one file that
    /// many processes on this machine share.
    Embedded(PathBuf),
    /// `redis://...` or `rediss://...`: shared by instances on many machines.
    Redis(String),
}

impl StoreUrl {
    /// Parses a store URL; `None` or an empty value means the default, the
    /// embedded store in the state directory.
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        let raw = raw.map(str::trim).unwrap_or_default();
        if raw.is_empty() || raw == "embedded" || raw == "embedded:" || raw == "sqlite:" {
            return Ok(StoreUrl::Embedded(default_embedded_path()));
        }
        if raw == "memory" || raw == "memory:" {
            return Ok(StoreUrl::Memory);
        }
        if let Some(path) = raw.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            return Ok(StoreUrl::Embedded(PathBuf::from(path)));
        }
        if raw.starts_with("redis://") || raw.starts_with("rediss://") {
            return Ok(StoreUrl::Redis(raw.to_owned()));
        }
        Err(format!(
            "unknown conversation store {:?}: use memory:, sqlite:PATH (the default is {}) or redis://HOST:PORT",
            redact(raw),
            default_embedded_path().display()
        ))
    }

    /// The URL as it may be shown: a Redis password is hidden.
    pub fn display(&self) -> String {
        match self {
            StoreUrl::Memory => "memory:".to_owned(),
            StoreUrl::Embedded(path) => format!("sqlite:{}", path.display()),
            StoreUrl::Redis(url) => redact(url),
        }
    }
}

/// `threads.db` in zenmode's state directory (`platform::dirs`), where the
/// gateway keeps its pins.
pub fn default_embedded_path() -> PathBuf {
    crate::platform::dirs::state_dir().join("threads.db")
}

/// `url` with any password replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_store_or_are_refused() {
        assert_eq!(StoreUrl::parse(Some("memory:")).unwrap(), StoreUrl::Memory);
        assert_eq!(
            StoreUrl::parse(Some("sqlite:/tmp/t.db")).unwrap(),
            StoreUrl::Embedded("/tmp/t.db".into())
        );
        assert_eq!(
            StoreUrl::parse(Some("sqlite:///tmp/t.db")).unwrap(),
            StoreUrl::Embedded("/tmp/t.db".into())
        );
        assert!(matches!(
            StoreUrl::parse(None).unwrap(),
            StoreUrl::Embedded(path) if path.ends_with("threads.db")
        ));
        assert_eq!(
            StoreUrl::parse(Some("redis://127.0.0.1:6379/0")).unwrap(),
            StoreUrl::Redis("redis://127.0.0.1:6379/0".into())
        );
        let refused = StoreUrl::parse(Some("postgres://u:hunter2@db/x")).unwrap_err();
        assert!(refused.contains("unknown conversation store"), "{refused}");
        assert!(!refused.contains("hunter2"), "{refused}");
    }

    #[test]
    fn passwords_are_never_shown() {
        let url = StoreUrl::parse(Some("redis://:s3cret@cache:6379")).unwrap();
        assert_eq!(url.display(), "redis://:***@cache:6379");
        let url = StoreUrl::parse(Some("rediss://app:s3cret@cache:6380/1")).unwrap();
        assert_eq!(url.display(), "rediss://app:***@cache:6380/1");
    }
}
