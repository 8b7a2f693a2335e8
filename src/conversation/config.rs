//! The limits of conversation memory ([`MemoryConfig`]): idle expiry,
//! turns per thread, thread count and total bytes, read from the
//! environment with a warning (and the default) for a value that is not
//! usable. Every store applies the same limits.

use std::time::Duration;

/// Limits of conversation memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Idle time after which a thread expires.
    pub timeout: Duration,
    /// Most turns a thread holds.
    pub max_turns: usize,
    /// Most threads kept at once; the least recently updated go first.
    pub max_threads: usize,
    /// Approximate bound on the bytes all threads hold together.
    pub max_total_bytes: usize,
}

impl MemoryConfig {
    pub const DEFAULT_TIMEOUT_HOURS: f64 = 3.0;
    pub const DEFAULT_MAX_TURNS: usize = 50;
    pub const DEFAULT_MAX_THREADS: usize = 1_000;
    pub const DEFAULT_MAX_TOTAL_BYTES: usize = 256 * 1024 * 1024;

    /// Reads `CONVERSATION_TIMEOUT_HOURS` (fractional hours, default 3)
    /// and `MAX_CONVERSATION_TURNS` (default 50) through `env`, so tests
    /// need not touch the process environment. An invalid value falls
    /// back to the default with a warning rather than stopping the server.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = Self::default();
        if let Some(raw) = non_empty(env("CONVERSATION_TIMEOUT_HOURS")) {
            match parse_hours(&raw) {
                Some(timeout) => config.timeout = timeout,
                None => tracing::warn!(
                    value = %raw,
                    default = Self::DEFAULT_TIMEOUT_HOURS,
                    "CONVERSATION_TIMEOUT_HOURS is not a positive number of hours; using the default"
                ),
            }
        }
        if let Some(raw) = non_empty(env("MAX_CONVERSATION_TURNS")) {
            match raw.parse::<usize>() {
                Ok(turns) if turns > 0 => config.max_turns = turns,
                _ => tracing::warn!(
                    value = %raw,
                    default = Self::DEFAULT_MAX_TURNS,
                    "MAX_CONVERSATION_TURNS is not a positive whole number; using the default"
                ),
            }
        }
        config
    }
}

impl MemoryConfig {
    /// Zero limits raised to one, so every store always holds something.
    pub fn at_least_one(mut self) -> Self {
        self.max_turns = self.max_turns.max(1);
        self.max_threads = self.max_threads.max(1);
        self.max_total_bytes = self.max_total_bytes.max(1);
        self
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(3 * 3600),
            max_turns: Self::DEFAULT_MAX_TURNS,
            max_threads: Self::DEFAULT_MAX_THREADS,
            max_total_bytes: Self::DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// Positive, finite hours that fit in a [`Duration`].
fn parse_hours(raw: &str) -> Option<Duration> {
    let hours: f64 = raw.parse().ok()?;
    if !(hours.is_finite() && hours > 0.0) {
        return None;
    }
    Duration::try_from_secs_f64(hours * 3600.0).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn config_defaults_without_env() {
        let config = MemoryConfig::from_env(&env_of(&[]));
        assert_eq!(config, MemoryConfig::default());
        assert_eq!(config.timeout, Duration::from_secs(3 * 3600));
        assert_eq!(config.max_turns, 50);
    }

    #[test]
    fn config_reads_env_with_fractional_hours() {
        let config = MemoryConfig::from_env(&env_of(&[
            ("CONVERSATION_TIMEOUT_HOURS", "0.5"),
            ("MAX_CONVERSATION_TURNS", " 7 "),
        ]));
        assert_eq!(config.timeout, Duration::from_secs(1800));
        assert_eq!(config.max_turns, 7);
    }

    #[test]
    fn invalid_config_falls_back_to_defaults() {
        for (hours, turns) in [
            ("abc", "x"),
            ("-1", "0"),
            ("NaN", "-3"),
            ("inf", "1e3"),
            ("1e300", ""),
        ] {
            let config = MemoryConfig::from_env(&env_of(&[
                ("CONVERSATION_TIMEOUT_HOURS", hours),
                ("MAX_CONVERSATION_TURNS", turns),
            ]));
            assert_eq!(config, MemoryConfig::default(), "{hours} / {turns}");
        }
    }
}
