//! Threads in Redis, shared by every zenmode instance pointed at it (behind
//! a load balancer, any instance can continue any thread).
//!
//! Per thread: a hash `zen:m:{id}` (created, updated, bytes) and a list
//! `zen:t:{id}` of turns as JSON, both expiring after the idle timeout, so
//! Redis drops idle threads by itself. `zen:g:{id}` outlives them by a day
//! and says whether the thread was evicted, so an old id reads as expired or
//! evicted rather than unknown. `zen:index` (a sorted set by last update)
//! bounds the thread count. Every operation is one Lua script, so a
//! check and its write are atomic: two instances appending to one thread
//! never lose a turn or pass the turn cap.
//!
//! Redis going away mid-session makes calls fail with
//! [`MemoryError::Unavailable`] (nothing half-written); the connection
//! manager reconnects by itself once it is back.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{
    Client, Script,
    aio::{ConnectionManager, ConnectionManagerConfig},
};

use super::{
    config::MemoryConfig,
    error::MemoryError,
    store::ConversationStore,
    store_url::StoreUrl,
    thread::{Thread, Turn, encode_turn, normalize_id},
};

/// A day beyond the idle timeout, the marker still explains an old id.
const GONE_MARKER_EXTRA_MS: u64 = 24 * 3600 * 1000;

pub struct RedisStore {
    connection: ConnectionManager,
    config: MemoryConfig,
    /// The URL with any password hidden, for errors.
    shown: String,
    create_script: Script,
    append_script: Script,
    get_script: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.shown)
            .finish()
    }
}

/// The index's score for a write at `now` (ms): microseconds, and always
/// above the last score given (kept in KEYS[5]), so threads written in the
/// same millisecond still leave in the order they were written, as in the
/// other stores. Formatted with `%d`: Lua would print a number this large
/// in exponent form and lose digits.
const ORDER_SCORE: &str = r#"
local function order_score(now_ms)
  local score = tonumber(now_ms) * 1000
  local last = tonumber(redis.call('GET', KEYS[5]) or '0')
  if score <= last then score = last + 1 end
  local text = string.format('%d', score)
  redis.call('SET', KEYS[5], text)
  return text
end
"#;

/// Creates a thread: its hash, its first turn, the index entry and the
/// marker; then evicts the least recently updated threads over the cap.
/// KEYS: meta, turns, gone, index, clock. ARGV: id, turn, now, ttl, marker
/// ttl, max threads, bytes.
const CREATE: &str = r#"
redis.call('HSET', KEYS[1], 'created', ARGV[3], 'updated', ARGV[3], 'bytes', ARGV[7])
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('SET', KEYS[3], 'live', 'PX', ARGV[5])
redis.call('ZADD', KEYS[4], order_score(ARGV[3]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf',
  '(' .. string.format('%d', (tonumber(ARGV[3]) - tonumber(ARGV[4])) * 1000))
local evicted = 0
while redis.call('ZCARD', KEYS[4]) > tonumber(ARGV[6]) do
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
  if oldest == ARGV[1] then break end
  redis.call('ZREM', KEYS[4], oldest)
  redis.call('DEL', 'zen:m:' .. oldest, 'zen:t:' .. oldest)
  redis.call('SET', 'zen:g:' .. oldest, 'evicted', 'PX', ARGV[5])
  evicted = evicted + 1
end
return evicted
"#;

/// Appends a turn if the thread is live and under its caps.
/// KEYS: meta, turns, gone, index, clock. ARGV: id, turn, now, ttl, marker ttl,
/// max turns, max bytes. Returns {"ok", count}, {"full"}, {"large", bytes}
/// or {"gone", why}.
const APPEND: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'gone', redis.call('GET', KEYS[3]) or 'unknown'}
end
local count = redis.call('LLEN', KEYS[2])
if count >= tonumber(ARGV[6]) then return {'full'} end
local bytes = tonumber(redis.call('HGET', KEYS[1], 'bytes') or '0') + string.len(ARGV[2])
if bytes > tonumber(ARGV[7]) then return {'large', bytes} end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'updated', ARGV[3], 'bytes', bytes)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('SET', KEYS[3], 'live', 'PX', ARGV[5])
redis.call('ZADD', KEYS[4], order_score(ARGV[3]), ARGV[1])
return {'ok', count + 1}
"#;

/// Reads a thread. KEYS: meta, turns, gone. Returns {"ok", created,
/// updated, turns...} or {"gone", why}.
const GET: &str = r#"
local meta = redis.call('HMGET', KEYS[1], 'created', 'updated')
if not meta[1] then
  return {'gone', redis.call('GET', KEYS[3]) or 'unknown'}
end
local reply = {'ok', meta[1], meta[2]}
for _, turn in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  table.insert(reply, turn)
end
return reply
"#;

impl RedisStore {
    /// Connects now, so a wrong URL or a Redis that is down stops start-up
    /// with a clear error.
    pub async fn connect(url: &str, config: MemoryConfig) -> Result<Self, String> {
        let config = config.at_least_one();
        let shown = StoreUrl::Redis(url.to_owned()).display();
        let client =
            Client::open(url).map_err(|error| format!("invalid Redis URL {shown}: {error}"))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(3)))
            .set_response_timeout(Some(Duration::from_secs(5)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_secs(1));
        let connection = ConnectionManager::new_with_config(client, manager_config)
            .await
            .map_err(|error| format!("cannot reach Redis at {shown}: {error}"))?;
        Ok(RedisStore {
            connection,
            config,
            shown,
            create_script: Script::new(&format!("{ORDER_SCORE}{CREATE}")),
            append_script: Script::new(&format!("{ORDER_SCORE}{APPEND}")),
            get_script: Script::new(GET),
        })
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.config.timeout.as_millis())
            .unwrap_or(u64::MAX / 2)
            .max(1)
    }

    fn unavailable(&self, error: redis::RedisError) -> MemoryError {
        MemoryError::Unavailable {
            reason: format!("Redis at {}: {error}", self.shown),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or(0)
}

fn keys(id: &str) -> [String; 4] {
    [
        format!("zen:m:{id}"),
        format!("zen:t:{id}"),
        format!("zen:g:{id}"),
        "zen:index".to_owned(),
    ]
}

/// The last score given in the index (see `ORDER_SCORE`).
const CLOCK_KEY: &str = "zen:clock";

fn gone(id: String, why: &str) -> MemoryError {
    match why {
        "live" => MemoryError::Expired { id },
        "evicted" => MemoryError::Evicted { id },
        _ => MemoryError::Unknown { id },
    }
}

#[async_trait::async_trait]
impl ConversationStore for RedisStore {
    async fn create(&self, first: Turn) -> Result<String, MemoryError> {
        let body = encode_turn(&first)?;
        let bytes = body.len();
        if bytes > self.config.max_total_bytes {
            return Err(MemoryError::TooLarge {
                bytes,
                max_bytes: self.config.max_total_bytes,
            });
        }
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let [meta, turns, marker, index] = keys(&id);
        let ttl = self.ttl_ms();
        let evicted: i64 = self
            .create_script
            .key(meta)
            .key(turns)
            .key(marker)
            .key(index)
            .key(CLOCK_KEY)
            .arg(&id)
            .arg(body)
            .arg(now_ms())
            .arg(ttl)
            .arg(ttl.saturating_add(GONE_MARKER_EXTRA_MS))
            .arg(self.config.max_threads)
            .arg(bytes)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.unavailable(error))?;
        if evicted > 0 {
            tracing::debug!(evicted, "conversations evicted to bound the Redis store");
        }
        Ok(id)
    }

    async fn get(&self, id: &str) -> Result<Thread, MemoryError> {
        let id = normalize_id(id)?;
        let [meta, turns, marker, _] = keys(&id);
        let reply: Vec<String> = self
            .get_script
            .key(meta)
            .key(turns)
            .key(marker)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.unavailable(error))?;
        match reply.first().map(String::as_str) {
            Some("ok") if reply.len() >= 3 => {
                let time = |raw: &str| {
                    UNIX_EPOCH + Duration::from_millis(raw.parse::<u64>().unwrap_or_default())
                };
                let turns = reply[3..]
                    .iter()
                    .map(|body| serde_json::from_str::<Turn>(body))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| MemoryError::Unavailable {
                        reason: format!("a stored turn is unreadable: {error}"),
                    })?;
                Ok(Thread {
                    created: time(&reply[1]),
                    updated: time(&reply[2]),
                    id,
                    turns,
                })
            }
            Some("gone") => Err(gone(id, reply.get(1).map_or("", String::as_str))),
            _ => Err(MemoryError::Unavailable {
                reason: format!("Redis at {} gave an unexpected reply", self.shown),
            }),
        }
    }

    async fn append(&self, id: &str, turn: Turn) -> Result<usize, MemoryError> {
        let id = normalize_id(id)?;
        let body = encode_turn(&turn)?;
        let [meta, turns, marker, index] = keys(&id);
        let ttl = self.ttl_ms();
        let reply: Vec<String> = self
            .append_script
            .key(meta)
            .key(turns)
            .key(marker)
            .key(index)
            .key(CLOCK_KEY)
            .arg(&id)
            .arg(body)
            .arg(now_ms())
            .arg(ttl)
            .arg(ttl.saturating_add(GONE_MARKER_EXTRA_MS))
            .arg(self.config.max_turns)
            .arg(self.config.max_total_bytes)
            .invoke_async(&mut self.connection.clone())
            .await
            .map_err(|error| self.unavailable(error))?;
        let number = |index: usize| reply.get(index).and_then(|value| value.parse().ok());
        match reply.first().map(String::as_str) {
            Some("ok") => number(1).ok_or_else(|| MemoryError::Unavailable {
                reason: "Redis gave no turn count".to_owned(),
            }),
            Some("full") => Err(MemoryError::Full {
                id,
                max_turns: self.config.max_turns,
            }),
            Some("large") => Err(MemoryError::TooLarge {
                bytes: number(1).unwrap_or_default(),
                max_bytes: self.config.max_total_bytes,
            }),
            Some("gone") => Err(gone(id, reply.get(1).map_or("", String::as_str))),
            _ => Err(MemoryError::Unavailable {
                reason: format!("Redis at {} gave an unexpected reply", self.shown),
            }),
        }
    }
}
