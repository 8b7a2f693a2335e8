//! Newline-delimited JSON-RPC framing for stdio and TCP, under rmcp.
//!
//! rmcp's stock stream transport drops malformed and oversized lines without a
//! word. A client deserves an answer, so this transport frames lines itself
//! (tokio-util's `LinesCodec`, which discards an oversized line without
//! buffering it whole) and replies on its own to what never reaches rmcp:
//! - invalid JSON or UTF-8: `-32700` with `id: null`;
//! - JSON that is not a JSON-RPC message: `-32600` (or `-32602` when a known
//!   request's params are malformed), echoing the `id` when one can be read;
//! - a line over the limit: `-32600` naming the limit.
//!
//! The session goes on after each of these.

use std::{future::Future, sync::Arc};

use bytes::BytesMut;
use rmcp::{
    RoleServer,
    model::ErrorCode,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    sync::Mutex,
};
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

/// Default cap on one incoming message.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Rejected lines are logged at most this often: a client sending garbage
/// must not turn every line into a log line.
static REJECTION_LOG: std::sync::LazyLock<crate::logging::RateLimit> =
    std::sync::LazyLock::new(|| crate::logging::RateLimit::new(10));

pub struct LineTransport<R, W> {
    reader: R,
    buffer: BytesMut,
    codec: LinesCodec,
    max_message_bytes: usize,
    writer: Arc<Mutex<W>>,
    reached_eof: bool,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W, max_message_bytes: usize) -> Self {
        LineTransport {
            reader,
            buffer: BytesMut::with_capacity(8 * 1024),
            codec: LinesCodec::new_with_max_length(max_message_bytes),
            max_message_bytes,
            writer: Arc::new(Mutex::new(writer)),
            reached_eof: false,
        }
    }

    /// Writes an error response from a background task, so a cancelled
    /// `receive` can never leave half a line on the wire.
    fn reply_error(&self, id: Value, code: ErrorCode, message: String) {
        let code = code.0;
        if let Some(suppressed) = REJECTION_LOG.admit() {
            if suppressed > 0 {
                tracing::warn!(
                    suppressed,
                    "more incoming messages were rejected without a log line"
                );
            }
            tracing::warn!(code, %message, "rejected an incoming message");
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let writer = self.writer.clone();
        tokio::spawn(async move {
            if let Err(error) = write_line(&writer, &body).await {
                tracing::debug!(%error, "could not send an error response");
            }
        });
    }

    /// A decoded line becomes a message, or an error reply and `None`.
    fn parse(&self, line: &str) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let error = match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line) {
            Ok(message) => return Some(message),
            Err(error) => error,
        };
        match serde_json::from_str::<Value>(line) {
            Err(_) => self.reply_error(
                Value::Null,
                ErrorCode::PARSE_ERROR,
                format!("Parse error: the line is not valid JSON ({error})"),
            ),
            Ok(value) => {
                let id = value.get("id").cloned().unwrap_or(Value::Null);
                let method = value.get("method").and_then(Value::as_str);
                match method {
                    Some(method) if value.get("jsonrpc") == Some(&json!("2.0")) => self
                        .reply_error(
                            id,
                            ErrorCode::INVALID_PARAMS,
                            format!("Invalid params for {method}: {error}"),
                        ),
                    _ => self.reply_error(
                        id,
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid Request: expected a JSON-RPC 2.0 message object ({error})"
                        ),
                    ),
                }
            }
        }
        None
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    message: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&line).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move { write_line(&writer, &item).await }
    }

    /// Cancel-safe: partial input stays in `self.buffer` for the next call.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let decoded = if self.reached_eof {
                self.codec.decode_eof(&mut self.buffer)
            } else {
                self.codec.decode(&mut self.buffer)
            };
            match decoded {
                Ok(Some(line)) => match self.parse(&line) {
                    Some(message) => return Some(message),
                    None => continue,
                },
                Ok(None) if self.reached_eof => return None,
                Ok(None) => {}
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    self.reply_error(
                        Value::Null,
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid Request: message exceeds the {} byte limit and was discarded",
                            self.max_message_bytes
                        ),
                    );
                    continue;
                }
                // The codec does no I/O itself: this is a line that is not UTF-8.
                Err(LinesCodecError::Io(error)) => {
                    self.reply_error(
                        Value::Null,
                        ErrorCode::PARSE_ERROR,
                        format!("Parse error: {error}"),
                    );
                    continue;
                }
            }
            match self.reader.read_buf(&mut self.buffer).await {
                Ok(0) => self.reached_eof = true,
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(%error, "read failed; closing the session");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.shutdown().await
    }
}
