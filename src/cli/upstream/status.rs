//! `zenmode status`: what each upstream is doing, as the serving
//! processes recorded it, without starting anything.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use serde_json::{Value, json};

use crate::gateway::{
    Verdict, catalog_cache,
    config::{self, UpstreamConfig},
    disk::GatewayDirs,
    pins, status_file,
};

/// One server as `zenmode status` shows it.
pub fn server_status(config: &UpstreamConfig, dirs: &GatewayDirs) -> Value {
    let cached = catalog_cache::load_catalog(dirs, config);
    let pins = pins::load_pins(dirs, &config.name);
    let quarantined: Vec<&str> = match (&cached, &pins) {
        (Some(tools), Some(pins)) => tools
            .iter()
            .filter(|tool| config.allows(pins::tool_name(tool).unwrap_or_default()))
            .filter(|tool| pins.verdict(tool) != Verdict::Approved)
            .filter_map(pins::tool_name)
            .collect(),
        _ => Vec::new(),
    };
    let fingerprint = config.fingerprint();
    let mut recorded = status_file::load(dirs, &config.name);
    if let Some(recorded) = recorded.as_mut()
        && recorded.fingerprint.is_none()
    {
        // Written by an older zenmode: from now on an edit shows.
        status_file::adopt_fingerprint(dirs, &config.name, &fingerprint);
        recorded.fingerprint = Some(fingerprint.clone());
    }
    let changed = recorded
        .as_ref()
        .and_then(|r| r.fingerprint.as_deref())
        .is_some_and(|recorded| recorded != fingerprint);
    let alive = recorded
        .as_ref()
        .is_some_and(|r| crate::platform::process::is_alive(r.zenmode_pid));
    let live = alive
        && recorded
            .as_ref()
            .is_some_and(|r| matches!(r.state.as_str(), "running" | "starting"));
    // Why it cannot start, unless a serving zenmode that is still up has
    // started it: its environment evidently differs from this one.
    let started_there = alive
        && recorded
            .as_ref()
            .is_some_and(|r| matches!(r.state.as_str(), "running" | "starting" | "idle"));
    let blocked = (config.enabled && !started_there)
        .then(|| config.cannot_start())
        .flatten();
    let mut note = None;
    let state_name = match &recorded {
        _ if !config.enabled => "disabled".to_owned(),
        _ if blocked.is_some() => {
            note = blocked
                .clone()
                .map(|why| format!("{why} (checked in this environment, without starting it)"));
            "cannot start".to_owned()
        }
        Some(recorded) if changed && !live => {
            note = Some(format!(
                "its entry changed after its last run (which left it {}); what follows is from that run, and the next start uses the new entry",
                recorded.state
            ));
            "changed".to_owned()
        }
        None => "never started".to_owned(),
        Some(recorded)
            if matches!(recorded.state.as_str(), "running" | "starting")
                && !crate::platform::process::is_alive(recorded.zenmode_pid) =>
        {
            note = Some(format!(
                "the zenmode process {} that ran it has ended",
                recorded.zenmode_pid
            ));
            "stopped".to_owned()
        }
        Some(recorded) => {
            if changed {
                note = Some(
                    "its entry changed since this run started; the running zenmode restarts it with the new entry once it reads the file again".into(),
                );
            }
            recorded.state.clone()
        }
    };
    let running = state_name == "running";
    json!({
        "server": config.name,
        "enabled": config.enabled,
        "state": state_name,
        "note": note,
        "entry_changed": changed,
        "cannot_start": blocked,
        "target": config.describe(),
        "tools": recorded.as_ref().and_then(|r| r.tools).or(cached.as_ref().map(Vec::len)),
        "quarantined": quarantined,
        "pid": recorded.as_ref().filter(|_| running).and_then(|r| r.pid),
        "zenmode_pid": recorded.as_ref().map(|r| r.zenmode_pid),
        "last_error": recorded.as_ref().and_then(|r| r.last_error.clone()),
        "stderr_tail": recorded.as_ref().map(|r| r.stderr_tail.clone()).unwrap_or_default(),
        "last_call": recorded.as_ref().and_then(|r| r.last_call.clone()),
        "updated_ms": recorded.as_ref().map(|r| r.updated_ms),
    })
}

/// How long ago `at_ms` was, in words.
pub fn ago(at_ms: u64) -> String {
    let secs = status_file::now_ms().saturating_sub(at_ms) / 1000;
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}

/// What `list` and `status` print when there is no upstreams file yet.
pub fn no_upstreams_file(file: &Path, json: bool) -> ExitCode {
    if json {
        println!(
            "{}",
            json!({"file": file.display().to_string(), "servers": []})
        );
    } else {
        println!(
            "no upstreams file at {} (add a server with `zenmode upstream add NAME -- CMD ARGS...`)",
            file.display()
        );
    }
    ExitCode::SUCCESS
}

/// `zenmode status`: every configured server as the serving zenmode
/// processes last recorded it.
/// What the shared instance serving this file says of its servers: the
/// states its clients see.
fn print_shared(record: &crate::server::shared::InstanceRecord, servers: &Result<Value, String>) {
    println!(
        "  shared instance: pid {}, port {} (`zenmode dashboard` opens its dashboard)",
        record.pid, record.port
    );
    match servers {
        Err(problem) => println!("    cannot ask it: {problem}"),
        Ok(servers) => {
            for server in servers.as_array().into_iter().flatten() {
                let text = |key: &str| server[key].as_str().unwrap_or_default().to_owned();
                println!(
                    "    {:<16} {} ({} tools{})",
                    text("name"),
                    text("state"),
                    server["tools"].as_u64().unwrap_or_default(),
                    match server["quarantined"].as_u64() {
                        Some(held) if held > 0 => format!(", {held} quarantined"),
                        _ => String::new(),
                    }
                );
            }
        }
    }
    println!("  as this machine's state files say:");
}

pub fn status(file: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(crate::platform::dirs::upstreams_file);
    let dirs = GatewayDirs::from_env();
    if !file.exists() {
        return Ok(no_upstreams_file(&file, json));
    }
    // Entry by entry, as a serving zenmode reads it: a bad entry is shown
    // beside the others, not a reason to show nothing.
    let parsed = match config::load_each(&file) {
        Ok(parsed) => parsed,
        Err(problem) => {
            let (problem, fix) = super::file::does_not_load(&file, &problem);
            if json {
                println!(
                    "{}",
                    json!({"file": file.display().to_string(), "error": problem, "fix": fix})
                );
            } else {
                println!("{problem}; fix: {fix}");
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut rows: Vec<Value> = parsed
        .servers
        .iter()
        .map(|c| server_status(c, &dirs))
        .collect();
    rows.extend(
        parsed
            .bad
            .iter()
            .map(|(name, problem)| json!({"server": name, "state": "bad entry", "note": problem})),
    );
    let shared = crate::cli::shared::ask_instance(&file, reqwest::Method::GET, "servers");
    if json {
        let mut answer = json!({"file": file.display().to_string(), "servers": rows});
        if let Some((record, servers)) = &shared {
            answer["shared_instance"] = json!({
                "pid": record.pid,
                "port": record.port,
                "servers": servers.as_ref().ok(),
                "error": servers.as_ref().err(),
            });
        }
        println!("{answer}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", file.display());
    if let Some((record, servers)) = &shared {
        print_shared(record, servers);
    }
    for row in &rows {
        let text = |key: &str| row[key].as_str().unwrap_or_default().to_owned();
        let mut line = format!("  {:<16} {:<14}", text("server"), text("state"));
        if let Some(tools) = row["tools"].as_u64() {
            line.push_str(&format!(" {tools} tools"));
        }
        if let Some(pid) = row["pid"].as_u64() {
            line.push_str(&format!(", pid {pid}"));
        }
        if let Some(call) = row["last_call"].as_object() {
            line.push_str(&format!(
                ", last call {} {} ({})",
                call["tool"].as_str().unwrap_or_default(),
                ago(call["at_ms"].as_u64().unwrap_or_default()),
                call["outcome"].as_str().unwrap_or_default()
            ));
        }
        println!("{line}");
        if let Some(note) = row["note"].as_str() {
            println!("      {note}");
        }
        if row["state"] == crate::gateway::oauth::NEEDS_SIGN_IN {
            println!(
                "      sign in with `zenmode upstream login {}`",
                text("server")
            );
        }
        if row["state"] == crate::gateway::oauth::NEEDS_CREDENTIAL
            && let Some(error) = row["last_error"].as_str()
        {
            println!("      {error}");
        }
        if matches!(row["state"].as_str(), Some("failed" | "changed"))
            && let Some(error) = row["last_error"].as_str()
        {
            println!("      last error: {error}");
            for tail in row["stderr_tail"].as_array().into_iter().flatten() {
                println!("      | {}", tail.as_str().unwrap_or_default());
            }
            println!(
                "      (more with `zenmode upstream logs {}`)",
                text("server")
            );
        }
        let held: Vec<&str> = row["quarantined"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !held.is_empty() {
            println!(
                "      quarantined: {} (review with `zenmode upstream diff {}`)",
                held.join(", "),
                text("server")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
