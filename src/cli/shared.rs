//! The user's shared instance, as the commands see it: started on demand
//! by `connect` and `dashboard` (one per user, never two), and what
//! `serve --shared` adds to a Streamable HTTP server: the instance's files,
//! each profile's server, the dashboard and its actions.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use async_trait::async_trait;
use serde_json::{Value, json};

use crate::{
    engine::Engine,
    gateway::{Gateway, catalog_cache, pins, profiles},
    server::{
        ZenServer,
        activity_feed::ActivityFeed,
        dashboard::{Dashboard, DashboardActions},
        http::{HttpOptions, MakeProfileServer, ProfileRoutes, SharedServing},
        shared::{InstanceRecord, SharedDir, same_file},
    },
    surface::{self, StrategyKind, SurfaceOptions},
};

/// How long a `connect` waits for the instance it started (or another
/// `connect` is starting) to answer.
pub const START_WAIT: Duration = Duration::from_secs(60);
/// The idle time after which an instance with no client stops, by default.
pub const DEFAULT_IDLE_STOP_SECS: u64 = 600;

/// The running instance, started now when none runs. A second caller
/// while the first is starting it waits for that start (the start lock)
/// and then finds it running.
pub fn ensure_instance(
    upstreams: &Path,
    idle_stop_secs: Option<u64>,
) -> anyhow::Result<InstanceRecord> {
    let dir = SharedDir::of_user();
    if let Some(record) = dir.running() {
        warn_if_other_file(&record, upstreams);
        return Ok(record);
    }
    let lock = crate::platform::private_file::open_lock_file(&dir.start_lock())
        .with_context(|| format!("cannot open {}", dir.start_lock().display()))?;
    let asked = Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if asked.elapsed() < START_WAIT => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "another zenmode has been starting the shared instance for {}s; see {}",
                START_WAIT.as_secs(),
                dir.log_file().display()
            ),
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(error).context("cannot take the shared instance's start lock");
            }
        }
    }
    if let Some(record) = dir.running() {
        warn_if_other_file(&record, upstreams);
        return Ok(record);
    }
    start_instance(&dir, upstreams, idle_stop_secs)
}

fn warn_if_other_file(record: &InstanceRecord, upstreams: &Path) {
    if !same_file(&record.upstreams, upstreams) {
        crate::server::logging::print(&format!(
            "zenmode: the shared instance serves {}, not {}; stop it (`zenmode connect --stop`) to serve the other file",
            record.upstreams.display(),
            upstreams.display()
        ));
    }
}

/// Starts `zenmode serve --shared` in a session of its own (it outlives the
/// client that started it), its stderr to the instance's log, and waits
/// until it answers.
fn start_instance(
    dir: &SharedDir,
    upstreams: &Path,
    idle_stop_secs: Option<u64>,
) -> anyhow::Result<InstanceRecord> {
    let binary = std::env::current_exe().context("cannot tell where zenmode's binary is")?;
    let log = crate::platform::private_file::open_private_append(&dir.log_file())
        .with_context(|| format!("cannot open {}", dir.log_file().display()))?;
    let mut command = std::process::Command::new(binary);
    command
        .arg("serve")
        .arg("--shared")
        .arg("--upstreams")
        .arg(upstreams)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    if let Some(secs) = idle_stop_secs {
        command.arg("--idle-stop-secs").arg(secs.to_string());
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    let mut child = command
        .spawn()
        .context("cannot start the shared instance")?;
    let started = Instant::now();
    loop {
        if let Some(record) = dir.running()
            && record.pid == child.id()
        {
            tracing::info!(
                pid = record.pid,
                port = record.port,
                "shared instance started"
            );
            return Ok(record);
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!(
                "the shared instance exited at start ({status}); the end of {}:\n{}",
                dir.log_file().display(),
                dir.log_tail(10).join("\n")
            );
        }
        if started.elapsed() > START_WAIT {
            bail!(
                "the shared instance did not answer within {}s; see {}",
                START_WAIT.as_secs(),
                dir.log_file().display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What `serve --shared` holds for its whole life: the instance lock, so
/// that no second instance starts, and the token clients present.
pub struct Claim {
    pub dir: SharedDir,
    pub token: String,
    _lock: std::fs::File,
}

/// Takes the instance lock, or says which instance holds it.
pub fn claim_instance() -> anyhow::Result<Claim> {
    let dir = SharedDir::of_user();
    crate::platform::private_file::create_private_dir(&dir.0)
        .with_context(|| format!("cannot create {}", dir.0.display()))?;
    let Some(lock) = dir.take_instance_lock()? else {
        match dir.live_record() {
            Some(record) => bail!(
                "a shared instance already runs (pid {}, port {}); clients reach it with `zenmode connect`",
                record.pid,
                record.port
            ),
            None => bail!("another shared instance is starting"),
        }
    };
    let token = dir
        .token()
        .with_context(|| format!("cannot make the token in {}", dir.0.display()))?;
    crate::platform::redact::register(&crate::platform::redact::Redactor::new(vec![token.clone()]));
    Ok(Claim {
        dir,
        token,
        _lock: lock,
    })
}

/// An HTTP client for the instance on loopback: a proxy named by the
/// environment must not see its requests.
pub fn loopback_client(timeout: Option<Duration>) -> anyhow::Result<reqwest::Client> {
    crate::gateway::tls::install_tls_provider();
    let mut builder = reqwest::Client::builder().no_proxy();
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    builder.build().context("cannot make the HTTP client")
}

/// A request to `record`'s dashboard API (`path` under `/dashboard/api/`)
/// with the instance's token: its JSON answer, or why there is none.
pub fn instance_api(
    record: &InstanceRecord,
    method: reqwest::Method,
    path: &str,
) -> Result<Value, String> {
    let token = SharedDir::of_user()
        .token()
        .map_err(|error| format!("cannot read the shared instance's token: {error}"))?;
    let client =
        loopback_client(Some(Duration::from_secs(10))).map_err(|error| format!("{error:#}"))?;
    let runtime = crate::cli::runtime::runtime(false).map_err(|error| error.to_string())?;
    runtime.block_on(async {
        let response = client
            .request(
                method,
                format!(
                    "http://127.0.0.1:{}{}/api/{path}",
                    record.port,
                    crate::server::dashboard::DASHBOARD_PATH
                ),
            )
            .bearer_auth(token)
            .send()
            .await
            .map_err(|error| format!("the shared instance did not answer: {error}"))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|error| format!("the shared instance's answer is not JSON: {error}"))?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(body["message"].as_str().unwrap_or("refused").to_owned())
        }
    })
}

/// [`instance_api`] of the running instance, when one serves `upstreams`;
/// `None` when none runs (or it serves another upstreams file).
pub fn ask_instance(
    upstreams: &Path,
    method: reqwest::Method,
    path: &str,
) -> Option<(InstanceRecord, Result<Value, String>)> {
    let record = SharedDir::of_user().running()?;
    if !same_file(&record.upstreams, upstreams) {
        return None;
    }
    let answer = instance_api(&record, method, path);
    Some((record, answer))
}

/// How each profile's server is made: the instance's server options over
/// an engine restricted to the profile's servers.
pub struct ProfileServerMaker {
    pub engine: Arc<Engine>,
    pub strategy: StrategyKind,
    pub surface: SurfaceOptions,
    pub log_arguments: bool,
    pub script_writes: crate::surface::zen::ScriptWrites,
    pub script_max: Duration,
    pub feed: Arc<ActivityFeed>,
}

impl ProfileServerMaker {
    fn make(&self, name: &str, profile: &profiles::Profile) -> Result<ZenServer, String> {
        let strategy = match &profile.strategy {
            None => self.strategy,
            Some(named) => <StrategyKind as clap::ValueEnum>::from_str(named, true)
                .map_err(|_| format!("profile {name:?} names an unknown strategy {named:?}"))?,
        };
        let engine = Arc::new(self.engine.for_servers(profile.servers.clone()));
        tokio::spawn(engine.clone().follow_gateway());
        let surface = surface::build(strategy, &engine, &self.surface)?;
        Ok(ZenServer::new(engine, surface)
            .map_err(|error| format!("cannot build profile {name:?}'s tool list: {error}"))?
            .with_log_arguments(self.log_arguments)
            .with_scripts(self.script_writes, self.script_max)
            .with_feed(self.feed.clone(), Some(name)))
    }
}

/// Everything `serve --shared` serves besides `/mcp`.
pub fn serving(
    maker: ProfileServerMaker,
    upstreams: PathBuf,
    port: u16,
    options: &HttpOptions,
    idle_stop: Duration,
    shutdown: tokio_util::sync::CancellationToken,
) -> SharedServing {
    let profiles_file = profiles::profiles_file(&upstreams);
    let actions = Arc::new(Actions {
        gateway: maker.engine.services().gateway.clone(),
        upstreams,
    });
    let dashboard = Arc::new(Dashboard::new(
        maker.engine.clone(),
        maker.feed.clone(),
        actions,
        profiles_file.clone(),
        port,
        shutdown.clone(),
    ));
    let maker = Arc::new(maker);
    let make: MakeProfileServer = Arc::new(move |name, profile| maker.make(name, profile));
    SharedServing {
        profiles: ProfileRoutes::new(profiles_file, make, options.clone(), shutdown),
        dashboard,
        idle_stop,
    }
}

/// The record `serve --shared` writes once it listens.
pub fn record(port: u16, upstreams: &Path) -> InstanceRecord {
    InstanceRecord {
        pid: std::process::id(),
        port,
        upstreams: std::fs::canonicalize(upstreams).unwrap_or_else(|_| upstreams.to_path_buf()),
        version: crate::cli::args::VERSION.to_owned(),
        started_ms: crate::gateway::status_file::now_ms(),
    }
}

/// The dashboard's buttons, through the same edits the commands make.
struct Actions {
    gateway: Arc<Gateway>,
    upstreams: PathBuf,
}

#[async_trait]
impl DashboardActions for Actions {
    async fn set_enabled(&self, server: &str, enabled: bool) -> Result<String, String> {
        crate::cli::upstream::write_enabled(&self.upstreams, server, enabled)
            .map_err(|error| format!("{error:#}"))?;
        self.gateway.reload(&self.upstreams);
        Ok(format!(
            "{server} {}",
            if enabled { "enabled" } else { "disabled" }
        ))
    }

    async fn restart(&self, server: &str) -> Result<String, String> {
        self.gateway.restart_server(server, &self.upstreams).await?;
        Ok(format!(
            "{server} restarted: it starts again on its next call"
        ))
    }

    async fn approve(&self, server: &str, tool: &str) -> Result<String, String> {
        let config = self
            .gateway
            .config_of(server)
            .ok_or_else(|| format!("no enabled server {server:?}"))?;
        let dirs = self.gateway.dirs().clone();
        let current = catalog_cache::load_catalog(&dirs, &config).ok_or_else(|| {
            format!("{server}'s tools are not known yet; try again once it has answered")
        })?;
        let definition: &Value = current
            .iter()
            .find(|listed| pins::tool_name(listed) == Some(tool))
            .ok_or_else(|| format!("{server} lists no tool {tool:?} now"))?;
        pins::approve_tool(&dirs, server, definition)
            .map_err(|error| format!("cannot save the approval: {error}"))?;
        self.gateway.restart_server(server, &self.upstreams).await?;
        Ok(format!("{tool} of {server} approved"))
    }

    async fn reject(&self, server: &str, tool: &str) -> Result<String, String> {
        crate::cli::upstream::update_upstreams_file(&self.upstreams, |document| {
            let servers = crate::cli::upstream::servers_mut(document, &self.upstreams)?;
            let Some(Value::Object(entry)) = servers.get_mut(server) else {
                bail!("no server named {server:?}");
            };
            let denied = entry.entry("deny_tools").or_insert_with(|| json!([]));
            let Some(list) = denied.as_array_mut() else {
                bail!("{server}'s deny_tools is not a list");
            };
            if !list.iter().any(|name| name == tool) {
                list.push(json!(tool));
            }
            Ok(())
        })
        .map_err(|error| format!("{error:#}"))?;
        self.gateway.reload(&self.upstreams);
        Ok(format!(
            "{tool} of {server} rejected: added to its deny_tools"
        ))
    }
}
