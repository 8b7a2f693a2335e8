//! `zenmode dashboard`: starts the shared instance if needed, asks it for a
//! one-time sign-in link (with the instance's token, which only the user
//! can read), prints the link and opens it in a browser.

use std::{path::Path, process::ExitCode};

use anyhow::Context;

pub fn run(upstreams: &Path, no_open: bool) -> anyhow::Result<ExitCode> {
    let record = crate::cli::shared::ensure_instance(upstreams, None)?;
    let answer = crate::cli::shared::instance_api(&record, reqwest::Method::POST, "sign-in-code")
        .map_err(|problem| anyhow::anyhow!("no sign-in link: {problem}"))?;
    let url = answer["url"]
        .as_str()
        .context("the shared instance's answer has no url")?;
    println!("{url}");
    println!("(the link signs this browser in once, within two minutes)");
    if !no_open && !crate::cli::upstream::login::open_browser(url) {
        println!("open it in a browser on this machine");
    }
    Ok(ExitCode::SUCCESS)
}
