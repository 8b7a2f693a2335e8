//! The guard between zenmode and a stdio upstream: zenmode starts itself
//! again as `zenmode __upstream-supervisor PID -- CMD ARGS...`, in a new
//! process group; the guard starts the server in that group and, once
//! zenmode (PID) is gone, however it died (SIGKILL included), kills the
//! whole group. So no upstream, nor anything it started (`npx` runs node
//! under itself, a server may start helpers), outlives its zenmode.
//!
//! The parent-death signal alone is not enough: it reaches only the direct
//! child (not `npx`'s node) and fires when the spawning *thread* exits, not
//! the process. The guard instead checks every [`CHECK_EVERY`] whether its
//! parent is still PID; it holds no copy of the server's pipes, so zenmode
//! sees the server's own exit at once. It costs one small process per
//! running stdio upstream and about a millisecond at each server start.

use std::{ffi::OsString, process::ExitCode, time::Duration};

/// The hidden first argument that turns zenmode into the guard.
pub const SUBCOMMAND: &str = "__upstream-supervisor";

/// How often the guard checks that zenmode is alive.
pub const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Runs the guard when the process was started as one (call first thing in
/// `main`); `None` otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != SUBCOMMAND {
        return None;
    }
    let args: Vec<OsString> = args.collect();
    Some(supervise(&args))
}

/// The program that starts the guard: this very binary.
pub fn own_binary() -> std::io::Result<std::path::PathBuf> {
    // On Linux /proc/self/exe still works after the binary was replaced on
    // disk (an upgrade while zenmode runs).
    #[cfg(target_os = "linux")]
    if std::path::Path::new("/proc/self/exe").exists() {
        return Ok("/proc/self/exe".into());
    }
    std::env::current_exe()
}

#[cfg(unix)]
fn supervise(args: &[OsString]) -> ExitCode {
    let parent = args
        .first()
        .and_then(|p| p.to_str()?.parse::<libc::pid_t>().ok());
    let (Some(parent), Some(separator), Some(program)) = (parent, args.get(1), args.get(2)) else {
        eprintln!("{SUBCOMMAND} is zenmode's own: {SUBCOMMAND} PID -- CMD ARGS...");
        return ExitCode::from(2);
    };
    if separator != "--" {
        eprintln!("{SUBCOMMAND} is zenmode's own: {SUBCOMMAND} PID -- CMD ARGS...");
        return ExitCode::from(2);
    }
    // SAFETY: getppid, setpgid, getpgrp and getpid have no preconditions.
    if unsafe { libc::getppid() } != parent {
        return ExitCode::from(1);
    }
    // The guard kills its group, so it must lead its own: zenmode starts it
    // so, and anyone else who runs it gets a new group, never their own
    // killed.
    unsafe {
        libc::setpgid(0, 0);
        if libc::getpgrp() != libc::getpid() {
            eprintln!("{SUBCOMMAND}: cannot lead a process group of its own");
            return ExitCode::from(2);
        }
    }
    let mut child = match std::process::Command::new(program).args(&args[3..]).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("cannot start {}: {error}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    release_stdio();
    let parent_gone = move || {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::getppid() != parent }
    };
    // The server's exit is seen at once by a thread that waits for it;
    // zenmode's end, by checking the parent every CHECK_EVERY.
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(status) => server_exited(status, parent_gone()),
            Err(_) => 1,
        };
        std::process::exit(code);
    });
    loop {
        if parent_gone() {
            // zenmode is gone: the group (this guard included) goes too.
            // SAFETY: killpg has no memory effects.
            unsafe {
                libc::killpg(0, libc::SIGKILL);
            }
        }
        std::thread::sleep(CHECK_EVERY);
    }
}

/// The server has exited: what it left running in the group goes too
/// (SIGKILL when zenmode is gone as well, else SIGTERM, which the guard
/// ignores so it can report the exit), and the guard exits as it did.
#[cfg(unix)]
fn server_exited(status: std::process::ExitStatus, parent_gone: bool) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    // SAFETY: signal and killpg have no memory effects; SIG_IGN is a valid
    // disposition.
    unsafe {
        if parent_gone {
            libc::killpg(0, libc::SIGKILL);
        }
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::killpg(0, libc::SIGTERM);
    }
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Points the guard's stdin, stdout and stderr at /dev/null, so only the
/// server holds the pipes to zenmode and its exit closes them.
#[cfg(unix)]
fn release_stdio() {
    use std::os::fd::AsRawFd;
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors, which this
            // process no longer uses.
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

#[cfg(not(unix))]
fn supervise(_args: &[OsString]) -> ExitCode {
    eprintln!("{SUBCOMMAND} runs on Unix only");
    ExitCode::from(2)
}
