//! Newline-delimited JSON-RPC framing for stdio and TCP, under rmcp.
//!
//! rmcp's stock stream transport drops malformed and oversized lines without a
//! word. A client deserves an answer, so this transport frames lines itself
//! (tokio-util's `LinesCodec`, which discards an oversized line without
//! buffering it whole) and replies on its own to what never reaches rmcp:
//! - invalid JSON or UTF-8: `-32700` with `id: null`;
//! - JSON nested deeper than [`MAX_NESTING`] levels: `-32600` saying so
//!   (serde_json's recursion limit; nothing real nests that deep);
//! - a request whose `id` is not a string or an integer (MCP allows only
//!   those; `null`, booleans, fractions, objects...): `-32600` with
//!   `id: null`, never echoing the bad id;
//! - a notification method (`notifications/...`) sent with an id: `-32600`;
//! - a request reusing the id of a request still in progress: `-32600`
//!   (the ids in flight are tracked from request to response);
//! - JSON that is not a JSON-RPC message: `-32600` (or `-32602` when a known
//!   request's params are malformed), echoing the `id` when one can be read;
//! - a line over the limit (a trailing `\r` not counted): `-32600` naming
//!   the limit;
//! - a request arriving while [`MAX_REQUESTS_IN_PROGRESS`] of the session's
//!   are still being worked on: [`BUSY_CODE`], so a client that never
//!   waits for replies cannot make the server queue work without bound.
//!
//! The session goes on after each of these. Rejections are logged at most
//! ten a second (see [`RateLimit`]).

use std::{
    collections::{HashMap, VecDeque, hash_map::Entry},
    future::Future,
    sync::{Arc, PoisonError},
    time::{Duration, Instant},
};

use bytes::BytesMut;
use rmcp::{
    RoleServer,
    model::{ClientNotification, ClientRequest, ErrorCode, JsonRpcMessage, RequestId},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    sync::{Mutex, mpsc},
    task::JoinHandle,
};
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

use crate::server::logging::RateLimit;

/// Default cap on one incoming message.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Deepest nesting of arrays and objects a message may have. serde_json
/// refuses deeper input (its recursion limit) before anything is built.
pub const MAX_NESTING: usize = 127;

/// Replies that must be preceded by `notifications/tools/list_changed`.
///
/// A call that changed the tool list hands rmcp the notification first. When
/// the client has closed its input, rmcp only drains replies and never takes
/// the notification; the server then notes the call's id here, and the
/// transport writes the notification just before that reply.
#[derive(Debug, Default)]
pub struct OwedNotices(std::sync::Mutex<Vec<RequestId>>);

impl OwedNotices {
    pub fn owe(&self, id: RequestId) {
        self.lock().push(id);
    }

    /// Whether a notification is owed before the reply to `id` (once).
    fn settle(&self, id: &RequestId) -> bool {
        let mut owed = self.lock();
        let before = owed.len();
        owed.retain(|owed| owed != id);
        owed.len() != before
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RequestId>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub struct LineTransport<R, W> {
    /// Held for the session's life and let go before the peer can see the
    /// connection close (first field, so it is dropped first too): a
    /// listener's connection slot, freed before the peer can reconnect.
    held_until_close: Option<Box<dyn Send + Sync>>,
    reader: R,
    buffer: BytesMut,
    codec: LinesCodec,
    max_message_bytes: usize,
    writer: Arc<Mutex<W>>,
    reached_eof: bool,
    /// Ids of requests received and not yet answered.
    in_flight: Arc<std::sync::Mutex<HashMap<RequestId, Flight>>>,
    /// Close the session after this long without input while no request
    /// is in progress (TCP); `None` waits forever (stdio).
    idle_timeout: Option<Duration>,
    owed: Arc<OwedNotices>,
    /// Error replies of this transport's own, not yet handed to `replies`.
    pending: std::sync::Mutex<VecDeque<Value>>,
    /// The queue to the task that writes error replies (started on the
    /// first one), so that a cancelled `receive` never leaves half a line
    /// on the wire and `close` can wait for every reply to go out.
    replies: Option<(mpsc::Sender<Value>, JoinHandle<()>)>,
}

/// A request between its arrival and its response.
#[derive(Debug, Clone, Copy)]
struct Flight {
    /// Whether it is work in progress: a ping is not, nor a
    /// `subscriptions/listen` stream, nor a cancelled request.
    working: bool,
    /// When the client cancelled it. rmcp usually sends no response then,
    /// but one may still be on its way, so the id stays reserved for
    /// [`CANCEL_GRACE`] (or until that response goes out).
    cancelled: Option<Instant>,
}

impl Flight {
    fn expired(&self, now: Instant) -> bool {
        self.cancelled
            .is_some_and(|at| now.duration_since(at) >= CANCEL_GRACE)
    }
}

/// Requests of one session worked on at once; one more is refused with
/// [`BUSY_CODE`] (pings and `subscriptions/listen` streams not counted).
/// Without it a client that writes faster than requests finish queues work
/// without bound: the fuzz campaign's server, sending `zen_select_mode`
/// calls faster than the model ranks them, grew by tens of MiB a minute.
/// The HTTP front has its own limit (`--max-requests-in-flight`).
pub const MAX_REQUESTS_IN_PROGRESS: usize = 256;

/// The JSON-RPC error code of a request refused because the session has
/// [`MAX_REQUESTS_IN_PROGRESS`] already (the implementation-defined range).
pub const BUSY_CODE: i32 = -32000;

/// How long the id of a cancelled request stays reserved.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Error replies queued before `receive` waits for the writer (so a flood
/// of bad lines is read no faster than its replies are written).
const QUEUED_REPLIES: usize = 256;

/// Longest wait at `close` for queued error replies to be written.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W, max_message_bytes: usize) -> Self {
        LineTransport {
            held_until_close: None,
            reader,
            buffer: BytesMut::with_capacity(8 * 1024),
            // One more byte than the limit, for a `\r` before the `\n`;
            // `receive` checks the limit on the line without it.
            codec: LinesCodec::new_with_max_length(max_message_bytes.saturating_add(1)),
            max_message_bytes,
            writer: Arc::new(Mutex::new(writer)),
            reached_eof: false,
            in_flight: Arc::default(),
            idle_timeout: None,
            owed: Arc::default(),
            pending: std::sync::Mutex::default(),
            replies: None,
        }
    }

    /// Hands the pending error replies to the writer task, waiting while
    /// its queue is full. Cancel-safe: a reply leaves `pending` only once
    /// it is queued.
    async fn queue_replies(&mut self) {
        loop {
            let Some(body) = self
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .front()
                .cloned()
            else {
                return;
            };
            let (sender, _) = self.replies.get_or_insert_with(|| {
                let (sender, mut receiver) = mpsc::channel::<Value>(QUEUED_REPLIES);
                let writer = self.writer.clone();
                let task = tokio::spawn(async move {
                    while let Some(body) = receiver.recv().await {
                        if let Err(error) = write_line(&writer, &body).await {
                            tracing::debug!(%error, "could not send an error response");
                            return;
                        }
                    }
                });
                (sender, task)
            });
            // A failed send means the writer stopped (the peer is gone).
            let _ = sender.send(body).await;
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
        }
    }

    /// Ends the session (as at end of input) once nothing was received for
    /// `timeout` while no request is in progress.
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Keeps `guard` until the session closes, letting it go before the
    /// write side shuts down: a client that sees the connection end and
    /// reconnects at once finds the listener's slot free again.
    pub fn holding_until_close(mut self, guard: impl Send + Sync + 'static) -> Self {
        self.held_until_close = Some(Box::new(guard));
        self
    }

    /// Shares the server's [`OwedNotices`] with this transport.
    pub fn with_owed_notices(mut self, owed: Arc<OwedNotices>) -> Self {
        self.owed = owed;
        self
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Flight>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Tracks request ids; a request reusing an id in flight is refused
    /// (`false`).
    fn admit(&self, message: &RxJsonRpcMessage<RoleServer>) -> bool {
        match message {
            JsonRpcMessage::Request(request) => {
                // A ping is answered at once and a listen stream stays open
                // as long as the client likes: neither is work in progress.
                let working = !matches!(
                    request.request,
                    ClientRequest::SubscriptionsListenRequest(_) | ClientRequest::PingRequest(_)
                );
                let now = Instant::now();
                let mut in_flight = self.in_flight();
                let busy = in_flight.values().filter(|flight| flight.working).count();
                if working && busy >= MAX_REQUESTS_IN_PROGRESS {
                    drop(in_flight);
                    self.reply_error(
                        id_value(&request.id),
                        ErrorCode(BUSY_CODE),
                        format!(
                            "Server busy: {busy} requests of this session are still in progress; wait for their replies before sending more"
                        ),
                    );
                    return false;
                }
                let admitted = match in_flight.entry(request.id.clone()) {
                    Entry::Vacant(slot) => {
                        slot.insert(Flight {
                            working,
                            cancelled: None,
                        });
                        true
                    }
                    Entry::Occupied(mut slot) if slot.get().expired(now) => {
                        slot.insert(Flight {
                            working,
                            cancelled: None,
                        });
                        true
                    }
                    Entry::Occupied(_) => false,
                };
                drop(in_flight);
                if admitted {
                    return true;
                }
                self.reply_error(
                    id_value(&request.id),
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Invalid Request: a request with id {} is still in progress (or was cancelled only a moment ago); give each request its own id",
                        id_value(&request.id)
                    ),
                );
                false
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    let now = Instant::now();
                    let mut in_flight = self.in_flight();
                    // Cancelled requests whose response never came.
                    in_flight.retain(|_, flight| !flight.expired(now));
                    if let Some(flight) = in_flight.get_mut(id) {
                        flight.working = false;
                        flight.cancelled = Some(now);
                    }
                }
                true
            }
            _ => true,
        }
    }

    fn reply_too_long(&self) {
        self.reply_error(
            Value::Null,
            ErrorCode::INVALID_REQUEST,
            format!(
                "Invalid Request: message exceeds the {} byte limit and was discarded",
                self.max_message_bytes
            ),
        );
    }

    /// Waits (at most [`CLOSE_WAIT`]) until every queued error reply is
    /// written. Called at the end of input as well as in `close`: rmcp
    /// drops a transport without closing it when input ends before the
    /// session starts.
    async fn finish_replies(&mut self) {
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            self.queue_replies().await;
            if let Some((sender, task)) = self.replies.take() {
                drop(sender);
                let _ = task.await;
            }
        })
        .await;
    }

    /// Queues an error response (see `replies`).
    fn reply_error(&self, id: Value, code: ErrorCode, message: String) {
        let code = code.0;
        // A client can send malformed lines as fast as it likes.
        static REJECTED: RateLimit = RateLimit::new(10);
        if let Some(suppressed) = REJECTED.allow() {
            tracing::warn!(code, %message, suppressed, "rejected an incoming message");
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(body);
    }

    /// A decoded line becomes a message, or an error reply and `None`.
    fn parse(&self, line: &str) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let value = match serde_json::from_str::<Value>(line) {
            Ok(value) => value,
            Err(error) if error.to_string().contains("recursion limit exceeded") => {
                self.reply_error(
                    Value::Null,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "Invalid Request: the message nests arrays and objects more than {MAX_NESTING} levels deep, more than this server reads"
                    ),
                );
                return None;
            }
            Err(error) => {
                self.reply_error(
                    Value::Null,
                    ErrorCode::PARSE_ERROR,
                    format!("Parse error: the line is not valid JSON ({error})"),
                );
                return None;
            }
        };
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = value.get("id").cloned();
        // Requests and notifications (messages with a method); a response
        // from the client may carry `id: null`.
        if let Some(method) = &method {
            match &id {
                None => {}
                Some(id) if !is_valid_id(id) => {
                    self.reply_error(
                        Value::Null,
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid Request: the id must be a string or an integer, not {}",
                            describe(id)
                        ),
                    );
                    return None;
                }
                Some(id) if method.starts_with("notifications/") => {
                    self.reply_error(
                        id.clone(),
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Invalid Request: {method} is a notification and must be sent without an id"
                        ),
                    );
                    return None;
                }
                Some(_) => {}
            }
        }
        let is_version_2 = value.get("jsonrpc") == Some(&json!("2.0"));
        let error = match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
            Ok(message) => return Some(message),
            Err(error) => error,
        };
        let id = id.filter(is_valid_id).unwrap_or(Value::Null);
        match method {
            Some(method) if is_version_2 => self.reply_error(
                id,
                ErrorCode::INVALID_PARAMS,
                format!("Invalid params for {method}: {error}"),
            ),
            _ => self.reply_error(
                id,
                ErrorCode::INVALID_REQUEST,
                format!("Invalid Request: expected a JSON-RPC 2.0 message object ({error})"),
            ),
        }
        None
    }
}

/// MCP ids are strings or integers (here, integers that fit an i64).
fn is_valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        // rmcp holds ids as i64.
        Value::Number(number) => number.is_i64(),
        _ => false,
    }
}

/// What kind of JSON a bad id is, for the error message.
fn describe(id: &Value) -> &'static str {
    match id {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_u64() => "an integer out of range",
        Value::Number(_) => "a number with a fraction or exponent, or out of range",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn id_value(id: &RequestId) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
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
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let mut notice_first = false;
        if let Some(id) = answered {
            self.in_flight().remove(id);
            notice_first = self.owed.settle(id);
        }
        let writer = self.writer.clone();
        async move {
            if notice_first {
                write_line(
                    &writer,
                    &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                )
                .await?;
            }
            write_line(&writer, &item).await
        }
    }

    /// Cancel-safe: partial input stays in `self.buffer` for the next call.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.queue_replies().await;
            let decoded = if self.reached_eof {
                self.codec.decode_eof(&mut self.buffer)
            } else {
                self.codec.decode(&mut self.buffer)
            };
            match decoded {
                Ok(Some(line)) if line.len() > self.max_message_bytes => {
                    self.reply_too_long();
                    continue;
                }
                Ok(Some(line)) => match self.parse(&line) {
                    Some(message) if self.admit(&message) => return Some(message),
                    _ => continue,
                },
                Ok(None) if self.reached_eof => {
                    self.finish_replies().await;
                    return None;
                }
                Ok(None) => {}
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    self.reply_too_long();
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
            let read = self.reader.read_buf(&mut self.buffer);
            let read = match self.idle_timeout {
                None => read.await,
                Some(limit) => match tokio::time::timeout(limit, read).await {
                    Ok(read) => read,
                    Err(_) if !self.in_flight().values().any(|flight| flight.working) => {
                        tracing::info!(
                            seconds = limit.as_secs(),
                            "closing a connection idle for too long"
                        );
                        return None;
                    }
                    // A request is still being worked on: keep waiting.
                    Err(_) => continue,
                },
            };
            match read {
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
        self.finish_replies().await;
        self.held_until_close = None;
        // A peer that reads nothing must not hold the session open.
        let shutdown = async { self.writer.lock().await.shutdown().await };
        tokio::time::timeout(CLOSE_WAIT, shutdown)
            .await
            .unwrap_or(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{NumberOrString, ServerResult};
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;

    fn ping(id: u64) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
    }

    /// Sends the server's (empty) response to request `id`.
    async fn answer<R, W>(transport: &mut LineTransport<R, W>, id: i64)
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        transport
            .send(JsonRpcMessage::response(
                ServerResult::empty(()),
                NumberOrString::Number(id),
            ))
            .await
            .unwrap();
    }

    fn request_id(message: Option<RxJsonRpcMessage<RoleServer>>) -> RequestId {
        match message {
            Some(JsonRpcMessage::Request(request)) => request.id,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_request_past_the_sessions_limit_is_refused_until_one_is_answered() {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (read, write) = tokio::io::split(server);
        let mut transport = LineTransport::new(read, write, 4096);
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut replies = BufReader::new(client_read).lines();
        let list =
            |id: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n");

        let mut lines = String::new();
        for id in 0..=MAX_REQUESTS_IN_PROGRESS {
            lines.push_str(&list(id));
        }
        // A ping past the limit still goes through.
        lines.push_str(&ping(100_000));
        client_write.write_all(lines.as_bytes()).await.unwrap();
        for id in 0..MAX_REQUESTS_IN_PROGRESS {
            assert_eq!(
                request_id(transport.receive().await),
                NumberOrString::Number(id as i64)
            );
        }
        assert_eq!(
            request_id(transport.receive().await),
            NumberOrString::Number(100_000)
        );
        let refusal: Value =
            serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["id"], MAX_REQUESTS_IN_PROGRESS);
        assert_eq!(refusal["error"]["code"], BUSY_CODE);
        assert!(
            refusal["error"]["message"]
                .as_str()
                .unwrap()
                .contains("in progress"),
            "{refusal}"
        );

        // One answered frees a place.
        answer(&mut transport, 0).await;
        let _answer = replies.next_line().await.unwrap().unwrap();
        client_write
            .write_all(list(MAX_REQUESTS_IN_PROGRESS + 1).as_bytes())
            .await
            .unwrap();
        assert_eq!(
            request_id(transport.receive().await),
            NumberOrString::Number(MAX_REQUESTS_IN_PROGRESS as i64 + 1)
        );
    }

    #[tokio::test]
    async fn an_id_is_refused_while_in_flight_and_free_once_answered() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server);
        let mut transport = LineTransport::new(read, write, 4096);
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut replies = BufReader::new(client_read).lines();

        client_write
            .write_all(format!("{}{}{}", ping(1), ping(1), ping(2)).as_bytes())
            .await
            .unwrap();
        assert_eq!(
            request_id(transport.receive().await),
            NumberOrString::Number(1)
        );
        // The duplicate is answered by the transport and skipped.
        assert_eq!(
            request_id(transport.receive().await),
            NumberOrString::Number(2)
        );
        let refusal: Value =
            serde_json::from_str(&replies.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["id"], 1);
        assert_eq!(refusal["error"]["code"], ErrorCode::INVALID_REQUEST.0);

        // Answered, id 1 may be used again.
        answer(&mut transport, 1).await;
        client_write.write_all(ping(1).as_bytes()).await.unwrap();
        assert_eq!(
            request_id(transport.receive().await),
            NumberOrString::Number(1)
        );
    }

    /// Sets its flag when dropped.
    struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn what_is_held_until_close_is_let_go_before_the_peer_sees_the_end() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server);
        let let_go = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut transport =
            LineTransport::new(read, write, 4096).holding_until_close(DropFlag(let_go.clone()));
        let (client_read, _client_write) = tokio::io::split(client);
        let peer = tokio::spawn({
            let let_go = let_go.clone();
            async move {
                let mut rest = Vec::new();
                BufReader::new(client_read)
                    .read_to_end(&mut rest)
                    .await
                    .unwrap();
                // The end of the stream is visible: the guard must be gone by now.
                let_go.load(std::sync::atomic::Ordering::SeqCst)
            }
        });
        tokio::task::yield_now().await;
        assert!(
            !let_go.load(std::sync::atomic::Ordering::SeqCst),
            "held while open"
        );
        transport.close().await.unwrap();
        assert!(
            peer.await.unwrap(),
            "the peer saw the end before the guard was let go"
        );
    }
}
