//! One server's sign-in on disk: `<config dir>/oauth/<server>.json`, the
//! directory 0700 and the file 0600, written whole (temporary file, then
//! rename) so a reader never sees half of it. It holds the client that was
//! registered (ID and, for a confidential client, its secret), the
//! authorization server's metadata and the tokens. Every token read or
//! written, and every client secret, is registered at once with the log
//! redactor and with [`held`], the set hidden in everything zenmode relays
//! from an upstream (a server may quote the `Authorization` header back).
//!
//! Renewals of one server's token, by any process, take the lock file
//! beside it (`<server>.json.lock`, see [`TokenFile::lock_renewal`]): with
//! rotating refresh tokens, two processes refreshing with the same refresh
//! token would sign each other out.
//!
//! There is no OS keyring on a headless Linux machine (no Secret Service
//! without a desktop session), so the file is the store everywhere.

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError, RwLock},
    time::Duration,
};

use crate::platform::private_file;
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::platform::redact::{self, Redactor};

/// What the file holds.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The server URL the sign-in was for; a file for another URL is ignored.
    pub url: String,
    #[serde(default)]
    pub client_id: Option<String>,
    #[serde(default)]
    pub client_secret: Option<String>,
    #[serde(default)]
    pub redirect_uri: Option<String>,
    #[serde(default)]
    pub metadata: Option<AuthorizationMetadata>,
    #[serde(default)]
    pub credentials: Option<StoredCredentials>,
}

/// The token file of one server, shared by its sign-in and its refreshes.
#[derive(Clone)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
    /// The client being signed in, kept beside the tokens rmcp saves.
    pending: Arc<Mutex<Saved>>,
}

impl TokenFile {
    pub fn new(path: PathBuf, url: &str) -> Self {
        TokenFile {
            path,
            url: url.to_owned(),
            pending: Arc::new(Mutex::new(Saved {
                url: url.to_owned(),
                ..Saved::default()
            })),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's content when it belongs to this URL.
    pub fn read(&self) -> Option<Saved> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let saved: Saved = serde_json::from_str(&text).ok()?;
        if saved.url != self.url {
            return None;
        }
        hide_tokens(saved.credentials.as_ref());
        Some(saved)
    }

    /// Sets the client (and metadata) that the next saved tokens belong to.
    pub fn set_client(
        &self,
        client_id: &str,
        client_secret: Option<&str>,
        redirect_uri: &str,
        metadata: Option<AuthorizationMetadata>,
    ) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.client_id = Some(client_id.to_owned());
        pending.client_secret = client_secret.map(str::to_owned);
        pending.redirect_uri = Some(redirect_uri.to_owned());
        pending.metadata = metadata;
        if let Some(secret) = client_secret {
            hold(secret, true);
        }
    }

    /// Takes the client from the file, for refreshes in a later process.
    pub fn adopt(&self, saved: &Saved) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        *pending = saved.clone();
        pending.credentials = None;
        if let Some(secret) = &saved.client_secret {
            hold(secret, true);
        }
    }

    /// Takes the renewal lock of this server's tokens, shared by every
    /// zenmode process (an advisory lock on `<file>.lock`, released when the
    /// returned file is dropped, also when the process dies). Waits while
    /// another process renews; gives up after `wait` with an error, so a
    /// stuck process cannot stop the others for good.
    pub async fn lock_renewal(&self, wait: Duration) -> Result<std::fs::File, String> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let dir = path.parent().ok_or("the token file has no directory")?;
        self.prepare_dir(dir)?;
        let file = private_file::open_lock_file(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(format!("cannot lock {}: {e}", path.display()));
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "another zenmode process has held {} for over {}s",
                    path.display(),
                    wait.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Creates the token directory owner-only, or makes the one zenmode
    /// made owner-only again. A directory reached through a symbolic link
    /// is someone else's choice (a synced or shared folder): its mode is
    /// left as it is, and said once; the token files in it are still 0600.
    fn prepare_dir(&self, dir: &Path) -> Result<(), String> {
        let linked = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
        private_file::create_private_dir(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        if linked {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(
                    "{} is a symbolic link: zenmode leaves the mode of a directory it did not create as it is (the token files in it are still owner-only)",
                    dir.display()
                );
            });
            return Ok(());
        }
        private_file::restrict_dir(dir)
            .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))
    }

    /// Writes `saved` whole with owner-only permissions.
    fn write(&self, saved: &Saved) -> Result<(), String> {
        let dir = self
            .path
            .parent()
            .ok_or("the token file has no directory")?;
        self.prepare_dir(dir)?;
        let text = serde_json::to_vec_pretty(saved).map_err(|e| e.to_string())?;
        private_file::write_private(&self.path, &text, private_file::Flush::ToDisk)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// Registers the access and refresh tokens with the log redactor and
/// [`held`].
pub fn hide_tokens(credentials: Option<&StoredCredentials>) {
    let Some(fields) = credentials.and_then(token_fields) else {
        return;
    };
    for secret in [fields.access, fields.refresh.unwrap_or_default()] {
        hold(&secret, false);
    }
}

/// Tokens kept in [`held`]: the newest of every server's tokens and
/// refresh tokens, many renewals deep (a token replaced a moment ago may
/// still be quoted), without growing for as long as the process runs.
const HELD_TOKENS: usize = 64;

/// The OAuth secrets this process holds, for hiding in what it relays.
#[derive(Default)]
struct Held {
    /// Client secrets: few, and valid until the user changes them.
    client_secrets: Vec<String>,
    tokens: VecDeque<String>,
    redactor: Redactor,
}

static HELD: RwLock<Option<Held>> = RwLock::new(None);

/// Adds one secret to the log redactor and to [`held`] (once: the file is
/// read again before every renewal).
fn hold(secret: &str, client_secret: bool) {
    if secret.is_empty() {
        return;
    }
    let mut held = HELD.write().unwrap_or_else(PoisonError::into_inner);
    let held = held.get_or_insert_with(Held::default);
    if held.client_secrets.iter().any(|s| s == secret) || held.tokens.iter().any(|s| s == secret) {
        return;
    }
    redact::register(&Redactor::new(vec![secret.to_owned()]));
    if client_secret {
        held.client_secrets.push(secret.to_owned());
    } else {
        held.tokens.push_back(secret.to_owned());
        if held.tokens.len() > HELD_TOKENS {
            held.tokens.pop_front();
        }
    }
    held.redactor = Redactor::new(
        held.client_secrets
            .iter()
            .chain(held.tokens.iter())
            .cloned()
            .collect(),
    );
}

/// `own` (a server's own secrets) with every OAuth secret the process
/// holds now: what is hidden in whatever is relayed from that server.
pub fn with_held(own: &Redactor) -> Redactor {
    own.clone().merged(&held())
}

/// Every OAuth token, refresh token and client secret this process holds
/// (or held recently), as a redactor; empty when it signed in nowhere.
pub fn held() -> Redactor {
    HELD.read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map(|held| held.redactor.clone())
        .unwrap_or_default()
}

/// The parts of a token response zenmode reads (through its JSON form, the
/// field names of RFC 6749, so no OAuth crate is needed here).
pub struct TokenFields {
    pub access: String,
    pub refresh: Option<String>,
    /// Seconds the access token lives, counted from `received_at`.
    pub expires_in: Option<u64>,
    pub received_at: Option<u64>,
}

pub fn token_fields(credentials: &StoredCredentials) -> Option<TokenFields> {
    let value = serde_json::to_value(credentials.token_response.as_ref()?).ok()?;
    Some(TokenFields {
        access: value.get("access_token")?.as_str()?.to_owned(),
        refresh: value
            .get("refresh_token")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        expires_in: value.get("expires_in").and_then(|v| v.as_u64()),
        received_at: credentials.token_received_at,
    })
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read().and_then(|saved| saved.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        hide_tokens(Some(&credentials));
        let mut saved = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        saved.credentials = Some(credentials);
        self.write(&saved).map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(AuthError::CredentialStoreError(e.to_string()))
            }
            _ => Ok(()),
        }
    }
}
