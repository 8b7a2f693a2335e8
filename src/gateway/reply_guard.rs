//! The size limit on what a stdio upstream sends, enforced so the caller
//! learns at once.
//!
//! rmcp drops a line longer than its limit and keeps reading, which keeps
//! zenmode's memory bounded but leaves the request it answered waiting out
//! its whole timeout. So the upstream's stdout passes through
//! [`guard_replies`] on its way to rmcp: lines stream through unchanged,
//! and after a line over the limit (which rmcp drops) the guard writes a
//! JSON-RPC error for the same id, which rmcp hands to the waiting call.
//! The id is read from the line's first or last bytes, where every SDK
//! writes it; a line whose id cannot be found is only logged.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The largest reply an upstream may send when its entry sets no
/// `max_reply_bytes`: rmcp's own default.
pub const DEFAULT_MAX_REPLY_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The error code of a reply that was too large (in JSON-RPC's range for
/// implementation-defined server errors).
pub const TOO_LARGE_CODE: i32 = -32099;

/// Bytes kept from each end of a line to find its id.
const ENDS: usize = 512;

/// The last oversized reply whose id could not be found, for the message
/// of the call that then times out.
pub type OversizeNote = Arc<Mutex<Option<String>>>;

/// One line as it streams by: its length and both ends.
#[derive(Default)]
struct LineEnds {
    len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl LineEnds {
    fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        if self.head.len() < ENDS {
            let room = ENDS - self.head.len();
            self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
        self.tail
            .extend_from_slice(&bytes[bytes.len().saturating_sub(ENDS)..]);
        if self.tail.len() > ENDS {
            self.tail.drain(..self.tail.len() - ENDS);
        }
    }
}

/// Copies `from` to `to` line by line, adding an error reply after each
/// line longer than `limit` bytes (its newline included). Ends when either
/// side closes.
pub async fn guard_replies(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    limit: usize,
    server: String,
    note: OversizeNote,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, from);
    let mut line = LineEnds::default();
    loop {
        let (consumed, ended) = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(bytes) => {
                let (take, ended) = match bytes.iter().position(|&b| b == b'\n') {
                    Some(at) => (at + 1, true),
                    None => (bytes.len(), false),
                };
                if to.write_all(&bytes[..take]).await.is_err() {
                    return;
                }
                line.push(&bytes[..take]);
                (take, ended)
            }
        };
        reader.consume(consumed);
        if !ended {
            continue;
        }
        let finished = std::mem::take(&mut line);
        if finished.len <= limit {
            continue;
        }
        let message = format!(
            "server {server:?} sent a reply of {} bytes, over its limit of {limit} bytes; nothing of it was passed on (raise \"max_reply_bytes\" in its entry to allow more)",
            finished.len
        );
        match reply_id(&finished.head, &finished.tail) {
            Some(id) => {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": TOO_LARGE_CODE, "message": message,
                    "data": {"bytes": finished.len, "limit": limit}}});
                let mut bytes = error.to_string().into_bytes();
                bytes.push(b'\n');
                if to.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            None => {
                tracing::warn!(server, bytes = finished.len, limit, "{message}");
                if let Ok(mut slot) = note.lock() {
                    *slot = Some(message);
                }
            }
        }
        let _ = to.flush().await;
    }
    let _ = to.shutdown().await;
}

/// The JSON-RPC id of a reply, from its first or last bytes: a top-level
/// `"id"` before `"result"`/`"error"` at the start, or the last `"id"` of
/// the line when only closing characters follow it.
fn reply_id(head: &[u8], tail: &[u8]) -> Option<Value> {
    id_in_head(head).or_else(|| id_in_tail(tail))
}

fn id_in_head(head: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start().strip_prefix('{')?;
    // Top-level members until the first object or array value.
    let mut rest = text;
    loop {
        rest = rest.trim_start().trim_start_matches(',').trim_start();
        let key_end = rest.strip_prefix('"')?.find('"')? + 1;
        let key = &rest[1..key_end];
        rest = rest[key_end + 1..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        let (value, after) = scalar(rest)?;
        if key == "id" {
            return Some(value);
        }
        rest = after;
    }
}

fn id_in_tail(tail: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(tail);
    let at = text.rfind("\"id\"")?;
    let rest = text[at + 4..].trim_start().strip_prefix(':')?.trim_start();
    let (value, after) = scalar(rest)?;
    let after = after.trim_start();
    let closes = after
        .trim_end()
        .trim_end_matches('}')
        .trim_start_matches(',')
        .trim();
    // Only `}` or a short `"jsonrpc":"2.0"` may follow the id.
    let only_closing = closes.is_empty() || closes.replace(' ', "") == "\"jsonrpc\":\"2.0\"";
    only_closing.then_some(value)
}

/// A JSON number or string at the start of `text`, and what follows it.
fn scalar(text: &str) -> Option<(Value, &str)> {
    if let Some(body) = text.strip_prefix('"') {
        let end = body.find('"')?;
        let value: Value = serde_json::from_str(&text[..end + 2]).ok()?;
        return Some((value, &body[end + 1..]));
    }
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let value: Value = serde_json::from_str(&text[..end]).ok()?;
    Some((value, &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_found_at_either_end_of_a_reply() {
        assert_eq!(
            reply_id(
                br#"{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"id": 9"#,
                b""
            ),
            Some(json!(7))
        );
        assert_eq!(
            reply_id(br#"{"id":"abc","jsonrpc":"2.0","result":{"#, b""),
            Some(json!("abc"))
        );
        // The id after the result: only closing characters may follow it.
        let head = br#"{"result":{"content":[{"type":"text","id":3,"text":"xxx"#;
        assert_eq!(
            reply_id(head, br#"xxx"}]},"jsonrpc":"2.0","id":12}"#),
            Some(json!(12))
        );
        assert_eq!(
            reply_id(head, br#"xxx"}]},"id":12,"jsonrpc":"2.0"}"#),
            Some(json!(12))
        );
        assert_eq!(reply_id(head, br#"xx","id":4,"more":"xxxx"#), None);
        assert_eq!(reply_id(b"not json", b"at all"), None);
    }

    #[tokio::test]
    async fn an_oversized_line_is_followed_by_an_error_for_its_id() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"");
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.extend_from_slice(b"\"}}\n");
        let mut output = Vec::new();
        let note = OversizeNote::default();
        guard_replies(&input[..], &mut output, 1000, "srv".into(), note.clone()).await;
        let text = String::from_utf8(output).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "the two lines pass, then the error");
        let error: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(error["id"], 2);
        assert_eq!(error["error"]["code"], TOO_LARGE_CODE);
        assert_eq!(error["error"]["data"]["limit"], 1000);
        assert!(note.lock().unwrap().is_none());
    }
}
