//! The async runtime and the engine a subcommand runs on: offline (no
//! providers) for the measuring commands, with the real services for
//! `serve` and `exec`.

use std::process::ExitCode;

use anyhow::Context;

use crate::{
    cli::args::{AccessArgs, CatalogArgs},
    conversation::{HandleSettings, MemoryConfig, StoreUrl, open_store},
    engine::Engine,
    services::Services,
};

pub fn exit_for(is_error: bool) -> ExitCode {
    if is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub fn offline_engine(
    catalog: &CatalogArgs,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Engine> {
    let (catalog, gateway) = catalog.open(runtime)?;
    let services = Services {
        gateway,
        ..Services::offline()
    };
    Engine::with_services(catalog, services).map_err(anyhow::Error::msg)
}

/// An engine with the real services: providers, allowed roots and memory
/// from the flags and environment; results kept as handles as `handles`
/// says (in the conversation store).
pub fn serving_engine(
    catalog: &CatalogArgs,
    access: &AccessArgs,
    runtime: &tokio::runtime::Runtime,
    settle: bool,
    handles: HandleSettings,
) -> anyhow::Result<Engine> {
    let mut services =
        Services::from_env(&access.allow_roots).context("cannot set up file access")?;
    for problem in services.providers.problems() {
        tracing::warn!("provider configuration: {problem}");
    }
    let store = StoreUrl::parse(access.store.as_deref()).map_err(anyhow::Error::msg)?;
    let limits = MemoryConfig::from_env(&|name: &str| std::env::var(name).ok());
    let opened = runtime
        .block_on(open_store(&store, limits))
        .map_err(anyhow::Error::msg)
        .context("cannot open the conversation store (--store or ZEN_STORE)")?;
    services.use_store(opened, handles);
    tracing::debug!(store = %store.display(), "conversation store");
    let (catalog, gateway) = catalog.open_with(runtime, settle)?;
    services.gateway = gateway;
    Engine::with_services(catalog, services).map_err(anyhow::Error::msg)
}

/// A stdio session (and a one-shot `exec`) needs one thread, and a
/// single-threaded runtime starts faster: start-up happens on every client
/// launch. The TCP listener serves many sessions, so it gets every core.
pub fn runtime(multi_threaded: bool) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = if multi_threaded {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
