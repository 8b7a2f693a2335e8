//! `zenmode tokens`: what each tool-list strategy costs in tokens, or the
//! token counts of standard input.

#[cfg(feature = "tokens")]
pub mod metrics;

use std::process::ExitCode;

#[cfg(feature = "tokens")]
use anyhow::Context;

use crate::cli::args::CatalogArgs;
#[cfg(feature = "tokens")]
use crate::cli::runtime::runtime;

/// What `zenmode tokens` counts.
pub enum TokensOf {
    /// Every strategy's tool list for the catalog (the tables).
    Catalog,
    /// Standard input, as one text.
    Stdin,
    /// Each line of standard input, a JSON string, on its own.
    Lines,
}

#[cfg(feature = "tokens")]
pub fn print_tokens(
    catalog: &CatalogArgs,
    json: bool,
    source: TokensOf,
) -> anyhow::Result<ExitCode> {
    use metrics as tokens;
    let tokenizers = tokens::Tokenizers::load()?;
    let counts = |text: &str| serde_json::json!({"o200k": tokenizers.o200k(text), "cl100k": tokenizers.cl100k(text), "bytes": text.len()});
    match source {
        TokensOf::Catalog => {}
        TokensOf::Stdin => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .context("standard input is not UTF-8 text")?;
            println!("{}", counts(&text));
            return Ok(ExitCode::SUCCESS);
        }
        TokensOf::Lines => {
            // Loading the two tokenizers costs a tenth of a second; a
            // benchmark that counts hundreds of texts pays it once here.
            use std::io::{BufRead, Write};
            let mut out = std::io::stdout().lock();
            for (number, line) in std::io::stdin().lock().lines().enumerate() {
                let line = line.context("standard input is not UTF-8 text")?;
                let text: String = serde_json::from_str(&line).with_context(|| {
                    format!("line {} of standard input is not a JSON string", number + 1)
                })?;
                writeln!(out, "{}", counts(&text))?;
                out.flush()?;
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    let runtime = runtime(false)?;
    let (catalog, gateway) = catalog.open(&runtime)?;
    runtime.block_on(gateway.shutdown());
    let servers = tokens::per_server(&catalog, &tokenizers);
    let report = tokens::measure(catalog, &tokenizers)?;
    if json {
        let mut value = tokens::to_json(&report);
        if !servers.is_empty() {
            value["upstreams"] = servers
                .iter()
                .map(|(server, tools, o200k)| serde_json::json!({"server": server, "tools": tools, "o200k": o200k}))
                .collect();
        }
        println!("{value}");
    } else {
        print!("{}", tokens::to_table(&report));
        if !servers.is_empty() {
            println!("\nyour upstream servers, each listed directly (o200k):");
            let mut total = 0;
            for (server, tools, o200k) in &servers {
                total += o200k;
                println!("  {server:<20} {tools:>4} tools {o200k:>8}");
            }
            println!(
                "  {:<20} {:>4}       {total:>8}  (zenmode's two-tool list above stays the same)",
                "all upstreams", ""
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A server-only build has no tokenizers to count with.
#[cfg(not(feature = "tokens"))]
pub fn print_tokens(_: &CatalogArgs, _: bool, _: TokensOf) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this build of zenmode has no tokenizers; `zenmode tokens` needs the default \"tokens\" feature (cargo install --locked --path . without --no-default-features)"
    )
}
