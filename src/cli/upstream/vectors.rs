//! The embedding model's vectors for the tools `upstream add` and
//! `upstream import` approved, computed before the command ends.
//!
//! A server ranks with the model once its index holds a vector for every
//! tool, and until then the table answers alone, which for a thousand new
//! tools took most of twenty seconds; the two rankings disagree on about a
//! request in three, so a user saw answers change under them. Encoding
//! the new tools here fills the vector cache that `serve` reads
//! (`select::signals::transformer`), so a server started afterwards has its
//! model index in well under a second.

use std::path::PathBuf;

use serde_json::Value;

use crate::{
    catalog::{Catalog, gateway_modes::upstream_mode, tool_examples::ExampleSource},
    gateway::disk::GatewayDirs,
    platform::settings,
    select::{Index, embedding},
};

/// One approved server: its name, its modes' prefix, and its tools.
pub struct Approved<'a> {
    pub name: &'a str,
    pub prefix: &'a str,
    pub tools: &'a [Value],
}

/// Which model a server would use: `ZEN_EMBEDDING_MODEL` (`none`: no
/// model), else the one `scripts/install.sh` puts in place, if any.
fn model_dir() -> Option<PathBuf> {
    match std::env::var_os(settings::EMBEDDING_MODEL) {
        Some(dir) if dir == "none" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => embedding::default_model_dir(),
    }
}

/// Puts the approved tools (and zenmode's own modes, which a server
/// ranks beside them) through the model, keeping their vectors in the
/// cache. Without a model, or if it cannot be loaded, nothing is done
/// (a warning says why): the server then encodes the tools itself, as
/// before. Returns how many tools were encoded.
pub fn compute(dirs: &GatewayDirs, servers: &[Approved<'_>]) -> usize {
    let modes: Vec<_> = servers
        .iter()
        .flat_map(|server| {
            let names: Vec<&str> = server
                .tools
                .iter()
                .filter_map(|tool| tool["name"].as_str())
                .collect();
            let examples = ExampleSource::for_server(&[server.name], &names);
            server.tools.iter().filter_map(move |tool| {
                let own = examples.examples(tool["name"].as_str().unwrap_or_default());
                upstream_mode(server.name, server.prefix, tool, own).ok()
            })
        })
        .collect();
    if modes.is_empty() {
        return 0;
    }
    let Some(dir) = model_dir() else {
        return 0;
    };
    if let Err(error) = embedding::use_model(&dir, Some(&dirs.cache)) {
        eprintln!(
            "warning: the embedding model in {} cannot be used ({error}); a server will encode the new tools when it starts",
            dir.display()
        );
        return 0;
    }
    let count = modes.len();
    let catalog = match Catalog::builtin() {
        Ok(builtin) => builtin.with_modes(modes),
        Err(_) => Catalog::from_modes(modes),
    };
    let started = std::time::Instant::now();
    // Built here and dropped: building it is what encodes every text the
    // server's index will need (tools, built-in modes, the no-fit probes)
    // and appends the new vectors to the cache file.
    drop(Index::build(&catalog));
    println!(
        "embedding model: vectors of {count} tools ready for the server ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    count
}
