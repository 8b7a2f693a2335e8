//! The engine's own process: each script runs in zenmode started again as
//! `zenmode __script-engine`, which holds one QuickJS runtime
//! ([`super::sandbox`]) and nothing else.
//!
//! QuickJS stops a script at its deadline only where it looks: between
//! bytecodes. A built-in that loops natively (`Array.prototype.reverse` on
//! an object claiming 2^53 elements) never returns to the interpreter, so
//! no thread running it can be stopped. A process can: the executor kills
//! it at the deadline plus a grace, when the call is cancelled and when the
//! session ends, and the kernel holds what the engine cannot (CPU seconds,
//! address space, no core files). The process also ends on its own the
//! moment its standard input closes, so it cannot outlive zenmode.
//!
//! The two sides speak JSON lines: zenmode sends a [`Start`] then
//! [`Answer`]s; the engine sends [`FromEngine`] lines, its last one
//! [`FromEngine::Ended`].

use std::{
    io::{BufRead, Write},
    process::{ExitCode, Stdio},
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::{
    io::AsyncWriteExt,
    process::{Child, ChildStdin, ChildStdout},
};
use tokio_util::{
    codec::{FramedRead, LinesCodec},
    sync::CancellationToken,
};

use super::sandbox::{self, Answer, Ask, Ended, Limits};

/// The hidden first argument that turns zenmode into a script engine.
pub const SUBCOMMAND: &str = "__script-engine";

/// The engine thread's own stack (QuickJS's stack limit sits well inside).
const THREAD_STACK: usize = 8 << 20;

/// How long past its deadline the engine's own watchdog lets a script run
/// before it ends the process: the interpreter stops at the deadline by
/// itself; only a built-in looping natively reaches the watchdog, and each
/// moment it waits is a core spent on nothing.
const WATCHDOG_GRACE: Duration = Duration::from_millis(200);

/// The exit status of an engine its watchdog ended.
pub const WATCHDOG_EXIT: u8 = 124;

/// Address space beyond the script's memory limit: the binary, its
/// libraries, thread stacks and the allocator's reservations.
const ADDRESS_SPACE_BEYOND_SCRIPT: u64 = 4 << 30;

/// What the engine runs.
#[derive(Serialize, Deserialize)]
pub struct Start {
    pub code: String,
    pub input: Option<String>,
    pub limits: Limits,
    pub wall: Duration,
}

/// A line the engine writes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromEngine {
    Ask(Ask),
    Ended(Ended),
}

/// Runs the engine when the process was started as one (call first thing
/// in `main`); `None` otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != SUBCOMMAND {
        return None;
    }
    Some(serve())
}

fn serve() -> ExitCode {
    let mut first = String::new();
    if std::io::stdin().lock().read_line(&mut first).is_err() {
        return ExitCode::from(2);
    }
    let Ok(start) = serde_json::from_str::<Start>(&first) else {
        eprintln!("{SUBCOMMAND} is zenmode's own: it reads a script from zenmode");
        return ExitCode::from(2);
    };
    confine(&start.limits, start.wall);
    let deadline = Instant::now() + start.wall;
    std::thread::spawn(move || {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()) + WATCHDOG_GRACE);
        std::process::exit(WATCHDOG_EXIT.into());
    });
    let (ask_tx, mut ask_rx) = tokio::sync::mpsc::unbounded_channel::<Ask>();
    let (answer_tx, answer_rx) = std::sync::mpsc::channel::<Answer>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(Ok(answer)) = line.map(|line| serde_json::from_str::<Answer>(&line)) else {
                break;
            };
            if answer_tx.send(answer).is_err() {
                break;
            }
        }
        // zenmode is gone or gave up on this script: so does the engine,
        // whatever it is running.
        std::process::exit(0);
    });
    let writer = std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        while let Some(ask) = ask_rx.blocking_recv() {
            if write_line(&mut out, &FromEngine::Ask(ask)).is_err() {
                std::process::exit(0);
            }
        }
    });
    let engine = std::thread::Builder::new()
        .name("zenmode-script".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            sandbox::run(
                &start.code,
                start.input.as_deref(),
                start.limits,
                deadline,
                CancellationToken::new(),
                ask_tx,
                answer_rx,
            )
        });
    let Ok(Ok(ended)) = engine.map(std::thread::JoinHandle::join) else {
        return ExitCode::from(1);
    };
    let _ = writer.join();
    match write_line(&mut std::io::stdout().lock(), &FromEngine::Ended(ended)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

fn write_line(out: &mut impl Write, message: &FromEngine) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// The kernel's limits on the engine: CPU seconds a little past its wall
/// time (SIGXCPU, then SIGKILL), an address space its memory limit cannot
/// grow past unseen, and no core file.
#[cfg(unix)]
fn confine(limits: &Limits, wall: Duration) {
    let cpu = wall.as_secs() + 2;
    let address_space = limits.memory_bytes as u64 + ADDRESS_SPACE_BEYOND_SCRIPT;
    for (resource, soft, hard) in [
        (libc::RLIMIT_CPU, cpu, cpu + 1),
        (libc::RLIMIT_AS, address_space, address_space),
        (libc::RLIMIT_CORE, 0, 0),
    ] {
        let limit = libc::rlimit {
            rlim_cur: soft as libc::rlim_t,
            rlim_max: hard as libc::rlim_t,
        };
        // SAFETY: setrlimit reads the struct it is given and nothing else.
        unsafe {
            libc::setrlimit(resource, &limit);
        }
    }
}

#[cfg(not(unix))]
fn confine(_limits: &Limits, _wall: Duration) {}

/// How an engine ended without its last line.
pub enum EngineEnd {
    /// Its watchdog ended it: the script was still running past its
    /// deadline, inside a built-in that does not stop.
    PastDeadline,
    /// Anything else, said in words.
    Other(String),
}

/// A running engine, seen from zenmode. Dropping it kills the process.
pub struct EngineProcess {
    child: Child,
    to_engine: ChildStdin,
    from_engine: FramedRead<ChildStdout, LinesCodec>,
}

impl EngineProcess {
    /// Starts an engine on `start`.
    pub async fn start(start: &Start) -> std::io::Result<Self> {
        let binary = crate::gateway::supervisor::own_binary()?;
        let mut command = tokio::process::Command::new(binary);
        command
            .arg(SUBCOMMAND)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        let (Some(to_engine), Some(from_engine)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the engine's pipes are missing"));
        };
        // The longest line: a result or a request as large as the script's
        // whole memory, escaped.
        let longest = 2 * start.limits.memory_bytes + (1 << 20);
        let mut engine = EngineProcess {
            child,
            to_engine,
            from_engine: FramedRead::new(from_engine, LinesCodec::new_with_max_length(longest)),
        };
        engine.send(start).await?;
        Ok(engine)
    }

    /// The engine's next line; `None` once it ended without one or wrote
    /// something that is not one.
    pub async fn next(&mut self) -> Option<FromEngine> {
        let line = self.from_engine.next().await?.ok()?;
        serde_json::from_str(&line).ok()
    }

    pub async fn answer(&mut self, answer: &Answer) -> std::io::Result<()> {
        self.send(answer).await
    }

    async fn send(&mut self, message: &impl Serialize) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.to_engine.write_all(&line).await?;
        self.to_engine.flush().await
    }

    /// Why the process ended without a last line, read once it exited.
    pub async fn why_it_ended(&mut self) -> EngineEnd {
        let waited = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
        let Ok(Ok(status)) = waited else {
            return EngineEnd::Other("the script's engine stopped answering".to_owned());
        };
        if status.code() == Some(WATCHDOG_EXIT.into()) {
            return EngineEnd::PastDeadline;
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if status.signal() == Some(libc::SIGXCPU) {
                return EngineEnd::Other(
                    "the script used more CPU time than it may and was stopped".to_owned(),
                );
            }
        }
        EngineEnd::Other(format!(
            "the script's engine ended without an answer ({status})"
        ))
    }
}
