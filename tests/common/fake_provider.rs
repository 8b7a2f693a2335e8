//! A fake model provider on loopback, speaking the OpenAI chat-completions
//! and Gemini generateContent contracts: it records every request and answers
//! from a script (errors, stalls) or, by default, with a well-formed echo.

use std::{
    collections::{HashMap, VecDeque},
    io,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// What the fake answers to one request.
#[derive(Clone)]
pub enum Reply {
    /// A correct answer for the endpoint's contract, echoing the last message.
    Contract,
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Reads the request and never answers.
    Stall,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn raw(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    pub fn rate_limited(retry_after: &str) -> Reply {
        Reply::Status {
            status: 429,
            headers: vec![("Retry-After", retry_after.to_owned())],
            body:
                json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
                    .to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    pub body: Value,
}

pub struct Fake {
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Fake {
    /// Starts the fake on 127.0.0.1:0; `script` is answered in order, then
    /// every request gets [`Reply::Contract`].
    pub async fn start(script: Vec<Reply>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let recorded = requests.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (recorded, script) = (recorded.clone(), script.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, recorded, script).await;
                });
            }
        });
        Fake { base, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn serve(
    mut stream: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
) -> io::Result<()> {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buffer[head_end..]).unwrap_or(Value::Null);
    recorded.lock().expect("lock").push(Recorded {
        path: path.clone(),
        headers,
        body: body.clone(),
    });
    let reply = script
        .lock()
        .expect("lock")
        .pop_front()
        .unwrap_or(Reply::Contract);
    let (status, extra, text) = match reply {
        Reply::Stall => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return Ok(());
        }
        Reply::Status {
            status,
            headers,
            body,
        } => (status, headers, body),
        Reply::Contract => (200, Vec::new(), contract_answer(&path, &body).to_string()),
    };
    let mut response = format!(
        "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        text.len()
    );
    for (name, value) in extra {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    response.push_str(&text);
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// A well-formed answer that echoes the last message, per contract.
pub fn contract_answer(path: &str, body: &Value) -> Value {
    if path.ends_with("/chat/completions") {
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": format!("echo: {last}")}}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 4, "total_tokens": 25}
        })
    } else if path.contains(":generateContent") {
        let last = body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .and_then(|c| c["parts"][0]["text"].as_str())
            .unwrap_or_default();
        json!({
            "candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
                {"text": "private musing", "thought": true},
                {"text": format!("echo: {last}")}
            ]}}],
            "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 4, "thoughtsTokenCount": 6},
            "modelVersion": "gemini-fake"
        })
    } else {
        json!({"error": {"message": format!("no route {path}")}})
    }
}

/// A fake running on its own runtime, for tests that drive the binary
/// (a separate process) rather than the library.
pub struct BackgroundFake {
    pub fake: Fake,
    _runtime: tokio::runtime::Runtime,
}

impl BackgroundFake {
    pub fn start(script: Vec<Reply>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime for the fake provider");
        let fake = runtime.block_on(Fake::start(script));
        BackgroundFake {
            fake,
            _runtime: runtime,
        }
    }
}
