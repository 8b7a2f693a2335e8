//! `zenmode upstream tools`: one server's tools, as it lists them now.

use std::{process::ExitCode, time::Duration};

use serde_json::{Value, json};

use super::{list::first_line, review::current_tools};
use crate::catalog::tool_examples::{ExampleSource, ServerExamples};
use crate::gateway::{Verdict, config::UpstreamConfig, disk::GatewayDirs, pins};

/// Whether a tool says it only reads, or may destroy something.
pub fn hints(tool: &Value) -> (bool, bool) {
    let hint = |key: &str| tool.pointer(&format!("/annotations/{key}")) == Some(&Value::Bool(true));
    let named = crate::engine::named_destructive(pins::tool_name(tool).unwrap_or_default());
    (hint("readOnlyHint"), hint("destructiveHint") || named)
}

/// `upstream tools NAME`.
pub async fn tools(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let tools = current_tools(config, dirs, wait).await?;
    let pins = pins::load_pins(dirs, &config.name);
    let names: Vec<&str> = tools.iter().filter_map(pins::tool_name).collect();
    let shipped = ExampleSource::for_server(&[config.name.as_str()], &names).shipped();
    let rows: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let name = pins::tool_name(tool).unwrap_or_default();
            let standing = if !config.allows(name) {
                "filtered out".to_owned()
            } else {
                match pins.as_ref().map(|pins| pins.verdict(tool)) {
                    None => "not approved yet".to_owned(),
                    Some(Verdict::Approved) => "approved".to_owned(),
                    Some(verdict) => format!("quarantined ({})", verdict.reason()),
                }
            };
            let (read_only, destructive) = hints(tool);
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let examples = shipped
                .and_then(|s| s.examples(name))
                .map_or(0, |e| e.len());
            let changed = shipped.is_some_and(|s| examples > 0 && s.changed(name, description));
            json!({
                "tool": name,
                "mode": crate::catalog::gateway_modes::mode_name(&config.prefix, name),
                "standing": standing,
                "read_only": read_only,
                "destructive": destructive,
                "examples": examples,
                "examples_for_older_description": changed,
                "summary": first_line(
                    tool.get("description").and_then(Value::as_str).unwrap_or_default(),
                ),
            })
        })
        .collect();
    if json {
        println!("{}", json!({"server": config.name, "tools": rows}));
        return Ok(ExitCode::SUCCESS);
    }
    let text = |row: &Value, key: &str| row[key].as_str().unwrap_or_default().to_owned();
    let hint = |row: &Value| match (row["read_only"] == true, row["destructive"] == true) {
        (_, true) => "destructive",
        (true, false) => "read-only",
        _ => "-",
    };
    // Columns as wide as their longest cell, so a long tool name does not
    // push its row out of line.
    let width = |cell: &dyn Fn(&Value) -> String| {
        rows.iter()
            .map(|row| cell(row).chars().count())
            .max()
            .unwrap_or(0)
    };
    let tool_width = width(&|row| text(row, "tool"));
    let standing_width = width(&|row| text(row, "standing"));
    let hint_width = width(&|row| hint(row).to_owned());
    for row in &rows {
        let line = format!(
            "{:<tool_width$}  {:<standing_width$}  {:<hint_width$}  {}",
            text(row, "tool"),
            text(row, "standing"),
            hint(row),
            text(row, "summary"),
        );
        println!("{}", line.trim_end());
    }
    print_examples_note(shipped, &rows);
    Ok(ExitCode::SUCCESS)
}

/// Which tools zenmode ships example requests for, and which of those were
/// written for another description than the server gives now.
fn print_examples_note(shipped: Option<&ServerExamples>, rows: &[Value]) {
    let Some(shipped) = shipped else {
        println!(
            "no shipped example requests for this server: its tools are ranked by their names and descriptions"
        );
        return;
    };
    let with = rows
        .iter()
        .filter(|r| r["examples"].as_u64() > Some(0))
        .count();
    println!(
        "{with} of {} tools have example requests (shipped for the {} server)",
        rows.len(),
        shipped.server
    );
    let changed: Vec<&str> = rows
        .iter()
        .filter(|r| r["examples_for_older_description"] == true)
        .filter_map(|r| r["tool"].as_str())
        .collect();
    if !changed.is_empty() {
        println!(
            "written for an older description (still used; they may not fit what the tool does now): {}",
            changed.join(", ")
        );
    }
}
