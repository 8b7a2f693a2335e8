//! `zenmode upstream login NAME`: sign in to an HTTP upstream with a
//! browser, or as a machine; the browser sign-in `probe` shares.

use std::{path::Path, process::ExitCode, time::Duration};

use anyhow::bail;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::gateway::{
    config::{self, OAuthSettings, Transport},
    oauth::{self, token_file::TokenFile},
};

/// How long `login` waits for the browser to come back.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// `zenmode upstream login NAME [--no-browser]`.
pub fn login(file: &Path, name: &str, no_browser: bool) -> anyhow::Result<ExitCode> {
    let parsed = config::load_each(file)?;
    let Some(entry) = parsed.servers.iter().find(|c| c.name == name) else {
        if let Some((_, problem)) = parsed.bad.iter().find(|(bad, _)| bad == name) {
            bail!("server {name:?} in {}: {problem}", file.display());
        }
        bail!("{}: no server named {name:?}", file.display());
    };
    // The URL as written (placeholders unfilled), for advice to show.
    let raw = match &entry.transport {
        Transport::Http { url, .. } => url.clone(),
        Transport::Stdio { .. } => String::new(),
    };
    let entry = entry
        .expanded()
        .map_err(|problem| anyhow::anyhow!("server {name:?}: {problem}"))?;
    let Transport::Http { url, .. } = &entry.transport else {
        bail!("server {name:?} runs a command; only http servers (with \"url\") sign in");
    };

    let tokens = oauth::token_file(name, url);
    let runtime = crate::cli::runtime::runtime(false)?;
    runtime.block_on(async {
        let challenge = oauth::challenge_of(url).await;
        // Before any registration: a server without an authorization server
        // wants a token in a header, and registering could only fail.
        if let Err(why) = oauth::offers_sign_in(url, challenge.as_deref()).await {
            if challenge.is_some() {
                tracing::debug!("no OAuth sign-in offered: {why}");
                bail!("{}", oauth::needs_credential_message(name, &raw));
            }
            bail!(
                "server {name:?} offers no OAuth sign-in ({why}); if it wants a token, send it as a header: `zenmode upstream add {name} --url '{}' --header 'Authorization: Bearer ${{{}}}' --replace`",
                crate::platform::redact::url_for_display(&raw),
                oauth::token_variable(name)
            );
        }
        let signed = match entry.oauth.as_ref().filter(|s| s.client_credentials) {
            Some(settings) => {
                oauth::sign_in_as_machine(url, settings, &tokens, challenge.as_deref(), None).await
            }
            None => browser_sign_in(url, entry.oauth.as_ref(), &tokens, challenge, no_browser).await,
        };
        match signed {
            Ok(_) => {
                println!(
                    "signed in to {name:?}; tokens kept in {} (owner-only) and refreshed as they age",
                    tokens.path().display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(message) => bail!("sign-in to {name:?} failed: {message}"),
        }
    })
}

pub async fn browser_sign_in(
    url: &str,
    settings: Option<&OAuthSettings>,
    tokens: &TokenFile,
    challenge: Option<String>,
    no_browser: bool,
) -> Result<rmcp::transport::AuthorizationManager, String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on a loopback port for the callback: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let visit = |authorization_url: String| async move {
        let state = query_value(&authorization_url, "state")
            .ok_or("the authorization URL carries no state")?;
        note(&format!(
            "Open this URL to sign in:\n\n  {authorization_url}\n"
        ));
        if !no_browser && !open_browser(&authorization_url) {
            note(&format!(
                "(no browser found here; open the URL on any machine that can reach 127.0.0.1:{port}, e.g. through an SSH tunnel)"
            ));
        }
        note(&format!(
            "waiting for the sign-in to come back to 127.0.0.1:{port} ..."
        ));
        tokio::time::timeout(LOGIN_WAIT, wait_for_callback(&listener, &state, port))
            .await
            .map_err(|_| format!("no sign-in came back within {}s", LOGIN_WAIT.as_secs()))?
    };
    oauth::sign_in_with_code(
        url,
        settings,
        tokens,
        challenge.as_deref(),
        None,
        &redirect,
        visit,
    )
    .await
}

/// A line on stderr; a closed stderr is no reason to stop signing in.
pub fn note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// Opens `url` in a browser when this machine has one; false when not.
pub fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        "xdg-open"
    } else {
        return false;
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// The value of `key` in `url`'s query.
pub fn query_value(url: &str, key: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// How long one connection to the callback port may take to send its
/// request line. A browser sends it at once; a connection that sends
/// nothing is dropped after this, and never delays the others.
const CALLBACK_READ_WAIT: Duration = Duration::from_secs(2);

/// Answers requests on the loopback port until one is the callback with
/// the expected `state`; returns its full URL. Others get an error page.
/// Connections are served side by side, so idle or slow ones cannot hold
/// up the browser's.
pub async fn wait_for_callback(
    listener: &tokio::net::TcpListener,
    state: &str,
    port: u16,
) -> Result<String, String> {
    let mut serving = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(|e| e.to_string())?;
                serving.spawn(answer_callback(stream, state.to_owned(), port));
            }
            Some(served) = serving.join_next(), if !serving.is_empty() => {
                if let Ok(Some(outcome)) = served {
                    return outcome;
                }
            }
        }
    }
}

/// Reads one request from `stream` (within [`CALLBACK_READ_WAIT`]) and
/// answers it; `Some` when it was the callback that ends the wait.
async fn answer_callback(
    mut stream: tokio::net::TcpStream,
    state: String,
    port: u16,
) -> Option<Result<String, String>> {
    let mut head = Vec::with_capacity(1024);
    let read = tokio::time::timeout(CALLBACK_READ_WAIT, async {
        let mut buffer = [0u8; 1024];
        // The request line is all that is read: up to its end or 8 KiB.
        while !head.contains(&b'\n') && head.len() < 8192 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    if read.is_err() || head.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&head);
    let target = text
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .unwrap_or_default()
        .to_owned();
    let full = format!("http://127.0.0.1:{port}{target}");
    let reply = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let (answer, outcome) = if !target.starts_with("/callback") {
        (reply("404 Not Found", "not the sign-in callback"), None)
    } else if query_value(&full, "state").as_deref() != Some(state.as_str()) {
        (
            reply(
                "400 Bad Request",
                "this answer does not belong to the sign-in zenmode started (state differs)",
            ),
            None,
        )
    } else if let Some(error) = query_value(&full, "error") {
        let why = query_value(&full, "error_description").unwrap_or_default();
        (
            reply("200 OK", "sign-in refused; see the terminal"),
            Some(Err(format!(
                "the authorization server refused: {error} {why}"
            ))),
        )
    } else {
        (
            reply("200 OK", "zenmode is signed in; you can close this tab."),
            Some(Ok(full)),
        )
    };
    let _ = tokio::time::timeout(CALLBACK_READ_WAIT, async {
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_callback_is_taken_only_with_the_expected_state() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait_for_callback(&listener, "s1", port).await });
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        let forged = get(port, "/callback?code=c0&state=other").await;
        assert!(forged.starts_with("HTTP/1.1 400"), "{forged}");
        let good = get(port, "/callback?code=c1&state=s1").await;
        assert!(good.starts_with("HTTP/1.1 200"), "{good}");
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(query_value(&url, "code").as_deref(), Some("c1"));

        // A refusal from the authorization server ends the wait with its reason.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait_for_callback(&listener, "s2", port).await });
        get(port, "/callback?error=access_denied&state=s2").await;
        let error = waiting.await.unwrap().unwrap_err();
        assert!(error.contains("access_denied"), "{error}");
    }

    /// Issue 45 item 14: connections that never send a request (a port
    /// scanner, a browser's speculative connection) are served beside the
    /// browser's, not before it. Each one used to hold the listener for
    /// 10 s, so thirty of them outlasted the whole login.
    #[tokio::test]
    async fn idle_connections_do_not_hold_up_the_callback() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { wait_for_callback(&listener, "s3", port).await });
        let mut idle = Vec::new();
        for _ in 0..30 {
            idle.push(
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap(),
            );
        }
        // Thirty idle connections held the old listener for 300 s; a
        // minute is far more than serving them side by side takes.
        let good = tokio::time::timeout(
            Duration::from_secs(60),
            get(port, "/callback?code=c3&state=s3"),
        )
        .await
        .expect("the callback was answered while idle connections were open");
        assert!(good.starts_with("HTTP/1.1 200"), "{good}");
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(query_value(&url, "code").as_deref(), Some("c3"));
        drop(idle);
    }
}
