//! Reading and checking the upstreams file: its shape first, then each
//! entry on its own, so one bad entry is set aside (and named, with what is
//! wrong) while the others are served. Every error names the file and,
//! where it applies, the entry and the key.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use serde_json::{Map, Value};

use super::{
    entry::{
        DEFAULT_IDLE_SHUTDOWN, DEFAULT_TIMEOUT, OAuthSettings, Startup, Transport, UpstreamConfig,
    },
    runs_itself::{runs_zenmode, self_skip_message},
};
use crate::{
    catalog::gateway_modes::{SEPARATOR, is_valid_tool_name},
    gateway::reply_guard::DEFAULT_MAX_REPLY_BYTES,
};

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
    "script_writes",
];

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
        script_writes: match entry
            .get("script_writes")
            .map(|v| string(v, "script_writes"))
            .transpose()?
            .as_deref()
        {
            None | Some("deny") => false,
            Some("allow") => true,
            Some(other) => {
                return Err(format!(
                    "\"script_writes\" is {other:?}; it is \"allow\" or \"deny\""
                ));
            }
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
