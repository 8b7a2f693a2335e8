//! `clink`: hands a prompt to an external AI command-line tool (claude,
//! codex, gemini, or any configured command) and returns what it printed.
//!
//! The prompt goes to the CLI on standard input, so its length and content
//! never meet a shell or an argument list. The set of CLIs, their arguments
//! and the timeout are configurable (`ZEN_CLINK_CONFIG`, `ZEN_CLINK_TIMEOUT_SECS`).

use std::{process::Stdio, time::Instant};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::{io::AsyncWriteExt, process::Command};

use super::{
    ExecContext, ExecError, Executor, RequestShape,
    support::{check_paths, parse_request, record_turn},
};
use crate::conversation::Turn;

/// Output beyond this is cut (the end is kept: CLIs put their answer last).
const MAX_OUTPUT_CHARS: usize = 40_000;

/// What each role asks of the CLI, prepended to the prompt.
fn role_brief(role: &str) -> Option<&'static str> {
    match role {
        "default" => Some(""),
        "planner" => Some(
            "Act as a planner: produce an ordered, step-by-step plan with risks and checkpoints; do not write the code yet.\n\n",
        ),
        "codereviewer" => Some(
            "Act as a code reviewer: list concrete problems by severity with file and line references, then suggest fixes.\n\n",
        ),
        _ => None,
    }
}

pub const REQUEST: RequestShape = RequestShape::of::<ClinkRequest>();

#[derive(Deserialize)]
struct ClinkRequest {
    prompt: String,
    #[serde(default)]
    cli_name: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    absolute_file_paths: Vec<String>,
    #[serde(default)]
    continuation_id: Option<String>,
}

fn keep_tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - max_chars).collect();
    format!("[{} earlier characters cut]\n{tail}", count - max_chars)
}

pub struct Clink;

#[async_trait]
impl Executor for Clink {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: ClinkRequest = parse_request(request)?;
        let config = &context.services.clink;
        if let Some(problem) = &config.problem {
            return Err(ExecError::new("clink_config", problem.clone()));
        }
        let available: Vec<String> = config.clis.keys().cloned().collect();
        let name = request
            .cli_name
            .clone()
            .or_else(|| config.default_cli.clone())
            .ok_or_else(|| {
                ExecError::new(
                    "unknown_cli",
                    "no cli_name given and no default CLI is configured",
                )
                .with("available", available.clone())
            })?;
        let spec = config.clis.get(&name).ok_or_else(|| {
            ExecError::new(
                "unknown_cli",
                format!("no CLI named {name:?} is configured"),
            )
            .with("available", available.clone())
        })?;
        let role = request.role.clone().unwrap_or_else(|| "default".to_owned());
        let brief = role_brief(&role).ok_or_else(|| {
            ExecError::new(
                "unknown_role",
                format!("role {role:?} is not one of default, planner, codereviewer"),
            )
        })?;
        check_paths(context, &request.absolute_file_paths)?;

        let mut prompt = format!("{brief}{}", request.prompt);
        if !request.absolute_file_paths.is_empty() {
            prompt.push_str(&format!(
                "\n\nFiles to consider:\n- {}",
                request.absolute_file_paths.join("\n- ")
            ));
        }
        let turn = Turn::user("clink", request.prompt.clone())
            .with_files(request.absolute_file_paths.clone());
        let thread_id = record_turn(context, request.continuation_id.as_deref(), turn).await?;

        let started = Instant::now();
        let mut child = Command::new(&spec.command)
            .args(&spec.args)
            .current_dir(
                context
                    .services
                    .files
                    .roots()
                    .first()
                    .cloned()
                    .unwrap_or_else(std::env::temp_dir),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ExecError::new(
                    "cli_not_found",
                    format!("cannot start {} for CLI {name:?}: {e}", spec.command),
                )
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A CLI that exits without reading its input is not an error here.
            let _ = stdin.write_all(prompt.as_bytes()).await;
        }
        let timeout = config.timeout();
        let call = context.call;
        let waited = tokio::select! {
            output = tokio::time::timeout(timeout, child.wait_with_output()) => Some(output),
            _ = call.cancel.cancelled() => None,
        };
        let output = match waited {
            None => {
                return Err(ExecError::new(
                    "cancelled",
                    "the client cancelled the request; the CLI was stopped",
                ));
            }
            Some(Err(_)) => {
                return Err(ExecError::new(
                    "cli_timeout",
                    format!(
                        "CLI {name:?} did not finish within {} seconds and was stopped",
                        timeout.as_secs_f64()
                    ),
                ));
            }
            Some(Ok(Err(e))) => {
                return Err(ExecError::new(
                    "cli_failed",
                    format!("CLI {name:?} could not be run: {e}"),
                ));
            }
            Some(Ok(Ok(output))) => output,
        };
        let stdout = keep_tail(&String::from_utf8_lossy(&output.stdout), MAX_OUTPUT_CHARS);
        let stderr = keep_tail(&String::from_utf8_lossy(&output.stderr), 4_000);
        let duration_ms = started.elapsed().as_millis() as u64;
        if !output.status.success() {
            return Err(ExecError::new(
                "cli_failed",
                format!("CLI {name:?} exited with {}", output.status),
            )
            .with("exit_code", output.status.code())
            .with("stderr", stderr)
            .with("output", stdout));
        }
        let turn = Turn::assistant("clink", stdout.clone()).with_model(format!("cli:{name}"));
        if let Err(error) = context.services.memory.append(&thread_id, turn).await {
            tracing::warn!(%error, "could not record the CLI's answer");
        }
        Ok(json!({
            "status": "success",
            "cli": name,
            "role": role,
            "output": stdout,
            "stderr": stderr,
            "exit_code": output.status.code(),
            "duration_ms": duration_ms,
            "continuation_id": thread_id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_the_end() {
        let text = "a".repeat(10) + "END";
        let cut = keep_tail(&text, 5);
        assert!(
            cut.ends_with("aaEND") && cut.starts_with("[8 earlier"),
            "{cut}"
        );
        assert_eq!(keep_tail("short", 10), "short");
    }
}
