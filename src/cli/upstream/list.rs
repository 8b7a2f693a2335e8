//! `zenmode upstream list`: every configured server, its cached catalog
//! and its quarantined tools.

use std::{path::Path, process::ExitCode};

use serde_json::{Value, json};

use super::status::no_upstreams_file;
use crate::gateway::{
    Verdict, catalog_cache,
    config::{self},
    disk::GatewayDirs,
    pins,
};

pub fn list(file: &Path, dirs: &GatewayDirs, json: bool) -> anyhow::Result<ExitCode> {
    if !file.exists() {
        return Ok(no_upstreams_file(file, json));
    }
    let configs = config::load(file)?.servers;
    let mut rows = Vec::new();
    for config in &configs {
        let cached = catalog_cache::load_catalog(dirs, config);
        let pins = pins::load_pins_with_definitions(dirs, &config.name);
        let mut quarantined = Vec::new();
        let mut filtered = 0;
        if let (Some(tools), Some(pins)) = (&cached, &pins) {
            for tool in tools {
                let name = pins::tool_name(tool).unwrap_or_default();
                if !config.allows(name) {
                    filtered += 1;
                    continue;
                }
                let verdict = pins.verdict(tool);
                if verdict != Verdict::Approved {
                    quarantined.push(json!({
                        "tool": name,
                        "reason": verdict.reason(),
                        "changed": pins.changes(tool),
                    }));
                }
            }
        }
        rows.push(json!({
            "server": config.name,
            "prefix": config.prefix,
            "enabled": config.enabled,
            "target": config.describe(),
            "cached_tools": cached.as_ref().map(Vec::len),
            "cached_at": catalog_cache::catalog_age(dirs, config),
            "approved": pins.is_some(),
            "filtered": filtered,
            "quarantined": quarantined,
        }));
    }
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "servers": rows})
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", file.display());
    for row in &rows {
        let tools = match row["cached_tools"].as_u64() {
            Some(n) => format!("{n} tools cached"),
            None => "not cached yet".to_owned(),
        };
        println!(
            "  {:<16} prefix {:<12} {:<9} {:<16} {}",
            row["server"].as_str().unwrap_or_default(),
            row["prefix"].as_str().unwrap_or_default(),
            if row["enabled"] == true {
                "enabled"
            } else {
                "disabled"
            },
            tools,
            row["target"].as_str().unwrap_or_default()
        );
        for held in row["quarantined"].as_array().into_iter().flatten() {
            let changed: Vec<&str> = held["changed"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            println!(
                "      quarantined: {} ({}{})",
                held["tool"].as_str().unwrap_or_default(),
                held["reason"].as_str().unwrap_or_default(),
                if changed.is_empty() {
                    String::new()
                } else {
                    format!(": {} changed", changed.join(", "))
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first line of `text`, at most 80 characters.
pub fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
