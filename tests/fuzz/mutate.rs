//! The campaign's mutator: turns the seed corpus into an endless stream of
//! malformed, odd and valid-but-hostile input lines, from a fixed seed.
//!
//! Two kinds of mutation, stacked at random:
//! - structural, on the parsed JSON of a seed: a value of another type at a
//!   random path, odd ids, other methods, tools and modes, huge strings,
//!   deep nesting, long arrays, unicode, a request sent as a JSON string,
//!   a thread id the server handed out earlier;
//! - textual, on the bytes: bit flips, hostile tokens (huge numbers, lone
//!   surrogates, invalid UTF-8, newlines), deletions, truncation,
//!   repetition and splices of two seeds.
//!
//! Every choice comes from one `fastrand::Rng`, so a seed fixes the
//! sequence of choices (the thread ids the server hands out are random,
//! so inputs that reuse them differ from run to run).

use serde_json::{Map, Value, json};

/// Longest line the mutator produces (a few go past the server's limit).
const MAX_LINE: usize = 256 * 1024;

const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
    "subscriptions/listen",
    "logging/setLevel",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "sampling/createMessage",
    "",
    "tools/call/",
    "TOOLS/CALL",
];

const TOOLS: &[&str] = &[
    "zen_select_mode",
    "zen_execute",
    "zen_execute ",
    "",
    "manage_tools",
    "discover",
];

const FIELDS: &[&str] = &[
    "prompt",
    "step",
    "step_number",
    "total_steps",
    "next_step_required",
    "findings",
    "relevant_files",
    "files_checked",
    "images",
    "continuation_id",
    "model",
    "models",
    "path",
    "compare_to",
    "confidence",
    "issues_found",
    "use_assistant_model",
    "temperature",
    "thinking_mode",
    "task_description",
    "top_k",
    "mode",
    "request",
    "absolute_file_paths",
    "working_directory_absolute_path",
    "cli_name",
    "role",
    "branch_id",
    "revises_step_number",
    "_meta",
    "progressToken",
    "__proto__",
    "code",
    "timeout_ms",
    "input",
    "$result",
    "pointer",
    "uri",
];

const UNICODE: &[&str] = &[
    "é",
    "ß",
    "中文",
    "😀",
    "👩‍👩‍👧",
    "\u{202e}",
    "\u{0301}",
    "\u{feff}",
    "\u{2028}",
    "\u{0}",
    "\u{7f}",
    "\u{fffd}",
    "\u{10ffff}",
    "𝕏",
    "ﷺ",
];

/// Text inserted as is: tokens that break parsers in interesting ways.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\\",
    b"null",
    b"true",
    b"-0",
    b"1e999999",
    b"-1e-999999",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"123456789012345678901234567890.5e+40",
    b"\"\\ud800\"",
    b"\"\\udc00\\ud800\"",
    b"\\u0000",
    b"\n",
    b"\r\n",
    b"\r",
    b"\t",
    b"\xff",
    b"\xc3\x28",
    b"\xf0\x9f\x92",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"\"id\":",
    b"\"method\":\"ping\"",
    b"\"jsonrpc\":\"2.0\"",
];

pub struct Mutator {
    rng: fastrand::Rng,
    seeds: Vec<Vec<u8>>,
    parsed: Vec<Option<Value>>,
    modes: Vec<String>,
    next_id: u64,
}

impl Mutator {
    pub fn new(seed: u64, seeds: Vec<Vec<u8>>, modes: Vec<String>) -> Self {
        let parsed = seeds
            .iter()
            .map(|line| serde_json::from_slice(line).ok())
            .collect();
        Mutator {
            rng: fastrand::Rng::with_seed(seed),
            seeds,
            parsed,
            modes,
            next_id: 1_000_000,
        }
    }

    /// One input line (without its final newline; it may hold others).
    /// `threads` are continuation ids the server handed out recently,
    /// `handles` result handle ids.
    pub fn next(&mut self, threads: &[String], handles: &[String]) -> Vec<u8> {
        let index = self.rng.usize(..self.seeds.len());
        let mut line = match self.parsed[index].clone() {
            Some(mut value) if self.rng.u8(..100) < 85 => {
                self.fresh_id(&mut value);
                // One in eight goes out valid, to keep real work going.
                if self.rng.u8(..8) != 0 {
                    let rounds = match self.rng.u8(..10) {
                        0 => 3,
                        1 | 2 => 2,
                        _ => 1,
                    };
                    for _ in 0..rounds {
                        self.structural(&mut value, threads, handles);
                    }
                }
                let text = serde_json::to_vec(&value).unwrap_or_default();
                if self.rng.u8(..100) < 12 {
                    self.textual(text)
                } else {
                    text
                }
            }
            _ => self.textual(self.seeds[index].clone()),
        };
        line.truncate(MAX_LINE);
        line
    }

    fn fresh_id(&mut self, value: &mut Value) {
        let Some(object) = value.as_object_mut() else {
            return;
        };
        if !object.contains_key("id") || self.rng.u8(..10) == 0 {
            return;
        }
        self.next_id += 1;
        let id = if self.rng.u8(..5) == 0 {
            json!(format!("f-{}", self.next_id))
        } else {
            json!(self.next_id)
        };
        object.insert("id".to_owned(), id);
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &'a [&'a T]) -> &'a T {
        items[self.rng.usize(..items.len())]
    }

    fn mode(&mut self) -> String {
        match self.rng.u8(..10) {
            0 => "Debug".to_owned(),
            1 => "debug\u{0}".to_owned(),
            2 => String::new(),
            _ => self.modes[self.rng.usize(..self.modes.len())].clone(),
        }
    }

    fn odd_id(&mut self) -> Value {
        match self.rng.u8(..14) {
            0 => Value::Null,
            1 => json!(true),
            2 => json!(1.5),
            3 => json!(u64::MAX),
            4 => json!(i64::MIN),
            5 => json!(i64::MAX),
            6 => json!(-1),
            7 => json!([]),
            8 => json!({"id": 1}),
            9 => json!(""),
            10 => json!("x".repeat(self.rng.usize(1..5_000))),
            11 => json!(0),
            12 => json!(1_000_001),
            _ => json!("fuzz-ping-0"),
        }
    }

    fn interesting(&mut self) -> Value {
        match self.rng.u8(..24) {
            0 => Value::Null,
            1 => json!(true),
            2 => json!(false),
            3 => json!(0),
            4 => json!(-1),
            5 => json!(1),
            6 => json!(i64::MAX),
            7 => json!(i64::MIN),
            8 => json!(u64::MAX),
            9 => json!(1e308),
            10 => json!(-1e-308),
            11 => json!(0.5),
            12 => json!(""),
            13 => json!("a"),
            14 => json!(self.unicode_string()),
            15 => json!([]),
            16 => json!({}),
            17 => json!([null]),
            18 => json!({"": ""}),
            19 => json!(self.mode()),
            20 => json!(format!("/{}", "../".repeat(self.rng.usize(1..20)))),
            21 => json!("/dev/zero"),
            22 => json!("/proc/self/environ"),
            _ => json!(self.rng.u32(..) as i64 - i32::MAX as i64),
        }
    }

    fn unicode_string(&mut self) -> String {
        let mut text = String::new();
        for _ in 0..self.rng.usize(1..40) {
            text.push_str(self.pick(UNICODE));
        }
        text
    }

    fn long_string(&mut self) -> String {
        // Mostly a few kilobytes; now and then past the server's line limit.
        let length = match self.rng.u8(..20) {
            0 => self.rng.usize(64 * 1024..200 * 1024),
            1..=4 => self.rng.usize(4_000..40_000),
            _ => self.rng.usize(100..4_000),
        };
        let unit = match self.rng.u8(..4) {
            0 => "word ",
            1 => "😀",
            2 => "\\\"",
            _ => "a",
        };
        unit.repeat(length / unit.len() + 1)
    }

    fn nest(&mut self, value: Value) -> Value {
        let depth = match self.rng.u8(..4) {
            0 => self.rng.usize(120..135),
            1 => self.rng.usize(135..400),
            _ => self.rng.usize(1..120),
        };
        let as_array = self.rng.bool();
        let mut nested = value;
        for _ in 0..depth {
            nested = if as_array {
                json!([nested])
            } else {
                json!({ "a": nested })
            };
        }
        nested
    }

    /// A mutable reference to a random node (the root included).
    fn random_node<'a>(&mut self, value: &'a mut Value) -> &'a mut Value {
        // The root itself rarely: most mutations should reach past the envelope.
        let mut node = value;
        let mut depth = 0;
        loop {
            let stop = if depth == 0 { 3 } else { 30 };
            if self.rng.u8(..100) < stop {
                return node;
            }
            depth += 1;
            let length = match &*node {
                Value::Array(items) => items.len(),
                Value::Object(fields) => fields.len(),
                _ => 0,
            };
            if length == 0 {
                return node;
            }
            let mut pick = self.rng.usize(..length);
            // Go into `params`, then `arguments`, then `request` most of
            // the time, so that most mutations reach the tools.
            if self.rng.u8(..4) != 0
                && let Value::Object(fields) = &*node
                && let Some(inner) = fields
                    .keys()
                    .position(|key| ["params", "arguments", "request"].contains(&key.as_str()))
            {
                pick = inner;
            }
            node = match node {
                Value::Array(items) => &mut items[pick],
                Value::Object(fields) => fields
                    .values_mut()
                    .nth(pick)
                    .expect("an index below the length"),
                _ => unreachable!("only containers have children"),
            };
        }
    }

    fn structural(&mut self, value: &mut Value, threads: &[String], handles: &[String]) {
        match self.rng.u8(..20) {
            0..=4 => {
                let replacement = self.interesting();
                *self.random_node(value) = replacement;
            }
            5 => {
                let text = self.long_string();
                *self.random_node(value) = json!(text);
            }
            6 => {
                let node = self.random_node(value);
                let inner = std::mem::take(node);
                *node = self.nest(inner);
            }
            7 => {
                // A key removed, or one added (known or not).
                let add = self.rng.bool();
                let field = self.pick(FIELDS).to_owned();
                let extra = self.interesting();
                let remove_at = self.rng.usize(..64);
                if let Some(object) = self.random_node(value).as_object_mut() {
                    if add || object.is_empty() {
                        object.insert(field, extra);
                    } else {
                        let key = object.keys().nth(remove_at % object.len()).cloned();
                        if let Some(key) = key {
                            object.remove(&key);
                        }
                    }
                }
            }
            8 => {
                // A long array: many small values, a few large.
                let count = match self.rng.u8(..8) {
                    0 => self.rng.usize(5_000..30_000),
                    _ => self.rng.usize(2..200),
                };
                let item = self.interesting();
                *self.random_node(value) = Value::Array(vec![item; count]);
            }
            9 => {
                let text = self.unicode_string();
                let node = self.random_node(value);
                if let Value::String(existing) = node {
                    existing.push_str(&text);
                } else {
                    *node = json!(text);
                }
            }
            10 => {
                let id = self.odd_id();
                if let Some(object) = value.as_object_mut() {
                    object.insert("id".to_owned(), id);
                }
            }
            11 => {
                let method = self.pick(METHODS).to_owned();
                if let Some(object) = value.as_object_mut() {
                    object.insert("method".to_owned(), json!(method));
                }
            }
            12 => {
                // Another tool, or a mode called by its own name.
                let name = if self.rng.bool() {
                    self.pick(TOOLS).to_owned()
                } else {
                    self.mode()
                };
                if let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) {
                    params.insert("name".to_owned(), json!(name));
                }
            }
            13 => {
                // One mode's request to another mode's validator.
                let mode = self.mode();
                if let Some(arguments) = arguments(value) {
                    arguments.insert("mode".to_owned(), json!(mode));
                }
            }
            14 if !handles.is_empty() && self.rng.u8(..3) == 0 => {
                let id = handles[self.rng.usize(..handles.len())].clone();
                self.quote_handle(value, &id);
            }
            14 => {
                // A thread the server handed out, so threads go on and end.
                let Some(thread) =
                    (!threads.is_empty()).then(|| threads[self.rng.usize(..threads.len())].clone())
                else {
                    return;
                };
                let top_level = self.rng.bool();
                if let Some(arguments) = arguments(value) {
                    let target = match arguments.get_mut("request") {
                        Some(Value::Object(request)) if !top_level => request,
                        _ => arguments,
                    };
                    target.insert("continuation_id".to_owned(), json!(thread));
                }
            }
            15 => {
                // Step arithmetic at the edges, and the final step.
                let step = match self.rng.u8(..6) {
                    0 => json!(u64::MAX),
                    1 => json!(0),
                    2 => json!(-1),
                    3 => json!(i64::MAX),
                    _ => json!(self.rng.u64(1..12)),
                };
                let total = json!(self.rng.u64(1..12));
                let last = self.rng.bool();
                if let Some(arguments) = arguments(value) {
                    let request = match arguments.get_mut("request") {
                        Some(Value::Object(request)) => request,
                        _ => arguments,
                    };
                    request.insert("step_number".to_owned(), step);
                    request.insert("total_steps".to_owned(), total);
                    request.insert("next_step_required".to_owned(), json!(!last));
                }
            }
            16 => {
                // The request as a JSON string (accepted), or as a broken one.
                let broken = self.rng.u8(..4) == 0;
                if let Some(arguments) = arguments(value)
                    && let Some(request) = arguments.get_mut("request")
                {
                    let mut text = request.to_string();
                    if broken {
                        let mut half = text.len() / 2;
                        while !text.is_char_boundary(half) {
                            half -= 1;
                        }
                        text.truncate(half);
                    }
                    *request = json!(text);
                }
            }
            17 => {
                // A batch, which MCP does not have.
                let copy = value.clone();
                *value = json!([copy, value.clone()]);
            }
            18 => {
                let meta = json!({
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
                    "progressToken": self.interesting(),
                });
                if let Some(params) = value.get_mut("params").and_then(Value::as_object_mut) {
                    params.insert("_meta".to_owned(), meta);
                }
            }
            _ => {
                let keys = [
                    "jsonrpc",
                    "id",
                    "method",
                    "params",
                    "result",
                    "error",
                    "arguments",
                ];
                let key = keys[self.rng.usize(..keys.len())];
                let replacement = self.interesting();
                if let Some(object) = value.as_object_mut() {
                    object.insert(key.to_owned(), replacement);
                }
            }
        }
    }

    /// A result handle the server handed out: quoted somewhere in the
    /// request (whole, or at a pointer that may not exist), or read as a
    /// resource, on a page that may not exist.
    fn quote_handle(&mut self, value: &mut Value, id: &str) {
        if self.rng.bool() {
            let reference = match self.rng.u8(..4) {
                0 => json!({"$result": id, "pointer": "/content/0/text"}),
                1 => json!({"$result": id, "pointer": "/nothing/here"}),
                2 => json!({"$result": {"$result": id}}),
                _ => json!({"$result": id}),
            };
            *self.random_node(value) = reference;
            return;
        }
        let page = match self.rng.u8(..5) {
            0 => String::new(),
            1 => "?page=0".to_owned(),
            2 => "?page=18446744073709551616".to_owned(),
            _ => format!("?page={}", self.rng.u64(1..6)),
        };
        if let Some(object) = value.as_object_mut() {
            object.insert("method".to_owned(), json!("resources/read"));
            object.insert(
                "params".to_owned(),
                json!({"uri": format!("zenmode://results/{id}{page}")}),
            );
        }
    }

    fn textual(&mut self, mut line: Vec<u8>) -> Vec<u8> {
        let rounds = if self.rng.u8(..4) == 0 { 3 } else { 1 };
        for _ in 0..rounds {
            let length = line.len();
            let at = self.rng.usize(..=length);
            match self.rng.u8(..12) {
                0 | 1 if length > 0 => {
                    let at = at.min(length - 1);
                    line[at] ^= 1 << self.rng.u8(..8);
                }
                2 if length > 0 => {
                    let bytes = b"\"{}[],:\\\n\r\x00\xff\x80 0-eE.";
                    let at = at.min(length - 1);
                    line[at] = bytes[self.rng.usize(..bytes.len())];
                }
                3 | 4 => {
                    let token = self.pick(TOKENS);
                    line.splice(at..at, token.iter().copied());
                }
                5 if length > 0 => {
                    let end = (at + self.rng.usize(1..64)).min(length);
                    line.drain(at..end);
                }
                6 => line.truncate(at),
                7 if length > 0 => {
                    // A slice repeated: long runs of brackets, quotes, keys.
                    let end = (at + self.rng.usize(1..16)).min(length);
                    let slice = line[at..end].to_vec();
                    let times = if self.rng.u8(..6) == 0 {
                        self.rng.usize(100..2_000)
                    } else {
                        self.rng.usize(2..10)
                    };
                    let repeated: Vec<u8> = slice
                        .iter()
                        .copied()
                        .cycle()
                        .take(slice.len() * times)
                        .collect();
                    line.splice(at..at, repeated);
                }
                8 => {
                    // The head of this line and the tail of another seed.
                    let other = &self.seeds[self.rng.usize(..self.seeds.len())];
                    let from = self.rng.usize(..=other.len());
                    line.truncate(at);
                    line.extend_from_slice(&other[from..]);
                }
                9 => {
                    // Two messages on one line, or on two.
                    let other = self.seeds[self.rng.usize(..self.seeds.len())].clone();
                    if self.rng.bool() {
                        line.push(b'\n');
                    }
                    line.extend_from_slice(&other);
                }
                10 => {
                    let text = self.unicode_string();
                    line.splice(at..at, text.bytes());
                }
                _ => {
                    let nesting = self.rng.usize(100..300);
                    let (open, close) = if self.rng.bool() {
                        (b'[', b']')
                    } else {
                        (b'{', b'}')
                    };
                    let mut wrapped = vec![open; nesting];
                    wrapped.append(&mut line);
                    wrapped.extend(std::iter::repeat_n(close, nesting));
                    line = wrapped;
                }
            }
            if line.len() > MAX_LINE {
                line.truncate(MAX_LINE);
            }
        }
        line
    }
}

/// The tool arguments of a `tools/call`, when there are any.
fn arguments(value: &mut Value) -> Option<&mut Map<String, Value>> {
    value
        .get_mut("params")?
        .get_mut("arguments")?
        .as_object_mut()
}
