//! `${VAR}` placeholders in an entry's `env`, `headers`, `url` and OAuth
//! client secret, filled from zenmode's environment when the server starts,
//! so the upstreams file need not hold a secret. An unset variable is an
//! error for that entry alone, naming the variable, never a value.

use std::collections::BTreeMap;

use super::entry::{Transport, UpstreamConfig};

impl UpstreamConfig {
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
