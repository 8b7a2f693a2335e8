//! One server entry of the upstreams file, checked ([`UpstreamConfig`]):
//! how zenmode reaches the server ([`Transport`]), zenmode's own options
//! for it, whether its allow and deny lists let a tool through, and what a
//! user may see of it (never a secret). Reading the file into entries is
//! `parse.rs`'s.

use std::{collections::BTreeMap, fmt, path::PathBuf, time::Duration};

use crate::platform::redact::{Redactor, url_for_display};

/// How long a call may take when the entry gives no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an unused upstream keeps running when the entry gives no `idle_shutdown`.
pub const DEFAULT_IDLE_SHUTDOWN: Duration = Duration::from_secs(600);

/// When an upstream is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Startup {
    /// On its first call (or at start-up only when its catalog is not cached).
    Lazy,
    /// At start-up, in the background.
    Eager,
}

/// How zenmode reaches an upstream.
#[derive(Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        /// Pass zenmode's whole environment instead of the basic variables.
        inherit_env: bool,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    /// Never prints `env` or `headers` values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command, args, env, ..
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &url_for_display(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// One server entry, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    /// The entry's key in `mcpServers`.
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    /// Mode names are `<prefix>__<tool>`.
    pub prefix: String,
    pub timeout: Duration,
    /// `None`: keep running for the life of zenmode.
    pub idle_shutdown: Option<Duration>,
    pub startup: Startup,
    pub allow_tools: Vec<String>,
    pub deny_tools: Vec<String>,
    /// The largest message the server may send (one line over stdio, one
    /// event over HTTP); a larger reply fails its call at once.
    pub max_reply_bytes: usize,
    /// `"2026-07-28"`: connect with `server/discover` at that version, so
    /// the server can answer with input-required results; otherwise (the
    /// default) with `initialize`.
    pub modern: bool,
    /// How zenmode signs in to an HTTP server that asks for OAuth (`None`:
    /// the defaults: discovery and registration, the browser flow).
    pub oauth: Option<OAuthSettings>,
    /// `"script_writes": "allow"`: a script may call this server's tools
    /// that change things (by default, as `serve --script-writes`, it may not).
    pub script_writes: bool,
}

/// An entry's `"oauth"` object: a client registered with the server's
/// authorization server beforehand, or machine sign-in. Every key is
/// optional; `client_secret` may be a `${VAR}` placeholder.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct OAuthSettings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty: the server's challenge, else its
    /// `scopes_supported`, else none.
    pub scopes: Vec<String>,
    /// `client_credentials`: sign in as a machine with the client's secret,
    /// without a browser (needs `client_id` and `client_secret`).
    pub client_credentials: bool,
    /// An https URL of this client's metadata document, used as the client
    /// ID where the authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
}

impl fmt::Debug for OAuthSettings {
    /// Never prints the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("scopes", &self.scopes)
            .field("client_credentials", &self.client_credentials)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

impl UpstreamConfig {
    /// Whether the allow and deny lists let `tool` through.
    pub fn allows(&self, tool: &str) -> bool {
        let listed = |patterns: &[String]| patterns.iter().any(|p| glob_match(p, tool));
        (self.allow_tools.is_empty() || listed(&self.allow_tools)) && !listed(&self.deny_tools)
    }

    /// What a user may see of the entry: the command or URL, never a secret.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut text = command.clone();
                for arg in args {
                    text.push(' ');
                    text.push_str(arg);
                }
                self.redactor().redact(&text)
            }
            Transport::Http { url, .. } => format!("http {}", url_for_display(url)),
        }
    }

    /// Hides this entry's secrets in any text (see [`crate::platform::redact`] for
    /// which values count).
    pub fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::default();
        match &self.transport {
            Transport::Stdio { env, .. } => {
                for (name, value) in env {
                    redactor.add_named(name, value);
                }
            }
            Transport::Http { url, headers } => {
                redactor.add_url(url);
                for (name, value) in headers {
                    redactor.add_named(name, value);
                }
            }
        }
        if let Some(secret) = self.oauth.as_ref().and_then(|o| o.client_secret.as_ref()) {
            redactor.add(secret.clone(), true);
        }
        redactor.sorted()
    }
}

/// `*` matches any run of characters; everything else matches itself.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}
