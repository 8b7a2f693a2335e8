//! `version`: the server's version and what this process has loaded so far.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

pub struct Version;

#[async_trait]
impl Executor for Version {
    async fn execute(&self, _: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let process = &context.services.process;
        let presentation = process.presentation();
        let mut reply = json!({
            "name": env!("CARGO_PKG_NAME"),
            "version": env!("CARGO_PKG_VERSION"),
            "tool_list": presentation.map_or("none", |p| p.strategy.as_str()),
            "modes": context.catalog.len(),
            "uptime_seconds": process.uptime().as_secs(),
        });
        let listed = presentation
            .map(|p| p.listed_tools.clone())
            .unwrap_or_default();
        put_names(&mut reply, "listed_tools", &listed);
        put_names(
            &mut reply,
            "manifests_parsed",
            &context.catalog.parsed_modes(),
        );
        put_names(
            &mut reply,
            "schemas_compiled",
            &context.catalog.compiled_modes(),
        );
        put_names(
            &mut reply,
            "executors_started",
            &process.executors_started(),
        );
        if !context.services.gateway.is_empty() {
            // Names, targets and state only: entries' env and headers stay hidden.
            reply["upstreams"] = context.services.gateway.summary();
        }
        Ok(reply)
    }
}

/// Most names a list in the reply shows: with a large imported catalog the
/// full lists would run to tens of kilobytes of context.
const SHOWN_NAMES: usize = 40;

/// `names` under `key`, cut to [`SHOWN_NAMES`]; a cut list comes with
/// `<key>_total`.
fn put_names(reply: &mut Value, key: &str, names: &[impl AsRef<str>]) {
    let shown: Vec<&str> = names.iter().take(SHOWN_NAMES).map(AsRef::as_ref).collect();
    reply[key] = json!(shown);
    if names.len() > SHOWN_NAMES {
        reply[format!("{key}_total")] = json!(names.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_name_lists_are_cut_and_counted() {
        let mut reply = json!({});
        let many: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
        put_names(&mut reply, "modes", &many);
        assert_eq!(reply["modes"].as_array().unwrap().len(), SHOWN_NAMES);
        assert_eq!(reply["modes"][0], "m0");
        assert_eq!(reply["modes_total"], 100);

        put_names(&mut reply, "few", &["a", "b"]);
        assert_eq!(reply["few"], json!(["a", "b"]));
        assert!(reply.get("few_total").is_none());
    }
}
