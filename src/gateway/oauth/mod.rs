//! OAuth 2.1 sign-in for HTTP upstreams, as the MCP authorization spec
//! describes it for clients. rmcp's `auth` feature does the protocol work
//! (protected-resource and authorization-server metadata discovery with the
//! 2025-03-26 fallbacks, dynamic registration, PKCE S256, the `resource`
//! parameter, the token endpoint's client authentication, refresh); this
//! module decides which client to use, where tokens live and when they are
//! renewed:
//!
//! - [`token_file`]: the owner-only token file per server;
//! - [`keeper`]: one server's current token, renewed before it ages out and
//!   once after a 401, one renewal at a time (concurrent calls wait for it),
//!   and the HTTP client that puts the token on every request;
//! - here: the sign-ins themselves (authorization code with a caller-given
//!   way to reach the callback, and client credentials).

pub mod keeper;
pub mod token_file;

use std::future::Future;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, WWWAuthenticateParams,
};

use self::token_file::TokenFile;
use super::config::OAuthSettings;

/// The state `zenmode status` shows for a server waiting for sign-in.
pub const NEEDS_SIGN_IN: &str = "needs sign-in";

/// The state `zenmode status` shows for a server that answered 401 but
/// offers no sign-in: it wants a credential in a header.
pub const NEEDS_CREDENTIAL: &str = "needs credential";

/// The client name zenmode registers under.
const CLIENT_NAME: &str = "zenmode";

/// The token file of `server` (signed in to `url`), where
/// [`super::disk::ServerFiles`] puts it.
pub fn token_file(server: &str, url: &str) -> TokenFile {
    TokenFile::new(
        super::disk::GatewayDirs::from_env().files(server).token,
        url,
    )
}

/// Whether `server` has tokens (or a machine client) to sign in with.
pub fn signed_in(server: &str, url: &str, settings: Option<&OAuthSettings>) -> bool {
    settings.is_some_and(|s| s.client_credentials)
        || token_file(server, url)
            .read()
            .is_some_and(|saved| saved.credentials.is_some())
}

/// The error text for a server that needs a person to sign in.
pub fn needs_sign_in_message(server: &str) -> String {
    format!(
        "server {server:?} needs sign-in (OAuth): run `zenmode upstream login {server}` once; zenmode keeps the tokens and refreshes them"
    )
}

/// The environment variable suggested to hold `server`'s token, e.g.
/// `GITHUB_TOKEN` for `github` (letters and digits kept, the rest `_`).
pub fn token_variable(server: &str) -> String {
    let stem: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{}_TOKEN", stem.trim_matches('_'))
}

/// The error text for a server that answered 401 without offering OAuth:
/// the `--header` form with a `${VAR}` placeholder, so the token stays in
/// the environment and out of the file. `url` is shown as the entry gives
/// it (credentials in it hidden).
pub fn needs_credential_message(server: &str, url: &str) -> String {
    let variable = token_variable(server);
    let url = crate::platform::redact::url_for_display(url);
    format!(
        "server {server:?} wants a credential (401 without OAuth sign-in): give it --header 'Authorization: Bearer ${{{variable}}}' with {variable} set where zenmode starts: `zenmode upstream add {server} --url '{url}' --header 'Authorization: Bearer ${{{variable}}}' --replace` (`zenmode upstream login` cannot help: the server names no authorization server)"
    )
}

/// The state to record for `server` after a start failed with `message`:
/// [`NEEDS_SIGN_IN`], [`NEEDS_CREDENTIAL`] or `failed`.
pub fn failure_state(server: &str, message: &str) -> &'static str {
    if message == needs_sign_in_message(server) {
        NEEDS_SIGN_IN
    } else if message.starts_with(&format!("server {server:?} wants a credential ")) {
        NEEDS_CREDENTIAL
    } else {
        "failed"
    }
}

/// Whether the server at `url` offers OAuth sign-in: `Ok` when discovery
/// (seeded by its 401 `challenge`) finds an authorization server's
/// metadata, or, for a 2025-03-26 server without metadata, when its origin
/// answers at the default `/authorize` endpoint; `Err(why)` otherwise.
/// rmcp falls back to those default endpoints whatever the server is, which
/// sent bearer-token servers to a registration that could only fail.
pub async fn offers_sign_in(url: &str, challenge: Option<&str>) -> Result<(), String> {
    super::tls::install_tls_provider();
    let manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| explain(&e))?;
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) if resolution.source.is_discovered() => Ok(()),
        Ok(resolution) => {
            default_endpoint_answers(&resolution.metadata.authorization_endpoint).await
        }
        Err(error) => match same_origin_fallback(&error, url).await {
            Ok(_) => Ok(()),
            // Metadata that is there but refused (too large) still offers a
            // sign-in: `upstream login` then says why it cannot use it.
            Err(why) if why.contains(OVER_LIMIT) => Ok(()),
            Err(why) => Err(why),
        },
    }
}

/// How a metadata document over its size limit is reported.
const OVER_LIMIT: &str = "the metadata document is over its limit";

/// Whether a GET of the synthesized authorization endpoint (no redirect
/// followed) reaches something: an authorization server answers a request
/// without parameters with an error page, a form or a redirect; a server
/// without one answers 404, or 401 as it does for every path.
async fn default_endpoint_answers(endpoint: &str) -> Result<(), String> {
    let none = || "it publishes no OAuth metadata and has no authorization endpoint".to_owned();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let status = client
        .get(endpoint)
        .send()
        .await
        .map_err(|_| none())?
        .status()
        .as_u16();
    if matches!(status, 401 | 403 | 404 | 405 | 410) {
        Err(none())
    } else {
        Ok(())
    }
}

/// A readable form of an rmcp auth error (no type names, no secrets).
pub fn explain(error: &AuthError) -> String {
    match error {
        AuthError::AuthorizationRequired => "the server asks for sign-in".into(),
        AuthError::NoAuthorizationSupport => {
            "the server names no authorization server zenmode could use".into()
        }
        other => other.to_string(),
    }
}

/// `WWW-Authenticate` of an unauthenticated `initialize` POST to `url`, if
/// the server answers 401 (the challenge seeds discovery).
pub async fn challenge_of(url: &str) -> Option<String> {
    super::tls::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .ok()?;
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"zenmode","version":"0"}}}"#,
        )
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A manager for `url` whose tokens go to `file`. Loopback and private
/// addresses are allowed only as far as rmcp allows them for this URL.
async fn manager_for(url: &str, file: &TokenFile) -> Result<AuthorizationManager, AuthError> {
    super::tls::install_tls_provider();
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(file.clone());
    Ok(manager)
}

/// The most zenmode reads of an authorization server's metadata: the cap
/// rmcp puts on every OAuth answer it reads.
const MAX_METADATA_BYTES: usize = 1024 * 1024;

/// The body of `response`, refused (without reading the rest) once it
/// passes `max` bytes.
async fn read_capped(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, String> {
    let too_large = || format!("{OVER_LIMIT} of {max} bytes");
    if response
        .content_length()
        .is_some_and(|len| len > max as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if chunk.len() > max - body.len() {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The authorization server's metadata for `url`, found by rmcp. One
/// fallback of the 2025-03-26 spec is added: a server without protected-
/// resource metadata whose own origin publishes authorization-server
/// metadata naming an issuer on that same origin under a path (rmcp wants
/// the issuer to equal the origin). The origin must match exactly, so
/// metadata can never point zenmode at another host.
async fn discover(
    manager: &AuthorizationManager,
    url: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, String> {
    match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(error) => same_origin_fallback(&error, url).await,
    }
}

/// The fallback of [`discover`], after rmcp's discovery failed with `error`.
async fn same_origin_fallback(
    error: &AuthError,
    url: &str,
) -> Result<AuthorizationMetadata, String> {
    let failed = || format!("discovering the authorization server: {}", explain(error));
    if !error.to_string().contains("issuer mismatch") {
        return Err(failed());
    }
    let origin = reqwest::Url::parse(url)
        .map_err(|e| e.to_string())?
        .origin()
        .ascii_serialization();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .get(format!("{origin}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .map_err(|_| failed())?;
    let body = read_capped(response, MAX_METADATA_BYTES)
        .await
        .map_err(|why| format!("discovering the authorization server: {why}"))?;
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).map_err(|_| failed())?;
    let same_origin = |endpoint: &str| {
        reqwest::Url::parse(endpoint).is_ok_and(|u| u.origin().ascii_serialization() == origin)
    };
    let issuer_here = metadata.issuer.as_deref().is_some_and(same_origin);
    if issuer_here
        && same_origin(&metadata.authorization_endpoint)
        && same_origin(&metadata.token_endpoint)
    {
        Ok(metadata)
    } else {
        Err(failed())
    }
}

/// The authorization-code flow: discovery (seeded by `challenge`), the
/// client (pre-registered, else a client ID metadata document where the
/// server supports them, else dynamic registration), then `visit` is given
/// the authorization URL and returns the URL the browser was sent back to;
/// the code is exchanged and the tokens saved to `file`. `extra_scope` (from
/// an `insufficient_scope` answer) is added to what is asked for.
pub async fn sign_in_with_code<F, Fut>(
    url: &str,
    settings: Option<&OAuthSettings>,
    file: &TokenFile,
    challenge: Option<&str>,
    extra_scope: Option<&str>,
    redirect_uri: &str,
    visit: F,
) -> Result<AuthorizationManager, String>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<String, String>>,
{
    let mut manager = manager_for(url, file).await.map_err(|e| explain(&e))?;
    let metadata = discover(&manager, url, challenge).await?;
    manager.set_metadata(metadata.clone());
    let configured = settings.map(|s| s.scopes.clone()).unwrap_or_default();
    let scopes = choose_scopes(&manager, url, configured, challenge, extra_scope)?;
    let cimd_supported = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let (client_id, client_secret) = match (
        settings.and_then(|s| s.client_id.clone()),
        settings.and_then(|s| s.client_metadata_url.clone()),
    ) {
        (Some(id), _) => (id, settings.and_then(|s| s.client_secret.clone())),
        (None, Some(document)) if cimd_supported => (document, None),
        _ => {
            let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let registered = manager
                .register_client(CLIENT_NAME, redirect_uri, &refs)
                .await
                .map_err(|e| {
                    format!(
                        "registering zenmode with the authorization server: {}; give a pre-registered client in the entry's \"oauth\" object",
                        explain(&e)
                    )
                })?;
            (registered.client_id, registered.client_secret)
        }
    };
    file.set_client(
        &client_id,
        client_secret.as_deref(),
        redirect_uri,
        Some(metadata),
    );
    let mut request = AuthorizationRequest::new(redirect_uri)
        .with_preregistered_client(client_id)
        .with_scopes(scopes);
    if let Some(secret) = client_secret {
        request = request.with_client_secret(secret);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("starting sign-in: {}", explain(&e)))?;
    let callback = visit(session.get_authorization_url().to_owned()).await?;
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| format!("exchanging the authorization code: {}", explain(&e)))?;
    Ok(session.auth_manager)
}

/// The scopes to ask for: the entry's own, else what the server's challenge
/// or metadata suggests, plus any a step-up challenge added.
fn choose_scopes(
    manager: &AuthorizationManager,
    url: &str,
    configured: Vec<String>,
    challenge: Option<&str>,
    extra_scope: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut scopes = configured;
    if scopes.is_empty() {
        let base_url = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
        let hint = challenge
            .map(|c| WWWAuthenticateParams::parse(c, &base_url))
            .and_then(|p| p.scope);
        scopes = manager.select_scopes(hint.as_deref(), &[]);
    }
    for scope in extra_scope.unwrap_or_default().split_whitespace() {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_owned());
        }
    }
    Ok(scopes)
}

/// Machine sign-in (client credentials) with the entry's client; tokens go
/// to `file`. `extra_scope` is added to the entry's (or the challenge's) scopes.
pub async fn sign_in_as_machine(
    url: &str,
    settings: &OAuthSettings,
    file: &TokenFile,
    challenge: Option<&str>,
    extra_scope: Option<&str>,
) -> Result<AuthorizationManager, String> {
    let (Some(client_id), Some(client_secret)) = (&settings.client_id, &settings.client_secret)
    else {
        return Err("client credentials need \"client_id\" and \"client_secret\"".into());
    };
    let mut manager = manager_for(url, file).await.map_err(|e| explain(&e))?;
    let metadata = discover(&manager, url, challenge).await?;
    manager.set_metadata(metadata.clone());
    let scopes = choose_scopes(
        &manager,
        url,
        settings.scopes.clone(),
        challenge,
        extra_scope,
    )?;
    file.set_client(
        client_id,
        Some(client_secret),
        "http://127.0.0.1/",
        Some(metadata),
    );
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: client_id.clone(),
        client_secret: client_secret.clone(),
        scopes,
        resource: Some(url.to_owned()),
    };
    manager
        .configure_client_credentials(&config)
        .map_err(|e| explain(&e))?;
    manager
        .exchange_client_credentials(&config)
        .await
        .map_err(|e| format!("client-credentials sign-in: {}", explain(&e)))?;
    Ok(manager)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_advice_names_a_variable_and_is_told_apart_from_sign_in() {
        assert_eq!(token_variable("github"), "GITHUB_TOKEN");
        assert_eq!(token_variable("my-api.v2"), "MY_API_V2_TOKEN");
        let advice = needs_credential_message("gh", "https://user:pw@api.example/mcp");
        assert!(
            advice.contains("--header 'Authorization: Bearer ${GH_TOKEN}'"),
            "{advice}"
        );
        assert!(!advice.contains("pw@"), "{advice}");
        assert_eq!(failure_state("gh", &advice), NEEDS_CREDENTIAL);
        assert_eq!(
            failure_state("gh", &needs_sign_in_message("gh")),
            NEEDS_SIGN_IN
        );
        assert_eq!(failure_state("gh", "server \"gh\" exited"), "failed");
        assert_eq!(failure_state("other", &advice), "failed");
    }
}
