//! The fingerprint of an entry: a hash of everything that decides which
//! process (or URL) answers and what it may list, secrets included but
//! never shown. It keys the cached catalog and capabilities, so a changed
//! entry is fetched again.

use sha2::{Digest, Sha256};

use super::entry::{Transport, UpstreamConfig};

impl UpstreamConfig {
    /// Hash of everything that decides which process (or URL) answers and
    /// what it may list; keys the catalog cache, so a changed entry is re-read.
    pub fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        let mut feed = |part: &str| {
            hasher.update(part.len().to_le_bytes());
            hasher.update(part.as_bytes());
        };
        match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
                inherit_env,
            } => {
                feed("stdio");
                feed(command);
                args.iter().for_each(|arg| feed(arg));
                for (key, value) in env {
                    feed(key);
                    feed(value);
                }
                feed(
                    &cwd.as_ref()
                        .map(|c| c.display().to_string())
                        .unwrap_or_default(),
                );
                feed(if *inherit_env { "inherit" } else { "basic" });
            }
            Transport::Http { url, headers } => {
                feed("http");
                feed(url);
                for (key, value) in headers {
                    feed(key);
                    feed(value);
                }
            }
        }
        hex::encode(hasher.finalize())
    }
}
