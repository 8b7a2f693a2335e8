//! `zenmode select`: what `zen_select_mode` would answer, for a person.

use std::process::ExitCode;

use serde_json::Value;

use crate::{
    cli::args::CatalogArgs,
    cli::runtime::{exit_for, offline_engine, runtime},
    surface::zen::select_mode,
};

/// Ranks `task` as `zen_select_mode` would and prints the reply: as JSON,
/// or rendered for a person.
pub fn run(
    catalog: &CatalogArgs,
    task: String,
    top: Option<usize>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = runtime(false)?;
    let engine = offline_engine(catalog, &runtime)?;
    let args = select_mode::SelectArgs {
        task_description: Some(task),
        mode: None,
        top_k: top,
    };
    let outcome = select_mode::run(&engine, &args);
    runtime.block_on(engine.services().gateway.shutdown());
    if json {
        println!("{}", outcome.body);
    } else {
        print!("{}", render_selection(&outcome.body));
    }
    Ok(exit_for(outcome.is_error))
}

/// A select reply for people: the pick, why, its fields and the call to make.
pub fn render_selection(reply: &Value) -> String {
    if reply.get("error").is_some() {
        return format!("{}\n", reply["message"].as_str().unwrap_or("error"));
    }
    let mut out = format!(
        "{}  (confidence {}{})\n  {}\n  {}\n",
        reply["mode"].as_str().unwrap_or_default(),
        reply["confidence"],
        if reply.get("low_confidence").is_some() {
            ", low"
        } else {
            ""
        },
        reply["summary"].as_str().unwrap_or_default(),
        reply["reason"].as_str().unwrap_or_default(),
    );
    for group in ["required", "optional"] {
        if let Some(fields) = reply[group].as_object() {
            out.push_str(&format!("  {group}:\n"));
            for (name, summary) in fields {
                let summary = summary.as_str().unwrap_or_default();
                out.push_str(&format!("    {name:<24} {summary}\n"));
            }
        }
    }
    out.push_str(&format!("  next: {}\n", reply["next_call"]));
    for alternative in reply["alternatives"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "alt: {}  (confidence {})  {}\n",
            alternative["mode"].as_str().unwrap_or_default(),
            alternative["confidence"],
            alternative["summary"].as_str().unwrap_or_default()
        ));
    }
    out
}
