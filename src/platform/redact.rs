//! Hiding secrets in text: in what an upstream or provider sends back, and
//! in every log line whoever wrote it (zenmode, rmcp, hyper).
//!
//! Secrets are values the user gave zenmode to pass on: upstream `env` and
//! `headers` values, credentials inside an upstream URL, provider keys and
//! the HTTP front's bearer token. [`Redactor`] hides a known set of them;
//! [`register`] adds a set to the process-wide one that [`for_log`] applies
//! to each log line, together with [`hide_url_credentials`] for URLs the
//! process never saw configured.
//!
//! What is hidden, and what is not, on purpose:
//! - a value of 6 characters or more is hidden wherever it appears;
//! - a shorter value is hidden where it stands as a whole token, but only
//!   when it is a credential: a header or `env` name that looks like one
//!   (see [`looks_secret`]), an `Authorization` credential, or a URL's
//!   password or secret query parameter. Other short values (`DEBUG=1`,
//!   `LOG_LEVEL=info`) are left alone: hiding them would blank every `1` or
//!   `info` in a server's messages.

use std::sync::{PoisonError, RwLock};

/// What a hidden secret becomes.
pub const MASK: &str = "[redacted]";

/// Values at least this long are hidden wherever they appear.
const MIN_ANYWHERE_CHARS: usize = 6;

/// Replaces known secret values in text with [`MASK`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Hidden wherever they appear; longest first, so a value that contains
    /// another is hidden whole.
    anywhere: Vec<String>,
    /// Short credentials, hidden only as whole tokens.
    whole_tokens: Vec<String>,
}

impl Redactor {
    /// A redactor for values that are all credentials: long ones are hidden
    /// anywhere, short ones as whole tokens.
    pub fn new(secrets: Vec<String>) -> Self {
        let mut redactor = Redactor::default();
        for secret in secrets {
            redactor.add(secret, true);
        }
        redactor.sorted()
    }

    /// Adds one value; `credential` says a short one is still a secret.
    pub fn add(&mut self, value: String, credential: bool) {
        let value = value.trim().to_owned();
        // A bare `${VAR}` placeholder names a secret without being one;
        // hiding it would hide the name from the error that says it is unset.
        if value.is_empty() || is_placeholder(&value) {
            return;
        }
        if value.chars().count() >= MIN_ANYWHERE_CHARS {
            self.anywhere.push(value);
        } else if credential {
            self.whole_tokens.push(value);
        }
    }

    /// Adds a named value (an `env` variable or a header): every value of 6
    /// characters or more, and shorter ones when the name looks secret. For
    /// `Bearer abc` the credential alone is added too.
    pub fn add_named(&mut self, name: &str, value: &str) {
        let credential = looks_secret(name);
        self.add(value.to_owned(), credential);
        let mut words = value.split_whitespace();
        if let (Some(_scheme), Some(rest)) = (words.next(), words.next()) {
            self.add(rest.to_owned(), credential);
        }
    }

    /// Adds the credentials inside a URL (its user information and the
    /// values of secret-looking query parameters).
    pub fn add_url(&mut self, url: &str) {
        for secret in url_secrets(url) {
            self.add(secret, true);
        }
    }

    /// Sorts and deduplicates; call after the last `add`.
    pub fn sorted(mut self) -> Self {
        for list in [&mut self.anywhere, &mut self.whole_tokens] {
            list.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
            list.dedup();
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.anywhere.is_empty() && self.whole_tokens.is_empty()
    }

    /// `text` with every known secret replaced by [`MASK`].
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.anywhere {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), MASK);
            }
        }
        for secret in &self.whole_tokens {
            text = replace_whole_tokens(&text, secret);
        }
        text
    }

    /// `value` with every known secret hidden in its strings and in the
    /// names of its members (a JSON answer relayed whole).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) if self.finds_in(text) => *text = self.redact(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(members) => {
                if members.keys().any(|name| self.finds_in(name)) {
                    *members = std::mem::take(members)
                        .into_iter()
                        .map(|(name, member)| (self.redact(&name), member))
                        .collect();
                }
                members
                    .values_mut()
                    .for_each(|member| self.redact_json(member));
            }
            _ => {}
        }
    }

    /// `value` (a request or answer in its typed form) with every known
    /// secret hidden, through its JSON form; unchanged when nothing is
    /// found or the hidden form no longer reads as the type.
    pub fn redact_typed<T>(&self, value: T) -> T
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        if self.is_empty() {
            return value;
        }
        let Ok(mut json) = serde_json::to_value(&value) else {
            return value;
        };
        if !self.finds_in(&json.to_string()) {
            return value;
        }
        self.redact_json(&mut json);
        serde_json::from_value(json).unwrap_or(value)
    }

    /// Whether `text` holds a secret this redactor would hide.
    pub fn finds_in(&self, text: &str) -> bool {
        self.anywhere.iter().any(|s| text.contains(s.as_str()))
            || self
                .whole_tokens
                .iter()
                .any(|s| replace_whole_tokens(text, s) != text)
    }

    /// This redactor and `other`'s secrets together.
    pub fn merged(mut self, other: &Redactor) -> Self {
        if !other.is_empty() {
            self.merge(other);
        }
        self
    }

    fn merge(&mut self, other: &Redactor) {
        self.anywhere.extend(other.anywhere.iter().cloned());
        self.whole_tokens.extend(other.whole_tokens.iter().cloned());
        *self = std::mem::take(self).sorted();
    }
}

/// Free text a user typed (a task kept as a learned example), with what
/// may be a secret hidden even where no secret was registered: registered
/// secrets and URL credentials (as in logs), `name=value` pairs whose name
/// says credential, words with a well-known token prefix, and long runs of
/// letters and digits mixed (keys, hashes of sessions, tokens).
pub fn scrub_free_text(text: &str) -> String {
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_",
        "pk_",
        "rk_",
        "ghp_",
        "gho_",
        "ghs_",
        "ghu_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xapp-",
        "AKIA",
        "ASIA",
        "AIza",
        "ya29.",
        "eyJ",
    ];
    let known = for_log(text).unwrap_or_else(|| text.to_owned());
    let word_is_secret = |word: &str| {
        let core = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let prefixed = PREFIXES
            .iter()
            .any(|prefix| core.starts_with(prefix) && core.len() >= prefix.len() + 8);
        let token_chars = core
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c));
        let digits = core.chars().filter(char::is_ascii_digit).count();
        let letters = core.chars().filter(char::is_ascii_alphabetic).count();
        let mixed_run = core.len() >= 24 && token_chars && digits >= 3 && letters >= 3;
        prefixed || mixed_run
    };
    known
        .split_inclusive(char::is_whitespace)
        .map(|piece| {
            let word = piece.trim_end();
            let space = &piece[word.len()..];
            if let Some((name, value)) = word.split_once(['=', ':'])
                && !value.is_empty()
                && looks_secret(name)
            {
                return format!(
                    "{name}{}[redacted]{space}",
                    &word[name.len()..name.len() + 1]
                );
            }
            if word_is_secret(word) {
                format!("[redacted]{space}")
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

/// Whether an `env` or header name says its value is a credential.
pub fn looks_secret(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASS",
        "PWD",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
        "PRIVATE",
        "SIGNATURE",
        "CERT",
    ];
    // Short words that would match inside harmless names (`SHIPPING`,
    // `BOOTPATH`) count only as a whole word of the name.
    const WHOLE_WORDS: &[&str] = &["PIN", "OTP", "TOTP", "HOTP", "PINCODE", "MFA"];
    let upper = name.to_ascii_uppercase();
    WORDS.iter().any(|word| upper.contains(word))
        || name_words(name).any(|word| {
            WHOLE_WORDS
                .iter()
                .any(|short| word.eq_ignore_ascii_case(short))
        })
}

/// The words of a variable or header name: split at anything but a letter
/// or digit, and where a lowercase letter meets an uppercase one
/// (`userPin`, `X-Otp`, `SIM_PIN`).
fn name_words(name: &str) -> impl Iterator<Item = &str> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .flat_map(|part| {
            let mut words = Vec::new();
            let mut start = 0;
            let bytes = part.as_bytes();
            for i in 1..bytes.len() {
                if bytes[i - 1].is_ascii_lowercase() && bytes[i].is_ascii_uppercase() {
                    words.push(&part[start..i]);
                    start = i;
                }
            }
            words.push(&part[start..]);
            words
        })
        .filter(|word| !word.is_empty())
}

/// `text` with `secret` replaced where it stands as a whole token: not
/// inside a longer run of letters, digits, `-` or `_`.
pub fn replace_whole_tokens(text: &str, secret: &str) -> String {
    if secret.is_empty() || !text.contains(secret) {
        return text.to_owned();
    }
    let is_token_char = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, _) in text.match_indices(secret) {
        if start < copied {
            continue; // overlaps a replaced occurrence
        }
        let end = start + secret.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if before.is_some_and(is_token_char) || after.is_some_and(is_token_char) {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(MASK);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Query parameters whose values are credentials.
fn is_secret_parameter(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    looks_secret(name)
        || matches!(
            lower.as_str(),
            "key" | "sig" | "code" | "pw" | "apikey" | "api-key" | "jwt" | "bearer"
        )
}

/// The credentials in a URL: the user information (both parts) and the
/// values of secret-looking query parameters.
fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some((_, after_scheme)) = url.split_once("://") {
        let authority = after_scheme
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        if let Some((user_info, _host)) = authority.rsplit_once('@') {
            match user_info.split_once(':') {
                Some((user, password)) => {
                    secrets.push(password.to_owned());
                    secrets.push(user.to_owned());
                }
                None => secrets.push(user_info.to_owned()),
            }
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        for pair in query.split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && is_secret_parameter(name)
            {
                secrets.push(value.to_owned());
            }
        }
    }
    secrets.retain(|s| !s.is_empty());
    secrets
}

/// `url` as it may be shown: user information and secret query values
/// replaced by [`MASK`], the rest kept so the user recognises the server.
pub fn url_for_display(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(scheme_end) = shown.find("://").map(|at| at + 3) {
        let rest = &shown[scheme_end..];
        let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_len].rfind('@') {
            shown.replace_range(scheme_end..scheme_end + at, MASK);
        }
    }
    let Some(query_start) = shown.find('?').map(|at| at + 1) else {
        return shown;
    };
    let fragment_start = shown[query_start..]
        .find('#')
        .map_or(shown.len(), |at| query_start + at);
    let query: Vec<String> = shown[query_start..fragment_start]
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if is_secret_parameter(name) && !value.is_empty() => {
                format!("{name}={MASK}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    shown.replace_range(query_start..fragment_start, &query.join("&"));
    shown
}

/// Hides the user information of every `scheme://user:password@` in
/// `text`, known or not.
pub fn hide_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_len = after
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .unwrap_or(after.len());
        match after[..authority_len].rfind('@') {
            Some(at_sign) if at_sign > 0 => {
                out.push_str(MASK);
                rest = &after[at_sign..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// The secrets every log line is cleaned of.
static LOG_SECRETS: RwLock<Option<Redactor>> = RwLock::new(None);

/// Adds secrets to those hidden in every log line, from now on.
pub fn register(redactor: &Redactor) {
    if redactor.is_empty() {
        return;
    }
    let mut known = LOG_SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    known.get_or_insert_with(Redactor::default).merge(redactor);
}

/// A log line with every registered secret and every URL's credentials
/// hidden; `None` when nothing needed hiding (the common case, no copy).
pub fn for_log(line: &str) -> Option<String> {
    let known = LOG_SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    let needs_known = known.as_ref().is_some_and(|r| r.finds_in(line));
    let needs_url = line.contains("://") && line.contains('@');
    if !needs_known && !needs_url {
        return None;
    }
    let mut cleaned = match known.as_ref() {
        Some(redactor) if needs_known => redactor.redact(line),
        _ => line.to_owned(),
    };
    if needs_url {
        cleaned = hide_url_credentials(&cleaned);
    }
    Some(cleaned)
}

/// `${NAME}` and nothing else.
fn is_placeholder(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_text_loses_what_looks_like_a_secret_and_keeps_the_rest() {
        let text = "use token=abc123 and ghp_AbCdEf1234567890XyZ to push repo acme/site, \
            key 9f8e7d6c5b4a39281706f5e4d3c2b1a0 then https://bob:pw@example.com/x";
        let clean = scrub_free_text(text);
        for secret in ["abc123", "ghp_AbCdEf", "9f8e7d6c5b4a", "bob:pw"] {
            assert!(!clean.contains(secret), "{secret} in {clean}");
        }
        for kept in ["use token=", "to push repo acme/site,", "then https://"] {
            assert!(clean.contains(kept), "{kept} lost from {clean}");
        }
        let plain = "open issue 4512 in acme/widgets about the login-page-timeout-regression";
        assert_eq!(scrub_free_text(plain), plain);
    }

    #[test]
    fn long_values_go_anywhere_and_short_credentials_as_whole_tokens() {
        let mut redactor = Redactor::default();
        redactor.add_named("API_KEY", "ab12");
        redactor.add_named("DEBUG", "1");
        redactor.add_named("Authorization", "Bearer tok123456");
        let redactor = redactor.sorted();
        assert_eq!(
            redactor.redact("key ab12 in xab12 and 1 and Bearer tok123456."),
            "key [redacted] in xab12 and 1 and [redacted]."
        );
        assert_eq!(redactor.redact("sent tok123456!"), "sent [redacted]!");
        assert!(redactor.finds_in("(ab12)"));
        assert!(!redactor.finds_in("1 2 3"));
    }

    #[test]
    fn a_short_pin_or_one_time_code_is_a_credential() {
        for name in [
            "PIN", "SIM_PIN", "userPin", "X-Otp", "MFA_CODE", "TOTP", "OTP_CODE",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["SHIPPING_MODE", "BOOTPATH", "SPINNER", "DEBUG", "OPTION"] {
            assert!(!looks_secret(name), "{name}");
        }
        let mut redactor = Redactor::default();
        redactor.add_named("SMARTCARD_PIN", "4711");
        redactor.add_named("OTP", "90210");
        let redactor = redactor.sorted();
        assert_eq!(
            redactor.redact("pin 4711 and code 90210 rejected"),
            "pin [redacted] and code [redacted] rejected"
        );
    }

    #[test]
    fn url_credentials_are_found_and_masked_for_display() {
        let url =
            "https://alice:pw-secret-99@api.example.com/mcp?team=x&api_key=qk7&token=t0k#frag";
        assert_eq!(
            url_for_display(url),
            "https://[redacted]@api.example.com/mcp?team=x&api_key=[redacted]&token=[redacted]#frag"
        );
        let mut redactor = Redactor::default();
        redactor.add_url(url);
        let text = redactor
            .sorted()
            .redact("got pw-secret-99, qk7 and t0k; team x");
        assert_eq!(text, "got [redacted], [redacted] and [redacted]; team x");
        assert_eq!(url_for_display("http://h/mcp"), "http://h/mcp");
        assert_eq!(
            hide_url_credentials("GET http://u:p@h/x and \"https://v@h2\" mail a@b"),
            "GET http://[redacted]@h/x and \"https://[redacted]@h2\" mail a@b"
        );
    }

    #[test]
    fn a_placeholder_is_not_a_secret_but_its_value_is() {
        let mut redactor = Redactor::default();
        redactor.add_named("NOTION_TOKEN", "${NOTION_TOKEN}");
        redactor.add_named("Authorization", "Bearer ${API_KEY}");
        redactor.add_named("API_KEY", "real-key-value-123");
        let redactor = redactor.sorted();
        let message = "env \"NOTION_TOKEN\" uses ${NOTION_TOKEN}, but NOTION_TOKEN is not set";
        assert_eq!(redactor.redact(message), message);
        assert!(
            !redactor
                .redact("key real-key-value-123")
                .contains("real-key")
        );
    }

    #[test]
    fn json_is_cleaned_in_values_and_member_names_and_typed_values_keep_their_type() {
        let redactor = Redactor::new(vec!["tok-secret-1234".into()]);
        let mut value = serde_json::json!({
            "text": "Bearer tok-secret-1234",
            "list": [1, "tok-secret-1234"],
            "Bearer tok-secret-1234": {"nested": "x tok-secret-1234"}
        });
        redactor.redact_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "text": "Bearer [redacted]",
                "list": [1, "[redacted]"],
                "Bearer [redacted]": {"nested": "x [redacted]"}
            })
        );
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Asked {
            message: String,
            count: u32,
        }
        let asked = Asked {
            message: "you sent tok-secret-1234".into(),
            count: 2,
        };
        assert_eq!(
            redactor.redact_typed(asked),
            Asked {
                message: "you sent [redacted]".into(),
                count: 2
            }
        );
    }

    #[test]
    fn registered_secrets_leave_log_lines_whoever_wrote_them() {
        assert_eq!(for_log("nothing to hide"), None);
        register(&Redactor::new(vec!["reg-secret-777".into()]));
        assert_eq!(
            for_log("ERROR rmcp: HTTP 401 Bearer reg-secret-777").as_deref(),
            Some("ERROR rmcp: HTTP 401 Bearer [redacted]")
        );
        assert_eq!(
            for_log("connecting to https://me:pw@host/").as_deref(),
            Some("connecting to https://[redacted]@host/")
        );
    }
}
