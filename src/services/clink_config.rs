//! Which external AI command-line tools `clink` may run, from
//! `ZEN_CLINK_CONFIG` and `ZEN_CLINK_TIMEOUT_SECS`.
//!
//! Configuration is read once per process, so it lives with the other
//! services; the clink executor only reads it.

use std::{collections::BTreeMap, time::Duration};

use serde::Deserialize;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// One external CLI: the program and the arguments that make it answer a prompt read from stdin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliSpec {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
}

/// Which CLIs clink may run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClinkConfig {
    pub clis: BTreeMap<String, CliSpec>,
    #[serde(default)]
    pub default_cli: Option<String>,
    #[serde(default, with = "secs")]
    pub timeout: Option<Duration>,
    /// A problem with the configuration, reported when clink is used.
    #[serde(skip)]
    pub problem: Option<String>,
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?
            .filter(|s| *s > 0.0)
            .map(Duration::from_secs_f64))
    }
}

impl ClinkConfig {
    /// The three well-known CLIs, each reading the prompt from stdin.
    pub fn builtin() -> Self {
        let cli = |command: &str, args: &[&str]| CliSpec {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        };
        ClinkConfig {
            clis: BTreeMap::from([
                ("claude".to_owned(), cli("claude", &["-p"])),
                ("codex".to_owned(), cli("codex", &["exec", "-"])),
                ("gemini".to_owned(), cli("gemini", &["-p", ""])),
            ]),
            default_cli: Some("claude".to_owned()),
            timeout: None,
            problem: None,
        }
    }

    /// `ZEN_CLINK_CONFIG` names a JSON file of this shape; `ZEN_CLINK_TIMEOUT_SECS` overrides the timeout.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut config = match env(crate::platform::settings::CLINK_CONFIG) {
            None => Self::builtin(),
            Some(path) => match std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    serde_json::from_str::<ClinkConfig>(&text).map_err(|e| e.to_string())
                }) {
                Ok(config) => config,
                Err(problem) => ClinkConfig {
                    problem: Some(format!("ZEN_CLINK_CONFIG {path}: {problem}")),
                    ..Self::builtin()
                },
            },
        };
        if let Some(seconds) = env(crate::platform::settings::CLINK_TIMEOUT_SECS)
            .and_then(|s| s.trim().parse::<f64>().ok())
            && seconds > 0.0
        {
            config.timeout = Some(Duration::from_secs_f64(seconds));
        }
        config
    }

    /// How long a CLI may run before it is stopped.
    pub fn timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_and_timeout_come_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clink.json");
        std::fs::write(
            &path,
            r#"{"clis": {"fake": {"command": "/bin/cat"}}, "default_cli": "fake", "timeout": 2}"#,
        )
        .unwrap();
        let path_text = path.display().to_string();
        let config = ClinkConfig::from_env(&|name| match name {
            crate::platform::settings::CLINK_CONFIG => Some(path_text.clone()),
            crate::platform::settings::CLINK_TIMEOUT_SECS => Some("0.5".into()),
            _ => None,
        });
        assert_eq!(config.clis["fake"].command, "/bin/cat");
        assert_eq!(config.timeout(), Duration::from_millis(500));

        let broken = ClinkConfig::from_env(&|name| {
            (name == crate::platform::settings::CLINK_CONFIG).then(|| "/no/such/file".to_owned())
        });
        assert!(broken.problem.unwrap().contains("/no/such/file"));
        assert_eq!(ClinkConfig::from_env(&|_| None).timeout(), DEFAULT_TIMEOUT);
    }
}
