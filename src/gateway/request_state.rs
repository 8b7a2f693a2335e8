//! zenmode's own `requestState` for a 2026-07-28 upstream's
//! input-required result.
//!
//! The client sees one server (zenmode) but the state belongs to an
//! upstream, so zenmode wraps it: the upstream's state, the server and tool
//! it belongs to, a one-time nonce and an expiry, signed with HMAC-SHA256.
//! The client echoes it back on its retry; a changed byte, an expired or
//! already used state, or one for another server is refused before anything
//! reaches an upstream. The key is random per process unless
//! `ZEN_REQUEST_STATE_KEY` (at least 32 bytes) sets one, so several
//! processes behind a load balancer accept each other's states (a used
//! nonce is remembered only by the process that saw it).

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    hmac,
    rand::{SecureRandom, SystemRandom},
};
use serde::{Deserialize, Serialize};

/// The environment variable that sets the signing key.
pub const KEY_ENV: &str = crate::platform::settings::REQUEST_STATE_KEY;
/// How long a client may take to answer before its state expires.
const LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Marks zenmode's format (and its version).
const PREFIX: &str = "zm1.";

/// What a sealed state carries.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Wrapped {
    /// The upstream server's name.
    pub server: String,
    pub tool: String,
    /// The upstream's own state, passed back to it unchanged.
    pub state: Option<String>,
    nonce: String,
    /// Milliseconds since the epoch.
    expires: u64,
}

fn key() -> &'static hmac::Key {
    static KEY: OnceLock<hmac::Key> = OnceLock::new();
    KEY.get_or_init(|| {
        if let Some(configured) = std::env::var_os(KEY_ENV) {
            let bytes = configured.into_encoded_bytes();
            if bytes.len() >= 32 {
                return hmac::Key::new(hmac::HMAC_SHA256, &bytes);
            }
            tracing::error!(
                "{KEY_ENV} is shorter than 32 bytes and is not used; this process signs with a random key, so other processes refuse its request states"
            );
        }
        let mut bytes = [0u8; 32];
        if SystemRandom::new().fill(&mut bytes).is_err() {
            tracing::error!("no system randomness for the request-state key");
        }
        hmac::Key::new(hmac::HMAC_SHA256, &bytes)
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// Seals `state` of `server`'s `tool` for the client.
pub fn seal(server: &str, tool: &str, state: Option<String>) -> String {
    let mut nonce = [0u8; 16];
    let _ = SystemRandom::new().fill(&mut nonce);
    let wrapped = Wrapped {
        server: server.to_owned(),
        tool: tool.to_owned(),
        state,
        nonce: URL_SAFE_NO_PAD.encode(nonce),
        expires: now_ms() + LIFETIME.as_millis() as u64,
    };
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wrapped).unwrap_or_default());
    let tag = hmac::sign(key(), payload.as_bytes());
    format!("{PREFIX}{payload}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// The server an intact state belongs to, without using it up.
pub fn server_of(sealed: &str) -> Option<String> {
    verified(sealed).ok().map(|wrapped| wrapped.server)
}

/// Opens a state the client sent back; the error says why it is refused.
/// Each state opens once.
pub fn open(sealed: &str) -> Result<Wrapped, String> {
    let refused = |why: &str| format!("the requestState is refused: {why}");
    let wrapped = verified(sealed)?;
    let now = now_ms();
    if wrapped.expires < now {
        return Err(refused("it has expired; start the call again"));
    }
    let mut used = used_nonces().lock().unwrap_or_else(|p| p.into_inner());
    used.retain(|_, expires| *expires >= now);
    if used
        .insert(wrapped.nonce.clone(), wrapped.expires)
        .is_some()
    {
        return Err(refused("it was already used; each state answers one retry"));
    }
    Ok(wrapped)
}

/// The content of a state whose signature holds.
fn verified(sealed: &str) -> Result<Wrapped, String> {
    let refused = |why: &str| format!("the requestState is refused: {why}");
    let (payload, tag) = sealed
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('.'))
        .ok_or_else(|| refused("it is not one zenmode issued"))?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| refused("its signature is malformed"))?;
    hmac::verify(key(), payload.as_bytes(), &tag).map_err(|_| {
        refused("its signature does not match (changed, or signed with another key)")
    })?;
    let wrapped: Wrapped = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| refused("its content is unreadable"))?;
    Ok(wrapped)
}

fn used_nonces() -> &'static Mutex<HashMap<String, u64>> {
    static USED: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    USED.get_or_init(Mutex::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_once_and_only_unchanged() {
        let sealed = seal("srv", "tool", Some("theirs".into()));
        let mut changed = sealed.clone().into_bytes();
        let at = PREFIX.len() + 3;
        changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert!(open(&changed).unwrap_err().contains("signature"));
        let opened = open(&sealed).unwrap();
        assert_eq!(
            (
                opened.server.as_str(),
                opened.tool.as_str(),
                opened.state.as_deref()
            ),
            ("srv", "tool", Some("theirs"))
        );
        assert!(open(&sealed).unwrap_err().contains("already used"));
        assert!(
            open("upstream-round-1|tea")
                .unwrap_err()
                .contains("not one zenmode issued")
        );
    }
}
