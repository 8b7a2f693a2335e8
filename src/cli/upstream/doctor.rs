//! `zenmode doctor`: the upstreams file, each server started (side by
//! side, each within the wait), file permissions and the clients'
//! configurations checked; says what to fix.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::{Duration, Instant},
};

use crate::platform::client_files::CLIENT_FILES;
use serde_json::Value;

use super::file::fetch;
use crate::gateway::{
    Verdict,
    config::{self, UpstreamConfig},
    disk::GatewayDirs,
    pins,
};

/// How long a server that listed its tools (or ran out of time) may take
/// to stop, on top of the wait.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The findings of `zenmode doctor`, printed one per line as they come.
#[derive(Default)]
pub struct Findings {
    problems: usize,
}

impl Findings {
    fn ok(&mut self, text: impl std::fmt::Display) {
        println!("ok    {text}");
    }

    fn warn(&mut self, text: impl std::fmt::Display) {
        println!("warn  {text}");
    }

    fn problem(&mut self, text: impl std::fmt::Display, fix: impl std::fmt::Display) {
        self.problems += 1;
        println!("FAIL  {text}; fix: {fix}");
    }
}

/// `zenmode doctor`: checks the upstreams file, each server, the file's
/// permissions and the client configurations that run zenmode; exits
/// non-zero when something needs fixing.
pub fn doctor(file: Option<PathBuf>, wait_secs: f64) -> anyhow::Result<ExitCode> {
    let file = file.unwrap_or_else(crate::platform::dirs::upstreams_file);
    let dirs = GatewayDirs::from_env();
    let wait = crate::cli::args::upstream_wait(wait_secs);
    let mut findings = Findings::default();
    check_model(&mut findings);
    check_shared_instance(&file, &mut findings);
    check_upstreams(&file, &dirs, wait, &mut findings)?;
    check_clients(&mut findings);
    if findings.problems == 0 {
        println!("no problems found");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} problem(s) found", findings.problems);
        Ok(ExitCode::FAILURE)
    }
}

/// The shared instance (`zenmode connect`), when one runs or was left.
fn check_shared_instance(file: &Path, findings: &mut Findings) {
    let dir = crate::server::shared::SharedDir::of_user();
    let Some(record) = dir.live_record() else {
        return;
    };
    if dir.running().is_none() {
        findings.warn(format!(
            "a shared instance (pid {}) runs but does not answer on port {}; `zenmode connect --stop` ends it",
            record.pid, record.port
        ));
        return;
    }
    if crate::server::shared::same_file(&record.upstreams, file) {
        findings.ok(format!(
            "a shared instance serves this file to its clients (pid {}, port {})",
            record.pid, record.port
        ));
    } else {
        findings.warn(format!(
            "the shared instance (pid {}) serves {}, not {}: its clients see that file's servers",
            record.pid,
            record.upstreams.display(),
            file.display()
        ));
    }
}

/// The embedding model select would use. Missing, it is a warning: zenmode
/// works without it, ranking other servers' tools less well.
fn check_model(findings: &mut Findings) {
    match crate::cli::model::describe(None) {
        (line, true) => findings.ok(line),
        (line, false) => findings.warn(line),
    }
}

pub fn check_upstreams(
    file: &Path,
    dirs: &GatewayDirs,
    wait: Duration,
    findings: &mut Findings,
) -> anyhow::Result<()> {
    if !file.exists() {
        findings.ok(format!(
            "no upstreams file at {}: zenmode serves its own modes only",
            file.display()
        ));
        return Ok(());
    }
    #[cfg(unix)]
    if let Ok(metadata) = std::fs::metadata(file) {
        use std::os::unix::fs::PermissionsExt;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            findings.problem(
                format!(
                    "{} is readable by other users (mode {mode:04o}) and may hold tokens",
                    file.display()
                ),
                format!("chmod 600 '{}'", file.display()),
            );
        } else {
            findings.ok(format!("{} has mode {mode:04o}", file.display()));
        }
    }
    let loaded = match config::load(file) {
        Ok(loaded) => loaded,
        Err(problem) => {
            let (problem, fix) = super::file::does_not_load(file, &problem);
            findings.problem(problem, fix);
            return Ok(());
        }
    };
    findings.ok(format!(
        "{} loads: {} server(s)",
        file.display(),
        loaded.servers.len()
    ));
    for warning in &loaded.warnings {
        findings.warn(warning);
    }
    // Side by side, each bounded: one hanging server costs `wait` once,
    // not once per server after it.
    let runtime = crate::cli::runtime::runtime(false)?;
    let checks = loaded
        .servers
        .iter()
        .map(|config| check_server(config, dirs, wait));
    let outcomes = runtime.block_on(futures_util::future::join_all(checks));
    for (config, outcome) in loaded.servers.iter().zip(outcomes) {
        let name = &config.name;
        match outcome {
            Checked::Disabled => findings.ok(format!("{name}: disabled, not checked")),
            Checked::CannotStart(why) => findings.problem(
                format!("{name}: cannot start: {why}"),
                format!(
                    "correct its entry ({}) or its environment, or turn it off with `zenmode upstream disable {name}`",
                    config.describe()
                ),
            ),
            Checked::Listed(tools, took) => {
                findings.ok(format!(
                    "{name}: started and listed {} tools in {:.1}s",
                    tools.len(),
                    took.as_secs_f64()
                ));
                let pins = pins::load_pins(dirs, name);
                let held = tools
                    .iter()
                    .filter(|tool| {
                        pins.as_ref()
                            .is_some_and(|pins| pins.verdict(tool) != Verdict::Approved)
                    })
                    .count();
                if held > 0 {
                    findings.warn(format!(
                        "{name}: {held} tool(s) quarantined; review with `zenmode upstream diff {name}`, then `zenmode upstream approve {name}`"
                    ));
                }
            }
            Checked::Failed(problem) => findings.problem(
                format!("{name}: {problem}"),
                format!(
                    "correct its entry ({}), or turn it off with `zenmode upstream disable {name}`",
                    config.describe()
                ),
            ),
        }
    }
    Ok(())
}

/// What checking one server found.
enum Checked {
    Disabled,
    CannotStart(String),
    Listed(Vec<Value>, Duration),
    Failed(String),
}

/// Starts one server and lists its tools, within `wait` (and a little more
/// for stopping it); what cannot start is reported without trying.
async fn check_server(config: &UpstreamConfig, dirs: &GatewayDirs, wait: Duration) -> Checked {
    if !config.enabled {
        return Checked::Disabled;
    }
    if let Some(why) = config.cannot_start() {
        return Checked::CannotStart(why);
    }
    let started = Instant::now();
    match tokio::time::timeout(wait + STOP_GRACE, fetch(config, dirs, wait)).await {
        Ok(Ok(tools)) => Checked::Listed(tools, started.elapsed()),
        Ok(Err(problem)) => Checked::Failed(problem),
        Err(_) => Checked::Failed(format!(
            "did not list its tools within {}s",
            wait.as_secs_f64()
        )),
    }
}

/// Each client file (`platform::client_files`) whose entries run zenmode: is the
/// command there to run?
pub fn check_clients(findings: &mut Findings) {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut found = 0;
    for file in CLIENT_FILES {
        let Some(path) = file.path(&cwd) else {
            continue;
        };
        let client = file.client.label();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let document: Value = match serde_json::from_str(&text) {
            Ok(document) => document,
            Err(error) => {
                findings.problem(
                    format!("{client}: {} is not valid JSON ({error})", path.display()),
                    "correct the file; the client cannot read it either",
                );
                continue;
            }
        };
        let mut entries = Vec::new();
        zenmode_entries(&document, &mut entries);
        for (name, command) in entries {
            found += 1;
            if command_exists(&command) {
                findings.ok(format!(
                    "{client}: {} runs zenmode as {name:?} ({command})",
                    path.display()
                ));
            } else {
                findings.problem(
                    format!(
                        "{client}: {} runs zenmode as {name:?} with {command:?}, which is not found",
                        path.display()
                    ),
                    "give the full path of the zenmode binary as its command",
                );
            }
        }
    }
    if found == 0 {
        findings.warn(
            "no client configuration under your home runs zenmode (see README: Connect a client)",
        );
    }
}

/// `(name, command)` of every server entry in `value` (at any depth, under
/// `mcpServers` or VS Code's `servers`) whose command or arguments name zenmode.
pub fn zenmode_entries(value: &Value, out: &mut Vec<(String, String)>) {
    let Value::Object(map) = value else {
        return;
    };
    for (key, child) in map {
        if (key == "mcpServers" || key == "servers")
            && let Value::Object(servers) = child
        {
            for (name, entry) in servers {
                let command = entry
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = entry.get("args").map(Value::to_string).unwrap_or_default();
                if command.contains("zenmode") || args.contains("zenmode") {
                    out.push((name.clone(), command.to_owned()));
                }
            }
        } else {
            zenmode_entries(child, out);
        }
    }
}

/// Whether `command` names a file, or a program on PATH.
pub fn command_exists(command: &str) -> bool {
    let path = Path::new(command);
    if path.components().count() > 1 {
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(command).is_file()))
}
