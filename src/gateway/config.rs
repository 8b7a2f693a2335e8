//! The upstreams file: the `mcpServers` shape that Claude Desktop, Claude
//! Code and Cursor already write, plus zenmode's own per-server options in
//! the same entry.
//!
//! ```json
//! {"mcpServers": {
//!   "fs":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
//!   "api": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ..."},
//!           "prefix": "api", "timeout": 30, "idle_shutdown": 600, "startup": "lazy",
//!           "allow_tools": ["search_*"], "deny_tools": ["delete_repo"], "enabled": true}
//! }}
//! ```
//!
//! Values in `env` and `headers`, and credentials inside `url`, are treated
//! as secrets: hashed into the cache key but never printed (see
//! [`crate::platform::redact`] for exactly which values are hidden). They may be
//! `${VAR}` placeholders, filled from zenmode's environment when the server
//! starts ([`UpstreamConfig::expanded`]), so the file need not hold a secret.
//!
//! An entry that would run zenmode itself ([`runs_zenmode`]) is skipped with
//! a warning: a gateway fronting itself spawns itself without end.

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use super::reply_guard::DEFAULT_MAX_REPLY_BYTES;
pub use crate::platform::redact::Redactor;
use crate::{
    catalog::gateway_modes::{SEPARATOR, is_valid_tool_name},
    platform::redact::url_for_display,
};

/// How long a call may take when the entry gives no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an unused upstream keeps running when the entry gives no `idle_shutdown`.
pub const DEFAULT_IDLE_SHUTDOWN: Duration = Duration::from_secs(600);

/// Keys zenmode reads in an entry; others (other clients' options) are ignored with a warning.
const KNOWN_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "type",
    "transport",
    "url",
    "headers",
    "enabled",
    "disabled",
    "prefix",
    "timeout",
    "idle_shutdown",
    "startup",
    "allow_tools",
    "deny_tools",
    "inherit_env",
    "max_reply_bytes",
    "protocol_version",
    "oauth",
];

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
        hex(&hasher.finalize())
    }

    /// The entry with its `${VAR}` placeholders (in `env`, `headers` and
    /// `url`) filled from zenmode's environment; an unset variable is an
    /// error for this entry alone, naming the variable, never a value.
    pub fn expanded(&self) -> Result<UpstreamConfig, String> {
        let lookup = |name: &str| std::env::var(name).ok();
        let fill = |what: String, text: &str| {
            expand_placeholders(text, &lookup).map_err(|UnsetVariable(variable)| {
                format!(
                    "{what} uses ${{{variable}}}, but {variable} is not set in zenmode's environment; set it where zenmode is started, or write the value in the entry"
                )
            })
        };
        let fill_map = |kind: &str, map: &BTreeMap<String, String>| {
            map.iter()
                .map(|(key, value)| Ok((key.clone(), fill(format!("{kind} {key:?}"), value)?)))
                .collect::<Result<BTreeMap<_, _>, String>>()
        };
        let mut config = self.clone();
        match &mut config.transport {
            Transport::Stdio { env, .. } => *env = fill_map("env", env)?,
            Transport::Http { url, headers } => {
                *url = fill("\"url\"".to_owned(), url)?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err("\"url\" must start with http:// or https:// once its placeholders are filled".into());
                }
                *headers = fill_map("header", headers)?;
                for (key, value) in headers.iter() {
                    if http::HeaderValue::from_str(value).is_err() {
                        return Err(format!(
                            "header {key:?} is not a valid HTTP header value once its placeholders are filled"
                        ));
                    }
                }
            }
        }
        if let Some(secret) = config.oauth.as_mut().and_then(|o| o.client_secret.as_mut()) {
            *secret = fill("\"oauth\".\"client_secret\"".to_owned(), secret)?;
        }
        Ok(config)
    }

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
fn glob_match(pattern: &str, name: &str) -> bool {
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

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

/// A problem in the upstreams file; always names the file and, where it
/// applies, the entry.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ConfigError {
    pub file: String,
    pub problem: String,
}

/// The parsed file: the entries in file order, and warnings worth logging.
#[derive(Debug, Default)]
pub struct UpstreamsFile {
    pub servers: Vec<UpstreamConfig>,
    pub warnings: Vec<String>,
    /// Entries left out, each with what is wrong: (entry name, problem).
    pub bad: Vec<(String, String)>,
}

/// Reads and checks an upstreams file; any bad entry is an error (the
/// commands that write the file use this).
pub fn load(path: &Path) -> Result<UpstreamsFile, ConfigError> {
    let file = load_each(path)?;
    match file.bad.first() {
        Some((name, problem)) => Err(ConfigError {
            file: path.display().to_string(),
            problem: format!("server {name:?}: {problem}"),
        }),
        None => Ok(file),
    }
}

/// Reads an upstreams file entry by entry: a bad entry is set aside in
/// [`UpstreamsFile::bad`] and the others are kept. Errors only when the
/// file as a whole cannot be used (unreadable, not JSON, wrong shape);
/// serde's message then gives the line and column.
pub fn load_each(path: &Path) -> Result<UpstreamsFile, ConfigError> {
    let error = |problem: String| ConfigError {
        file: path.display().to_string(),
        problem,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        error(format!(
            "not JSON ({e}); fix the file there (a trailing comma or a missing quote is the usual cause)"
        ))
    })?;
    let file = parse_each(&value).map_err(error)?;
    // From here on no log line, whoever writes it, shows these secrets.
    for server in &file.servers {
        crate::platform::redact::register(&server.redactor());
    }
    Ok(file)
}

/// Checks the JSON of an upstreams file (`{"mcpServers": {...}}`); any bad
/// entry is an error.
pub fn parse(value: &Value) -> Result<UpstreamsFile, String> {
    let file = parse_each(value)?;
    match file.bad.first() {
        Some((name, problem)) => Err(format!("server {name:?}: {problem}")),
        None => Ok(file),
    }
}

/// Checks the file's shape, then each entry on its own: a bad entry (or
/// the second of two with the same prefix) lands in [`UpstreamsFile::bad`].
pub fn parse_each(value: &Value) -> Result<UpstreamsFile, String> {
    let servers = value
        .get("mcpServers")
        .ok_or(
            "has no \"mcpServers\" object (the shape Claude Desktop, Claude Code and Cursor use)",
        )?
        .as_object()
        .ok_or("\"mcpServers\" must be an object of named server entries")?;
    let mut file = UpstreamsFile::default();
    let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
    for (name, entry) in servers {
        let (config, warnings) = match parse_entry(name, entry) {
            Ok(parsed) => parsed,
            Err(problem) => {
                file.bad.push((name.clone(), problem));
                continue;
            }
        };
        if let Some(why) = runs_zenmode(&config) {
            file.warnings.push(self_skip_message(name, &why));
            continue;
        }
        if config.enabled
            && let Some(other) = prefixes.get(&config.prefix)
        {
            file.bad.push((
                name.clone(),
                format!(
                    "server {other:?} uses the prefix {:?} already; give one a different \"prefix\"",
                    config.prefix
                ),
            ));
            continue;
        }
        if config.enabled {
            prefixes.insert(config.prefix.clone(), name.clone());
        }
        file.warnings.extend(
            warnings
                .into_iter()
                .map(|w| format!("server {name:?}: {w}")),
        );
        file.servers.push(config);
    }
    Ok(file)
}

/// Checks one entry alone (its warnings dropped); the error names the entry.
pub fn parse_one(name: &str, entry: &Value) -> Result<UpstreamConfig, String> {
    parse_entry(name, entry)
        .map(|(config, _)| config)
        .map_err(|problem| format!("server {name:?}: {problem}"))
}

fn parse_entry(name: &str, entry: &Value) -> Result<(UpstreamConfig, Vec<String>), String> {
    let entry = entry.as_object().ok_or("the entry must be an object")?;
    let mut warnings = Vec::new();
    for key in entry.keys() {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            warnings.push(format!("ignoring key {key:?}, which zenmode does not use"));
        }
    }
    let transport = parse_transport(entry)?;
    let prefix = match entry.get("prefix") {
        None => name.to_owned(),
        Some(value) => string(value, "prefix")?,
    };
    if !is_valid_tool_name(&prefix) || prefix.contains(SEPARATOR) {
        return Err(format!(
            "prefix {prefix:?} must be letters, digits, '_', '-' or '.', without \"{SEPARATOR}\" (it starts every mode name); set \"prefix\""
        ));
    }
    let enabled = match (entry.get("enabled"), entry.get("disabled")) {
        (Some(value), _) => boolean(value, "enabled")?,
        (None, Some(value)) => !boolean(value, "disabled")?,
        (None, None) => true,
    };
    let timeout = match entry.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(value) => seconds(value, "timeout")?
            .filter(|t| !t.is_zero())
            .ok_or("\"timeout\" must be a positive number of seconds")?,
    };
    let idle_shutdown = match entry.get("idle_shutdown") {
        None => Some(DEFAULT_IDLE_SHUTDOWN),
        Some(value) => seconds(value, "idle_shutdown")?.filter(|t| !t.is_zero()),
    };
    let startup = match entry
        .get("startup")
        .map(|v| string(v, "startup"))
        .transpose()?
    {
        None => Startup::Lazy,
        Some(text) => match text.as_str() {
            "lazy" => Startup::Lazy,
            "eager" => Startup::Eager,
            other => {
                return Err(format!(
                    "\"startup\" is {other:?}; use \"lazy\" or \"eager\""
                ));
            }
        },
    };
    let oauth = match entry.get("oauth") {
        None => None,
        Some(value) => {
            if !matches!(transport, Transport::Http { .. }) {
                return Err("\"oauth\" applies only to an http server (with \"url\")".into());
            }
            Some(oauth_settings(value)?)
        }
    };
    let config = UpstreamConfig {
        name: name.to_owned(),
        oauth,
        transport,
        enabled,
        prefix,
        timeout,
        idle_shutdown,
        startup,
        allow_tools: string_list(entry.get("allow_tools"), "allow_tools")?,
        deny_tools: string_list(entry.get("deny_tools"), "deny_tools")?,
        max_reply_bytes: match entry.get("max_reply_bytes") {
            None => DEFAULT_MAX_REPLY_BYTES,
            Some(value) => value
                .as_u64()
                .filter(|n| (1024..=1 << 30).contains(n))
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(
                    "\"max_reply_bytes\" must be a whole number of bytes from 1024 to 1073741824",
                )?,
        },
        modern: match entry
            .get("protocol_version")
            .map(|v| string(v, "protocol_version"))
            .transpose()?
        {
            None => false,
            Some(version) if version == "2026-07-28" => true,
            Some(other) => {
                return Err(format!(
                    "\"protocol_version\" is {other:?}; the only one to ask for is \"2026-07-28\" (leave it out for initialize)"
                ));
            }
        },
    };
    Ok((config, warnings))
}

fn parse_transport(entry: &Map<String, Value>) -> Result<Transport, String> {
    let kind = entry
        .get("type")
        .or_else(|| entry.get("transport"))
        .map(|v| string(v, "type"))
        .transpose()?;
    let has_url = entry.contains_key("url");
    let has_command = entry.contains_key("command");
    match kind.as_deref() {
        Some("sse") => Err(
            "the legacy SSE transport is not supported; use a Streamable HTTP URL (\"type\": \"http\")"
                .into(),
        ),
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => http(entry),
        Some("stdio") => stdio(entry),
        Some(other) => Err(format!(
            "unknown \"type\" {other:?}; use \"stdio\" (with \"command\") or \"http\" (with \"url\")"
        )),
        None if has_command && has_url => {
            Err("has both \"command\" and \"url\"; keep one, or set \"type\"".into())
        }
        None if has_command => stdio(entry),
        None if has_url => http(entry),
        None => Err("needs \"command\" (a local server) or \"url\" (a Streamable HTTP server)".into()),
    }
}

fn stdio(entry: &Map<String, Value>) -> Result<Transport, String> {
    let command = entry
        .get("command")
        .ok_or("a stdio server needs \"command\"")
        .and_then(|v| string(v, "command").map_err(|_| "\"command\" must be a string"))?;
    if command.trim().is_empty() {
        return Err("\"command\" is empty".into());
    }
    Ok(Transport::Stdio {
        command,
        args: string_list(entry.get("args"), "args")?,
        env: string_map(entry.get("env"), "env")?,
        cwd: entry
            .get("cwd")
            .map(|v| string(v, "cwd").map(PathBuf::from))
            .transpose()?,
        inherit_env: entry
            .get("inherit_env")
            .map(|v| boolean(v, "inherit_env"))
            .transpose()?
            .unwrap_or(false),
    })
}

fn http(entry: &Map<String, Value>) -> Result<Transport, String> {
    let url = entry
        .get("url")
        .ok_or("an http server needs \"url\"")
        .and_then(|v| string(v, "url").map_err(|_| "\"url\" must be a string"))?;
    if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${")) {
        return Err(format!(
            "\"url\" {url:?} must start with http:// or https://"
        ));
    }
    let headers = string_map(entry.get("headers"), "headers")?;
    for (key, value) in &headers {
        if http::HeaderName::from_bytes(key.as_bytes()).is_err()
            || http::HeaderValue::from_str(value).is_err()
        {
            return Err(format!("header {key:?} is not a valid HTTP header"));
        }
    }
    Ok(Transport::Http { url, headers })
}

/// Checks an entry's `"oauth"` object; each error names the key and the fix.
fn oauth_settings(value: &Value) -> Result<OAuthSettings, String> {
    const KEYS: &[&str] = &[
        "client_id",
        "client_secret",
        "scopes",
        "grant",
        "client_metadata_url",
    ];
    let object = value.as_object().ok_or(
        "\"oauth\" must be an object, e.g. {\"client_id\": \"...\", \"scopes\": [\"read\"]}",
    )?;
    if let Some(key) = object.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(format!(
            "\"oauth\" has an unknown key {key:?}; it takes {}",
            KEYS.join(", ")
        ));
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match object.get(key) {
            None => Ok(None),
            Some(value) => match value.as_str().map(str::trim) {
                Some(text) if !text.is_empty() => Ok(Some(text.to_owned())),
                _ => Err(format!("\"oauth\".\"{key}\" must be a non-empty string")),
            },
        }
    };
    let scopes = match object.get("scopes") {
        None => Vec::new(),
        Some(Value::String(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(other) => string_list(Some(other), "oauth.scopes")?,
    };
    if let Some(bad) = scopes
        .iter()
        .find(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        return Err(format!(
            "\"oauth\".\"scopes\" holds {bad:?}; a scope is one word"
        ));
    }
    let client_credentials = match text("grant")?.as_deref() {
        None | Some("authorization_code") => false,
        Some("client_credentials") => true,
        Some(other) => {
            return Err(format!(
                "\"oauth\".\"grant\" is {other:?}; use \"authorization_code\" (sign in with a browser, the default) or \"client_credentials\" (a machine client with a secret)"
            ));
        }
    };
    let settings = OAuthSettings {
        client_id: text("client_id")?,
        client_secret: text("client_secret")?,
        scopes,
        client_credentials,
        client_metadata_url: text("client_metadata_url")?,
    };
    if settings.client_secret.is_some() && settings.client_id.is_none() {
        return Err("\"oauth\" has \"client_secret\" without \"client_id\"; give the ID the secret belongs to".into());
    }
    if client_credentials && (settings.client_id.is_none() || settings.client_secret.is_none()) {
        return Err("\"oauth\" with \"grant\": \"client_credentials\" needs \"client_id\" and \"client_secret\"".into());
    }
    if let Some(url) = &settings.client_metadata_url
        && !(url.starts_with("https://") && url["https://".len()..].contains('/'))
    {
        return Err(format!(
            "\"oauth\".\"client_metadata_url\" {url:?} must be an https URL with a path"
        ));
    }
    Ok(settings)
}

/// The line that says an entry was left out because it runs zenmode.
pub fn self_skip_message(name: &str, why: &str) -> String {
    format!("server {name:?} skipped: it runs zenmode itself ({why}); zenmode never fronts itself")
}

/// Why an entry runs zenmode itself, if it does. The rule, in order:
///
/// 1. its `command` is zenmode: a file named `zenmode` (or `zenmode.exe`)
///    anywhere, or the very binary running now (same canonical path, found
///    on `PATH` when the command has no directory);
/// 2. it reaches zenmode through a wrapper (`npx`, `sh -c`, `env`,
///    `cargo run`, ...): one word of its arguments (arguments are split at
///    white space, so a `sh -c` script counts) names zenmode as in 1, or is
///    an npm package spec `zenmode` / `zenmode@VERSION`, and a later word
///    is `serve`.
///
/// Anything else (a server whose *name* mentions zenmode, a script that
/// calls `zenmode upstream list`) is not zenmode serving.
pub fn runs_zenmode(config: &UpstreamConfig) -> Option<String> {
    let Transport::Stdio { command, args, .. } = &config.transport else {
        return None;
    };
    if names_zenmode(command, true) {
        return Some(format!("its command is {command:?}"));
    }
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let at = words
        .iter()
        .position(|word| names_zenmode(word, false) || is_zenmode_package(word))?;
    words[at + 1..]
        .contains(&"serve")
        .then(|| format!("{command:?} runs {:?} serve", words[at]))
}

/// `word` is a path or program name that is zenmode; a bare name is looked
/// up on `PATH` only when `search_path` (for the command, not every word).
fn names_zenmode(word: &str, search_path: bool) -> bool {
    let word = word.trim_matches(|c| c == '"' || c == '\'' || c == ';');
    let file = Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if file == "zenmode" || file.eq_ignore_ascii_case("zenmode.exe") {
        return true;
    }
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return false;
    };
    let found = if word.contains(std::path::MAIN_SEPARATOR) || word.contains('/') {
        Some(PathBuf::from(word))
    } else if !search_path {
        None
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(word))
                .find(|candidate| candidate.is_file())
        })
    };
    found
        .and_then(|path| std::fs::canonicalize(path).ok())
        .is_some_and(|path| path == me)
}

/// An npm package spec for zenmode (`npx zenmode serve`).
fn is_zenmode_package(word: &str) -> bool {
    word == "zenmode" || word.starts_with("zenmode@")
}

/// A placeholder that names an unset variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetVariable(pub String);

/// `text` with every `${VAR}` replaced by `$VAR` from `lookup`; `$${` is a
/// literal `${`. An unset (or not Unicode) variable is an error naming it.
pub fn expand_placeholders(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${")
            && let Some(end) = tail.find('}')
        {
            let name = &tail[..end];
            out.push_str(&lookup(name).ok_or_else(|| UnsetVariable(name.to_owned()))?);
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn string(value: &Value, key: &str) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("\"{key}\" must be a string"))
}

fn boolean(value: &Value, key: &str) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("\"{key}\" must be true or false"))
}

/// A number of seconds; `None` for 0.
fn seconds(value: &Value, key: &str) -> Result<Option<Duration>, String> {
    let secs = value
        .as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 7.0 * 24.0 * 3600.0)
        .ok_or_else(|| format!("\"{key}\" must be a number of seconds between 0 and a week"))?;
    Ok((secs > 0.0).then(|| Duration::from_secs_f64(secs)))
}

fn string_list(value: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    value
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| format!("\"{key}\" must be a list of strings"))
}

fn string_map(value: Option<&Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    let Some(value) = value else {
        return Ok(BTreeMap::new());
    };
    let object = value
        .as_object()
        .ok_or_else(|| format!("\"{key}\" must be an object of strings"))?;
    object
        .iter()
        .map(|(k, v)| match v {
            Value::String(text) => Ok((k.clone(), text.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(format!("\"{key}\".{k} must be a string")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(entry: Value) -> Result<UpstreamConfig, String> {
        parse(&json!({"mcpServers": {"srv": entry}})).map(|mut f| f.servers.remove(0))
    }

    #[test]
    fn stdio_and_http_entries_with_defaults() {
        let stdio =
            one(json!({"command": "npx", "args": ["-y", "x"], "env": {"K": "secretvalue"}}))
                .unwrap();
        assert_eq!(stdio.prefix, "srv");
        assert_eq!(stdio.timeout, DEFAULT_TIMEOUT);
        assert_eq!(stdio.startup, Startup::Lazy);
        assert!(stdio.enabled);
        let http = one(json!({"type": "http", "url": "https://h/mcp",
            "headers": {"Authorization": "Bearer tok123456"}, "prefix": "h", "timeout": 5,
            "idle_shutdown": 0, "startup": "eager"}))
        .unwrap();
        assert_eq!(http.prefix, "h");
        assert_eq!(http.timeout, Duration::from_secs(5));
        assert_eq!(http.idle_shutdown, None);
        assert_eq!(http.startup, Startup::Eager);
        assert!(matches!(http.transport, Transport::Http { .. }));
    }

    #[test]
    fn misconfigured_entries_name_the_entry_and_the_problem() {
        let cases = [
            (json!({}), "needs \"command\""),
            (json!({"command": 3}), "must be a string"),
            (json!({"command": "x", "url": "http://h"}), "both"),
            (json!({"type": "sse", "url": "http://h"}), "SSE"),
            (json!({"url": "ftp://h"}), "http://"),
            (json!({"command": "x", "timeout": -1}), "seconds"),
            (json!({"command": "x", "startup": "soon"}), "lazy"),
            (json!({"command": "x", "prefix": "a b"}), "prefix"),
            (json!({"command": "x", "prefix": "a__b"}), "prefix"),
            (json!({"command": "x", "args": "y"}), "list of strings"),
            (
                json!({"command": "x", "max_reply_bytes": 10}),
                "max_reply_bytes",
            ),
            (
                json!({"command": "x", "protocol_version": "2025-11-25"}),
                "protocol_version",
            ),
        ];
        for (entry, expected) in cases {
            let error = parse(&json!({"mcpServers": {"broken": entry}})).unwrap_err();
            assert!(
                error.contains("\"broken\"") && error.contains(expected),
                "{error}"
            );
        }
        assert!(
            parse(&json!({"servers": {}}))
                .unwrap_err()
                .contains("mcpServers")
        );
    }

    #[test]
    fn two_servers_with_one_prefix_are_refused() {
        let error = parse(&json!({"mcpServers": {
            "a": {"command": "x", "prefix": "p"}, "b": {"command": "y", "prefix": "p"}}}))
        .unwrap_err();
        assert!(error.contains("prefix \"p\""), "{error}");
    }

    #[test]
    fn each_bad_entry_is_set_aside_and_the_good_ones_kept() {
        let file = parse_each(&json!({"mcpServers": {
            "a": {"command": "x", "prefix": "p"},
            "bad": {"command": 3},
            "b": {"command": "y", "prefix": "p"},
            "c": {"command": "z"}}}))
        .unwrap();
        let names: Vec<&str> = file.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "c"]);
        let bad: Vec<&str> = file.bad.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(bad, ["bad", "b"], "file order: {:?}", file.bad);
        assert!(file.bad[1].1.contains("prefix \"p\""), "{:?}", file.bad);
    }

    #[test]
    fn a_file_that_is_not_json_names_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("upstreams.json");
        std::fs::write(
            &path,
            "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n}}\n",
        )
        .unwrap();
        let error = load_each(&path).unwrap_err().to_string();
        assert!(
            error.contains("line 3")
                && error.contains("column")
                && error.contains("trailing comma"),
            "{error}"
        );
    }

    #[test]
    fn oauth_objects_are_checked_and_their_secret_never_prints() {
        let url = "https://h/mcp";
        let good = one(
            json!({"url": url, "oauth": {"client_id": "c1", "client_secret": "s3cret-value-42",
            "scopes": "read write", "grant": "client_credentials"}}),
        )
        .unwrap();
        let oauth = good.oauth.clone().unwrap();
        assert_eq!(oauth.scopes, ["read", "write"]);
        assert!(oauth.client_credentials);
        assert!(!format!("{good:?}").contains("s3cret-value-42"));
        assert!(
            !good
                .redactor()
                .redact("x s3cret-value-42 y")
                .contains("s3cret")
        );
        for (entry, needle) in [
            (
                json!({"command": "x", "oauth": {}}),
                "only to an http server",
            ),
            (json!({"url": url, "oauth": "yes"}), "must be an object"),
            (
                json!({"url": url, "oauth": {"client": "c"}}),
                "unknown key \"client\"",
            ),
            (
                json!({"url": url, "oauth": {"client_secret": "s"}}),
                "without \"client_id\"",
            ),
            (
                json!({"url": url, "oauth": {"grant": "client_credentials", "client_id": "c"}}),
                "needs \"client_id\" and \"client_secret\"",
            ),
            (
                json!({"url": url, "oauth": {"grant": "password"}}),
                "\"grant\" is \"password\"",
            ),
            (
                json!({"url": url, "oauth": {"scopes": ["a b"]}}),
                "one word",
            ),
            (
                json!({"url": url, "oauth": {"client_id": ""}}),
                "non-empty string",
            ),
            (
                json!({"url": url, "oauth": {"client_metadata_url": "http://x/c.json"}}),
                "https URL",
            ),
        ] {
            let error = one(entry.clone()).unwrap_err();
            assert!(error.contains(needle), "{entry}: {error}");
        }
    }

    #[test]
    fn unknown_keys_warn_and_disabled_is_read() {
        let file = parse(
            &json!({"mcpServers": {"a": {"command": "x", "autoApprove": [], "disabled": true}}}),
        )
        .unwrap();
        assert!(!file.servers[0].enabled);
        assert!(
            file.warnings[0].contains("autoApprove"),
            "{:?}",
            file.warnings
        );
    }

    #[test]
    fn fingerprint_changes_with_the_entry_and_secrets_never_print() {
        let a = one(json!({"command": "x", "env": {"TOKEN": "supersecret1"}})).unwrap();
        let b = one(json!({"command": "x", "env": {"TOKEN": "supersecret2"}})).unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert!(!format!("{a:?}").contains("supersecret1"));
        let http = one(json!({"url": "https://h/mcp?key=supersecret9", "headers": {"Authorization": "Bearer tok123456"}})).unwrap();
        assert!(!format!("{http:?}").contains("tok123456"));
        let redactor = http.redactor();
        assert_eq!(redactor.redact("sent tok123456!"), "sent [redacted]!");
    }

    #[test]
    fn placeholders_fill_from_the_environment_with_an_escape() {
        let lookup = |name: &str| (name == "T").then(|| "tok".to_owned());
        assert_eq!(
            expand_placeholders("Bearer ${T}", &lookup).unwrap(),
            "Bearer tok"
        );
        assert_eq!(
            expand_placeholders("$${T} $5 ${T", &lookup).unwrap(),
            "${T} $5 ${T"
        );
        assert_eq!(
            expand_placeholders("${NOPE}", &lookup),
            Err(UnsetVariable("NOPE".into()))
        );
        let entry = one(json!({"url": "${ZT_UNIT_UNSET_BASE}/mcp"})).unwrap();
        let problem = entry.expanded().unwrap_err();
        assert!(problem.contains("ZT_UNIT_UNSET_BASE"), "{problem}");
    }

    #[test]
    fn entries_that_run_zenmode_are_recognised_and_others_are_not() {
        let runs = |entry: Value| runs_zenmode(&parse_one("x", &entry).unwrap());
        assert!(runs(json!({"command": "/opt/bin/zenmode", "args": ["serve"]})).is_some());
        assert!(runs(json!({"command": "zenmode"})).is_some());
        assert!(runs(json!({"command": "npx", "args": ["-y", "zenmode@1.2", "serve"]})).is_some());
        assert!(
            runs(json!({"command": "sh", "args": ["-c", "exec zenmode serve --full"]})).is_some()
        );
        assert!(
            runs(json!({"command": "cargo", "args": ["run", "--bin", "zenmode", "--", "serve"]}))
                .is_some()
        );
        assert!(runs(json!({"command": "npx", "args": ["zenmode-helper", "serve"]})).is_none());
        assert!(runs(json!({"command": "sh", "args": ["-c", "zenmode upstream list"]})).is_none());
        assert!(runs(json!({"url": "http://zenmode/mcp"})).is_none());
        let file = parse(&json!({"mcpServers": {"me": {"command": "zenmode", "args": ["serve"]}, "other": {"command": "x"}}})).unwrap();
        assert_eq!(file.servers.len(), 1);
        assert!(
            file.warnings[0].contains("runs zenmode itself"),
            "{:?}",
            file.warnings
        );
    }

    #[test]
    fn allow_and_deny_lists_take_globs() {
        let config = one(json!({"command": "x", "allow_tools": ["read_*", "list"], "deny_tools": ["read_secret*"]}))
            .unwrap();
        assert!(config.allows("read_file"));
        assert!(config.allows("list"));
        assert!(!config.allows("write_file"));
        assert!(!config.allows("read_secrets"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxc"));
    }
}
