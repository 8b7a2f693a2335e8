//! `zenmode upstream tools`: one server's tools, as it lists them now.

use std::{process::ExitCode, time::Duration};

use serde_json::{Value, json};

use super::{list::first_line, review::current_tools};
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
            json!({
                "tool": name,
                "mode": crate::catalog::gateway_modes::mode_name(&config.prefix, name),
                "standing": standing,
                "read_only": read_only,
                "destructive": destructive,
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
    Ok(ExitCode::SUCCESS)
}
