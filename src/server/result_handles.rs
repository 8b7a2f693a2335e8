//! The MCP face of result handles: a reply too large for the model's
//! context goes out as a preview and a `resource_link`, and
//! `resources/read` of `zenmode://results/<id>[?page=N]` returns the
//! stored result in pages, each for the principal that made it.
//!
//! Storage, ownership and expiry are `conversation::ResultHandles`'s; this
//! file decides which replies become handles and how they read.

use std::{sync::Arc, time::UNIX_EPOCH};

use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, Extensions, ReadResourceResult};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::conversation::{
    HandleError, RESULT_URI_PREFIX, ResultHandles, StoredKind, StoredResult,
};

/// The most bytes of a result the handle reply shows.
const PREVIEW_BYTES: usize = 600;

/// An HTTP request's principal, which the front door derives from the
/// bearer token before it drops the header (nothing below sees the token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpPrincipal(Arc<str>);

impl HttpPrincipal {
    /// `http-token:<digest>` for a request with a bearer token, else
    /// `http:open` (a server that takes none).
    pub fn of_bearer(token: Option<&str>) -> Self {
        HttpPrincipal(match token.map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) => {
                let digest = Sha256::digest(token.as_bytes());
                let hex = hex::encode(digest);
                Arc::from(format!("http-token:{hex}"))
            }
            None => Arc::from("http:open"),
        })
    }
}

impl HttpPrincipal {
    /// `shared-session:<digest>`: on the shared instance every client holds
    /// the same token, so a client's handles belong to its MCP session.
    pub fn of_session(session: &str) -> Self {
        let digest = Sha256::digest(session.as_bytes());
        let hex = hex::encode(digest);
        HttpPrincipal(Arc::from(format!("shared-session:{hex}")))
    }
}

/// The principal of a request: over HTTP, the client's bearer token (so a
/// handle made on one instance reads on another that shares the store);
/// otherwise the session (`session`: one per stdio process, one per TCP
/// connection).
pub fn principal_of(session: &str, extensions: &Extensions) -> Arc<str> {
    match extensions.get::<http::request::Parts>() {
        None => Arc::from(session),
        Some(parts) => {
            parts
                .extensions
                .get::<HttpPrincipal>()
                .cloned()
                .unwrap_or_else(|| HttpPrincipal::of_bearer(None))
                .0
        }
    }
}

/// What a result holds, as one text: its structured content (compact
/// JSON) unless that only repeats the text, else its text blocks joined.
/// `None` when it holds anything a handle cannot carry faithfully (images,
/// audio, embedded resources, links) or is an error.
fn stored_form(result: &CallToolResult) -> Option<(StoredKind, String)> {
    if result.is_error == Some(true) {
        return None;
    }
    let texts: Option<Vec<&str>> = result
        .content
        .iter()
        .map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    let text = texts.map(|texts| texts.join("\n"));
    if let Some(structured) = &result.structured_content {
        // Structured content that only repeats the text is the text.
        return match text {
            Some(text) if crate::gateway::text_result::repeats_text(structured, &text) => {
                Some((StoredKind::Text, text))
            }
            _ => Some((StoredKind::Json, structured.to_string())),
        };
    }
    Some((StoredKind::Text, text?))
}

/// Serialized size of `result`, without keeping the bytes (also the size
/// the activity log line reports).
pub fn json_size(result: &CallToolResult) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, result);
    count.0
}

/// `result`, or, when it is larger than the threshold, its handle reply.
/// The caller keeps the results of a tool that declares an output schema
/// whole: a handle reply carries no structured content to check against
/// it. A store that fails leaves the result whole (and says so in the log).
pub async fn offload(
    result: CallToolResult,
    handles: &ResultHandles,
    principal: &str,
) -> CallToolResult {
    let settings = handles.settings();
    if !settings.enabled || json_size(&result) <= settings.threshold_bytes {
        return result;
    }
    let Some((kind, text)) = stored_form(&result) else {
        return result;
    };
    let preview = preview(&text);
    let lines = text.lines().count();
    let stored = match handles.store(principal, kind, text).await {
        Ok(stored) => stored,
        Err(error) => {
            tracing::warn!(%error, "a large result is returned whole: it could not be kept as a handle");
            return result;
        }
    };
    handle_reply(&stored, kind, &preview, lines)
}

/// The first bytes of `text`, cut on a character bound.
fn preview(text: &str) -> String {
    let mut end = text.len().min(PREVIEW_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut shown = text[..end].to_owned();
    if end < text.len() {
        shown.push('…');
    }
    shown
}

fn rfc3339(at: std::time::SystemTime) -> String {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let secs = i64::try_from(secs).unwrap_or(i64::MAX);
    chrono::DateTime::<chrono::Utc>::from_timestamp(secs, 0)
        .map(|at| at.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

fn mime_of(kind: StoredKind) -> &'static str {
    match kind {
        StoredKind::Json => "application/json",
        StoredKind::Text => "text/plain",
    }
}

/// The reply has no structured content on purpose: a client that shows
/// structured content in place of the text (Claude Code does) would drop
/// the preview and the instructions, and one that shows both would pay
/// for them twice.
fn handle_reply(
    stored: &StoredResult,
    kind: StoredKind,
    preview: &str,
    lines: usize,
) -> CallToolResult {
    let uri = stored.uri();
    let expires = rfc3339(stored.expires_at);
    let what = match kind {
        StoredKind::Json => "JSON",
        StoredKind::Text => "text",
    };
    let text = format!(
        "The result is {bytes} bytes of {what} ({lines} lines), too large to show whole: it is kept as result handle {id} until {expires}.\n\
         Preview:\n{preview}\n\n\
         To read it: resources/read {uri} ({pages} page(s); {uri}?page=N for page N). \
         To pass it to another call without reading it: put {{\"$result\": \"{id}\"}} (add \"pointer\": \"/a/0\" for a part) in a zen_execute request field, or as a script's \"input\".",
        bytes = stored.bytes,
        id = stored.id,
        pages = stored.pages,
    );
    let mut link = rmcp::model::Resource::new(uri.clone(), format!("result {}", stored.id))
        .with_description(format!("a stored tool result, readable until {expires}"));
    link.mime_type = Some(mime_of(kind).to_owned());
    link.size = Some(stored.bytes as u64);
    CallToolResult::success(vec![
        ContentBlock::text(text),
        ContentBlock::resource_link(link),
    ])
}

/// The id and page a `zenmode://results/...` URI names; `None` for any
/// other URI (an upstream's), an error for one of ours that is malformed.
fn parse_uri(uri: &str) -> Option<Result<(&str, usize), String>> {
    let rest = uri.strip_prefix(RESULT_URI_PREFIX)?;
    let (id, query) = rest.split_once('?').unwrap_or((rest, ""));
    if query.is_empty() {
        return Some(Ok((id, 1)));
    }
    let page = query
        .strip_prefix("page=")
        .and_then(|page| page.parse::<usize>().ok());
    Some(match page {
        Some(page) => Ok((id, page)),
        None => Err(format!(
            "{RESULT_URI_PREFIX}<id> takes only ?page=N (a page number from 1)"
        )),
    })
}

/// `resources/read` of a handle URI: `None` when `uri` is not one (the
/// upstreams own it).
pub async fn read(
    handles: &ResultHandles,
    principal: &str,
    uri: &str,
) -> Option<Result<ReadResourceResult, rmcp::ErrorData>> {
    let (id, page) = match parse_uri(uri)? {
        Ok(parsed) => parsed,
        Err(message) => return Some(Err(rmcp::ErrorData::invalid_params(message, None))),
    };
    Some(match handles.page(principal, id, page).await {
        Ok(page) => {
            let meta = json!({"page": page.page, "pages": page.pages});
            serde_json::from_value::<ReadResourceResult>(json!({
                "contents": [{
                    "uri": uri,
                    "mimeType": mime_of(page.kind),
                    "text": page.text,
                    "_meta": {"zenmode/page": meta},
                }]
            }))
            // A 2026-07-28 client requires resultType (rmcp clears it for
            // older ones); serde leaves it out where the constructors set it.
            .map(|mut read| {
                read.result_type
                    .get_or_insert(rmcp::model::ResultType::COMPLETE);
                read
            })
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
        }
        Err(error) => Err(to_error(error)),
    })
}

fn to_error(error: HandleError) -> rmcp::ErrorData {
    let code = match error.code() {
        "not_found" => ErrorCode::RESOURCE_NOT_FOUND,
        "invalid_arguments" => ErrorCode::INVALID_PARAMS,
        _ => ErrorCode::INTERNAL_ERROR,
    };
    rmcp::ErrorData::new(code, error.to_string(), None::<Value>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{HandleSettings, InMemoryStore, MemoryConfig};

    fn handles() -> ResultHandles {
        ResultHandles::new(
            Arc::new(InMemoryStore::new(MemoryConfig::default())),
            HandleSettings::default(),
        )
    }

    #[tokio::test]
    async fn a_large_result_becomes_a_short_reply_that_reads_back_whole() {
        let handles = handles();
        let big: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let result = CallToolResult::success(vec![ContentBlock::text(big.clone())]);
        let reply = offload(result, &handles, "s").await;
        let size = json_size(&reply);
        assert!(size <= 2048, "the handle reply is {size} bytes");
        let link = reply.content[1]
            .as_resource_link()
            .expect("a resource_link");
        assert_eq!(link.size, Some(big.len() as u64));
        assert!(reply.structured_content.is_none());
        let pages = big.len().div_ceil(HandleSettings::DEFAULT_PAGE_BYTES);
        assert!(
            reply.content[0]
                .as_text()
                .unwrap()
                .text
                .contains(&format!("{pages} page(s)"))
        );
        let mut joined = String::new();
        for page in 1..=pages {
            let uri = format!("{}?page={page}", link.uri);
            let read = read(&handles, "s", &uri).await.unwrap().unwrap();
            let value = serde_json::to_value(&read).unwrap();
            joined.push_str(value["contents"][0]["text"].as_str().unwrap());
        }
        assert_eq!(joined, big);
        // Another principal, a bad page, a malformed query, an upstream URI.
        let other = read(&handles, "t", &link.uri).await.unwrap().unwrap_err();
        assert_eq!(other.code, ErrorCode::RESOURCE_NOT_FOUND);
        let beyond = format!("{}?page={}", link.uri, pages + 1);
        assert_eq!(
            read(&handles, "s", &beyond)
                .await
                .unwrap()
                .unwrap_err()
                .code,
            ErrorCode::INVALID_PARAMS
        );
        let query = format!("{}?offset=3", link.uri);
        assert!(read(&handles, "s", &query).await.unwrap().is_err());
        assert!(read(&handles, "s", "file:///etc/hosts").await.is_none());
    }

    #[tokio::test]
    async fn small_error_and_image_results_stay_whole() {
        let handles = handles();
        let small = CallToolResult::success(vec![ContentBlock::text("short")]);
        assert_eq!(offload(small.clone(), &handles, "s").await, small);
        let mut error = CallToolResult::success(vec![ContentBlock::text("x".repeat(40_000))]);
        error.is_error = Some(true);
        assert_eq!(offload(error.clone(), &handles, "s").await, error);
        let image =
            CallToolResult::success(vec![ContentBlock::image("A".repeat(40_000), "image/png")]);
        assert_eq!(offload(image.clone(), &handles, "s").await, image);
    }

    #[test]
    fn principals_follow_the_bearer_token_over_http() {
        let over_http = |token: Option<&str>| {
            let mut request = http::Request::builder().body(()).unwrap();
            request
                .extensions_mut()
                .insert(HttpPrincipal::of_bearer(token));
            let mut extensions = Extensions::default();
            extensions.insert(request.into_parts().0);
            extensions
        };
        assert_eq!(
            &*principal_of("session:1", &Extensions::default()),
            "session:1"
        );
        let one = principal_of("session:1", &over_http(Some("secret-one")));
        assert!(one.starts_with("http-token:") && !one.contains("secret-one"));
        assert_eq!(
            principal_of("session:2", &over_http(Some("secret-one"))),
            one
        );
        assert_ne!(
            principal_of("session:1", &over_http(Some("secret-two"))),
            one
        );
        assert_eq!(&*principal_of("session:1", &over_http(None)), "http:open");
    }
}
