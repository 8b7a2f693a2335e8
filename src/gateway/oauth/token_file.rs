//! One server's sign-in on disk: `<config dir>/oauth/<server>.json`, the
//! directory 0700 and the file 0600, written whole (temporary file, then
//! rename) so a reader never sees half of it. It holds the client that was
//! registered (ID and, for a confidential client, its secret), the
//! authorization server's metadata and the tokens. Every token read or
//! written is registered with the log redactor at once.
//!
//! There is no OS keyring on a headless Linux machine (no Secret Service
//! without a desktop session), so the file is the store everywhere.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
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
            redact::register(&Redactor::new(vec![secret.to_owned()]));
        }
    }

    /// Takes the client from the file, for refreshes in a later process.
    pub fn adopt(&self, saved: &Saved) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        *pending = saved.clone();
        pending.credentials = None;
        if let Some(secret) = &saved.client_secret {
            redact::register(&Redactor::new(vec![secret.clone()]));
        }
    }

    /// Writes `saved` whole with owner-only permissions.
    fn write(&self, saved: &Saved) -> Result<(), String> {
        let dir = self
            .path
            .parent()
            .ok_or("the token file has no directory")?;
        private_file::create_private_dir(dir)
            .and_then(|()| private_file::restrict_dir(dir))
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let text = serde_json::to_vec_pretty(saved).map_err(|e| e.to_string())?;
        private_file::write_private(&self.path, &text, private_file::Flush::ToDisk)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// Registers the access and refresh tokens with the log redactor.
pub fn hide_tokens(credentials: Option<&StoredCredentials>) {
    let Some(fields) = credentials.and_then(token_fields) else {
        return;
    };
    let secrets = [fields.access, fields.refresh.unwrap_or_default()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    redact::register(&Redactor::new(secrets));
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
