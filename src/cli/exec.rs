//! `zenmode exec`: one mode run as `zen_execute` would run it.

use std::{process::ExitCode, sync::Arc};

use anyhow::Context;
use serde_json::Value;

use crate::{
    call::CallContext,
    cli::args::{AccessArgs, CatalogArgs},
    cli::runtime::{exit_for, runtime, serving_engine},
    conversation::HandleSettings,
    surface::{
        self, StrategyKind, SurfaceOptions,
        zen::{self, ScriptHost, ScriptWrites},
    },
};

/// Runs `mode` on `request` (a JSON object) with the real services and
/// prints the result; continues `continuation_id`'s thread when given.
pub fn run(
    catalog: &CatalogArgs,
    access: &AccessArgs,
    mode: &str,
    request: &str,
    continuation_id: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let request: Value = serde_json::from_str(request)
        .context("--request must be a JSON object, e.g. --request '{\"prompt\":\"...\"}'")?;
    let runtime = runtime(false)?;
    let engine = Arc::new(serving_engine(
        catalog,
        access,
        &runtime,
        true,
        // `exec` prints the whole result: nothing would read a handle.
        HandleSettings {
            enabled: false,
            ..HandleSettings::default()
        },
    )?);
    // `exec` answers as the default strategy would (version reports it).
    surface::build(StrategyKind::Zen, &engine, &SurfaceOptions::default())
        .map_err(anyhow::Error::msg)?;
    // A script run here may read as one in a server may (writes: the
    // upstreams file's per-server setting only).
    let call = CallContext {
        nested: Some(Arc::new(ScriptHost::new(
            engine.clone(),
            ScriptWrites::Deny,
        ))),
        ..CallContext::default()
    };
    let outcome = runtime
        .block_on(engine.execute(mode, request, continuation_id, &call))
        .unwrap_or_else(zen::unknown_mode);
    runtime.block_on(engine.services().gateway.shutdown());
    println!("{}", serde_json::to_string_pretty(&outcome.body)?);
    Ok(exit_for(outcome.is_error))
}
