//! `zenmode dashboard`: starts the shared instance if needed, asks it for a
//! one-time sign-in link (with the instance's token, which only the user
//! can read), prints the link and opens it in a browser.

use std::{path::Path, process::ExitCode, time::Duration};

use anyhow::{Context, bail};

use crate::server::shared::SharedDir;

pub fn run(upstreams: &Path, no_open: bool) -> anyhow::Result<ExitCode> {
    let record = crate::cli::shared::ensure_instance(upstreams, None)?;
    let token = SharedDir::of_user()
        .token()
        .context("cannot read the shared instance's token")?;
    let runtime = crate::cli::runtime::runtime(false)?;
    let url = runtime.block_on(async {
        crate::gateway::tls::install_tls_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .context("cannot make the HTTP client")?;
        let response = client
            .post(format!(
                "http://127.0.0.1:{}{}/api/sign-in-code",
                record.port,
                crate::server::dashboard::DASHBOARD_PATH
            ))
            .bearer_auth(&token)
            .send()
            .await
            .context("the shared instance did not answer")?;
        if !response.status().is_success() {
            bail!(
                "the shared instance refused a sign-in link: {}",
                response.status()
            );
        }
        let answer: serde_json::Value = response
            .json()
            .await
            .context("the shared instance's answer is not JSON")?;
        answer["url"]
            .as_str()
            .map(str::to_owned)
            .context("the shared instance's answer has no url")
    })?;
    println!("{url}");
    println!("(the link signs this browser in once, within two minutes)");
    if !no_open && !crate::cli::upstream::login::open_browser(&url) {
        println!("open it in a browser on this machine");
    }
    Ok(ExitCode::SUCCESS)
}
