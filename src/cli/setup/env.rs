//! `zenmode setup CLIENT --env NAME[=VALUE]`: variables the client starts
//! zenmode with, for upstream entries whose `${NAME}` placeholders need
//! them. They go into zenmode's one entry in the client (a second
//! `claude mcp add zenmode -e ...` would make a second entry in another
//! scope, which Claude Code reports as conflicting).

use anyhow::bail;
use serde_json::{Map, Value};

/// The variables of `--env` arguments: `NAME=VALUE`, or `NAME` alone for
/// the value it has in setup's own environment.
pub fn parse(args: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut env = Map::new();
    for arg in args {
        let (name, value) = match arg.split_once('=') {
            Some((name, value)) => (name, value.to_owned()),
            None => match std::env::var(arg) {
                Ok(value) => (arg.as_str(), value),
                Err(_) => bail!(
                    "--env {arg}: {arg} is not set in this shell; set it, or give --env {arg}=VALUE; nothing was changed"
                ),
            },
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            bail!(
                "--env {name:?}: a variable name is letters, digits and _ (not starting with a digit); nothing was changed"
            );
        }
        env.insert(name.to_owned(), Value::String(value));
    }
    Ok(env)
}

/// `entry` with `env` set over its own variables; `None` when it has them
/// all already.
pub fn with_env(entry: &Value, env: &Map<String, Value>) -> Option<Value> {
    let mut entry = entry.clone();
    let fields = entry.as_object_mut()?;
    let vars = fields
        .entry("env")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    let mut changed = false;
    for (name, value) in env {
        if vars.get(name) != Some(value) {
            vars.insert(name.clone(), value.clone());
            changed = true;
        }
    }
    changed.then_some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_alone_takes_its_value_from_here_and_a_bad_name_is_refused() {
        let path = std::env::var("PATH").unwrap();
        let env = parse(&["PATH".into(), "A_1=x=y".into()]).unwrap();
        assert_eq!(env["PATH"], json!(path));
        assert_eq!(env["A_1"], json!("x=y"));
        assert!(parse(&["1A=x".into()]).is_err());
        assert!(parse(&["ZEN_SURELY_UNSET_VARIABLE_NAME".into()]).is_err());
    }

    #[test]
    fn setting_what_is_there_already_changes_nothing() {
        let entry = json!({"command": "zenmode", "env": {"A": "1"}});
        let env = parse(&["A=1".into()]).unwrap();
        assert!(with_env(&entry, &env).is_none());
        let env = parse(&["B=2".into()]).unwrap();
        assert_eq!(
            with_env(&entry, &env).unwrap()["env"],
            json!({"A": "1", "B": "2"})
        );
    }
}
