//! Errors from a Streamable HTTP upstream in words a person can act on:
//! the status code (or what failed before one came back), what it means
//! and what to do. rmcp's own text names its transport types
//! (`WorkerTransport<StreamableHttpClientWorker<...>>`); that never reaches
//! the user.

/// An error and its causes (rmcp's text leaves out why a request failed:
/// connection refused, DNS, TLS), explained.
pub fn explain_error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    add_causes(&mut text, error);
    explain(&text)
}

/// A handshake error, whose transport error rmcp keeps out of the chain.
pub fn explain_handshake(error: &rmcp::service::ClientInitializeError) -> String {
    let mut text = error.to_string();
    let cause: &(dyn std::error::Error + 'static) = match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => error,
        other => other,
    };
    add_causes(&mut text, cause);
    explain(&text)
}

/// Appends the text of every cause of `error` not already in `text`,
/// looking inside rmcp's HTTP client error (whose cause is not a `source`).
fn add_causes(text: &mut String, error: &(dyn std::error::Error + 'static)) {
    type HttpError = rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>;
    let mut next = Some(error);
    while let Some(current) = next {
        let cause_text = current.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = match current.downcast_ref::<HttpError>() {
            Some(HttpError::Client(inner)) => Some(inner as &(dyn std::error::Error + 'static)),
            _ => current.source(),
        };
    }
}

/// A transport or handshake error's text, explained.
pub fn explain(text: &str) -> String {
    let detail = without_type_names(text);
    let lower = text.to_ascii_lowercase();
    let advice = match status_in(text).or_else(|| lower.contains("auth required").then_some(401)) {
        Some(401) => "401: the server wants credentials (or refused the ones sent); give a token as a header kept in the environment, --header 'Authorization: Bearer ${NAME_TOKEN}' (`zenmode upstream add NAME --url URL --header ... --replace`, or \"headers\" in the entry), or, where the server offers OAuth, sign in with `zenmode upstream login NAME`".to_owned(),
        Some(403) => "403: the server knows who is asking but refuses; check that the token has the permission (scopes, account access) this server needs".to_owned(),
        Some(404) => "404: nothing answers at this URL; check the URL and its path (MCP servers often answer at /mcp)".to_owned(),
        Some(405) => "405: this URL does not take MCP requests by POST; it is probably not a Streamable HTTP endpoint (an old SSE-only server or a web page): check the URL".to_owned(),
        Some(429) => "429: the server is rate-limiting; wait, then try again".to_owned(),
        Some(code @ 500..=599) => format!("{code}: the server failed on its side; try again later, or tell whoever runs it"),
        Some(code @ 400..=499) => format!("{code}: the server rejected the request; check the URL and the headers"),
        Some(code) => format!("HTTP {code}: not an MCP answer; check the URL"),
        None if lower.contains("connection refused") || lower.contains("connectionrefused") => {
            "connection refused: nothing listens at that host and port; check the URL and that the server is running".to_owned()
        }
        None if lower.contains("dns error")
            || lower.contains("failed to lookup address")
            || lower.contains("name or service not known")
            || lower.contains("no such host") =>
        {
            "host name not found: check the host name in the URL, and the network or DNS".to_owned()
        }
        None if lower.contains("tls")
            || lower.contains("certificate")
            || lower.contains("ssl")
            || lower.contains("invalidcontenttype")
            || lower.contains("corrupt message") =>
        {
            "TLS error: the secure connection failed; check that the URL should be https (a plain server needs http://) and that its certificate is valid and trusted".to_owned()
        }
        None => return detail,
    };
    if detail.is_empty() {
        advice
    } else {
        format!("{advice} (detail: {detail})")
    }
}

/// The first `HTTP NNN` status in `text`.
fn status_in(text: &str) -> Option<u16> {
    text.match_indices("HTTP ").find_map(|(at, _)| {
        let digits = text.get(at + 5..at + 8)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())
            .flatten()
            .filter(|code| (100..600).contains(code))
    })
}

/// `text` without bracketed Rust type names and rmcp's wording around them.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = matching_bracket(&rest[open..]) else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        if !inside.contains("::") {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    let out = out
        .replace("Send message error Transport  error: ", "")
        .replace("Transport  error: ", "");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn matching_bracket(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (at, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_get_meaning_and_advice_and_lose_type_names() {
        let rmcp = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: unexpected server response: HTTP 401 Unauthorized: nope, when send initialize request";
        let text = explain(rmcp);
        assert!(
            text.starts_with("401: the server wants credentials"),
            "{text}"
        );
        assert!(
            !text.contains("rmcp::") && !text.contains("WorkerTransport"),
            "{text}"
        );
        assert!(explain("HTTP 503 Service Unavailable").starts_with("503:"));
        assert!(explain("x: Auth required").starts_with("401:"));
        assert_eq!(explain("plain failure [kept]"), "plain failure [kept]");
    }
}
