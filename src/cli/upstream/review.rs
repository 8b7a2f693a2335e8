//! `zenmode upstream approve` and `diff`: a server's tools shown against
//! the approved pins, and pinned once confirmed.

use std::{process::ExitCode, time::Duration};

use anyhow::{Context, bail};
use serde_json::Value;

use super::file::fetch;
use crate::gateway::{
    Pins, Verdict, catalog_cache, config::UpstreamConfig, disk::GatewayDirs, pins,
};

/// Pins `tools` as the approved definitions of `name`.
pub fn save_approval(dirs: &GatewayDirs, name: &str, tools: &[Value]) -> anyhow::Result<()> {
    let before = pins::load_pins(dirs, name).unwrap_or_default();
    let changed = tools
        .iter()
        .filter(|tool| before.verdict(tool) != Verdict::Approved)
        .count();
    pins::save_pins(dirs, name, &Pins::of(tools))
        .with_context(|| format!("cannot save the approvals of {name:?}"))?;
    println!(
        "{name}: approved {} tools ({changed} new or changed since the last approval)",
        tools.len()
    );
    Ok(())
}

/// `upstream approve`: fetches the tools, shows what changed since the
/// last approval, and pins them once confirmed (`--yes`, or an answer on a
/// terminal). Without a terminal it never waits for an answer.
pub async fn approve_reviewed(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let name = &config.name;
    let tools = fetch(config, dirs, wait)
        .await
        .map_err(|problem| anyhow::anyhow!("{name}: {problem}"))?;
    let review = match pins::load_pins_with_definitions(dirs, name) {
        // Nothing approved before: there is nothing to compare with.
        None => String::new(),
        Some(pins) => review_text(name, &pins, &tools, None),
    };
    if review.is_empty() || yes {
        print!("{review}");
        save_approval(dirs, name, &tools)?;
        return Ok(ExitCode::SUCCESS);
    }
    print!("{review}");
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "not approved: standard input is not a terminal, so nobody can confirm. Read the changes above, then run `zenmode upstream approve {name} --yes`."
        );
        return Ok(ExitCode::FAILURE);
    }
    print!("Approve these definitions of {name:?}? [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
        save_approval(dirs, name, &tools)?;
        Ok(ExitCode::SUCCESS)
    } else {
        println!("not approved; nothing changed");
        Ok(ExitCode::FAILURE)
    }
}

/// The tools of `config`'s server: the cached catalog, else fetched now.
pub async fn current_tools(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
) -> anyhow::Result<Vec<Value>> {
    match catalog_cache::load_catalog(dirs, config) {
        Some(tools) => Ok(tools),
        None => fetch(config, dirs, wait)
            .await
            .map_err(|problem| anyhow::anyhow!("{}: {problem}", config.name)),
    }
}

/// `upstream diff NAME [TOOL]`.
pub async fn diff(
    config: &UpstreamConfig,
    dirs: &GatewayDirs,
    wait: Duration,
    tool: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let name = &config.name;
    let tools = current_tools(config, dirs, wait).await?;
    if let Some(tool) = tool
        && !tools.iter().any(|t| pins::tool_name(t) == Some(tool))
    {
        bail!("{name}: lists no tool named {tool:?}");
    }
    let pins = pins::load_pins_with_definitions(dirs, name).unwrap_or_default();
    let review = review_text(name, &pins, &tools, tool);
    if review.is_empty() {
        match tool {
            Some(tool) => println!("{name}: {tool} is as approved"),
            None => println!("{name}: every tool is as approved; nothing to review"),
        }
    }
    print!("{review}");
    Ok(ExitCode::SUCCESS)
}

/// A unified diff per tool that differs from its approval (only `only`
/// when given): approved lines with `-`, current ones with `+`.
pub fn review_text(server: &str, pins: &Pins, tools: &[Value], only: Option<&str>) -> String {
    let mut out = String::new();
    for tool in tools {
        let Some(name) = pins::tool_name(tool) else {
            continue;
        };
        if only.is_some_and(|wanted| wanted != name) {
            continue;
        }
        let verdict = pins.verdict(tool);
        if verdict == Verdict::Approved {
            continue;
        }
        let current = pretty(&pins::defining(tool));
        let approved = match pins.definitions.get(name) {
            Some(definition) => pretty(definition),
            None if verdict == Verdict::New => String::new(),
            None => {
                out.push_str(&format!(
                    "# {server}/{name}: the approved text was not kept (approved by an older zenmode); only the current definition can be shown\n"
                ));
                String::new()
            }
        };
        out.push_str(&format!(
            "--- {server}/{name} (approved)\n+++ {server}/{name} (now: {})\n",
            verdict.reason()
        ));
        out.push_str(&unified(&approved, &current));
    }
    out
}

pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A line diff of `old` and `new` (longest common subsequence), every line
/// shown: ` ` kept, `-` only in `old`, `+` only in `new`.
pub fn unified(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || common[i][j + 1] >= common[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}
