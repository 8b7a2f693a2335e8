//! The guard between zenmode and a stdio upstream: zenmode starts itself
//! again as `zenmode __upstream-supervisor PID -- CMD ARGS...`, in a new
//! process group; the guard starts the server in that group and, once
//! zenmode (PID) is gone, however it died (SIGKILL included), kills the
//! whole group. So no upstream, nor anything it started (`npx` runs node
//! under itself, a server may start helpers), outlives its zenmode.
//!
//! A helper may leave the group (`setsid`, `setpgid`) or be orphaned by a
//! double fork. On Linux the guard is therefore a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): an orphan below it becomes its child rather
//! than init's, so every process the server started, in the group or not,
//! stays a descendant of the guard, and the guard (or zenmode, stopping
//! the server) kills them all, found by their parent pids in /proc. Those
//! orphans that end on their own are reaped by the guard.
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

/// How long, once the server has exited, what it left running has to end
/// after SIGTERM before it is killed.
const LEFT_BEHIND_GRACE: Duration = Duration::from_millis(300);

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
    become_subreaper();
    // zenmode stops a server with SIGTERM to its group, then SIGKILL: the
    // guard outlives the SIGTERM, so that it still holds the helpers
    // outside the group when zenmode kills them. A handler, not SIG_IGN,
    // which the server would inherit; exec resets a handler.
    // SAFETY: the handler does nothing, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            ignore_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
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
    let server = child.id();
    std::thread::spawn(move || {
        let code = match child.wait() {
            Ok(status) => server_exited(status, parent_gone()),
            Err(_) => 1,
        };
        std::process::exit(code);
    });
    loop {
        if parent_gone() {
            // zenmode is gone: everything below the guard goes, then the
            // group (this guard included).
            kill_all_below();
        }
        reap_orphans(server);
        std::thread::sleep(CHECK_EVERY);
    }
}

/// Kills every descendant of the guard and its group, the guard included.
#[cfg(unix)]
fn kill_all_below() -> ! {
    crate::platform::process::kill_descendants(std::process::id());
    // SAFETY: killpg has no memory effects.
    unsafe {
        libc::killpg(0, libc::SIGKILL);
    }
    std::process::exit(1)
}

/// The server has exited: what it left running, in the group or not, goes
/// too (SIGTERM, then SIGKILL after [`LEFT_BEHIND_GRACE`]; at once when
/// zenmode is gone as well), and the guard exits as the server did.
#[cfg(unix)]
fn server_exited(status: std::process::ExitStatus, parent_gone: bool) -> i32 {
    use crate::platform::process;
    use std::os::unix::process::ExitStatusExt;
    if parent_gone {
        kill_all_below();
    }
    let guard = std::process::id();
    process::terminate_descendants(guard);
    // SAFETY: killpg has no memory effects; the guard's own SIGTERM
    // handler does nothing.
    unsafe {
        libc::killpg(0, libc::SIGTERM);
    }
    let started = std::time::Instant::now();
    while !process::descendants(guard).is_empty() && started.elapsed() < LEFT_BEHIND_GRACE {
        reap_orphans(0);
        std::thread::sleep(Duration::from_millis(10));
    }
    process::kill_descendants(guard);
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(unix)]
extern "C" fn ignore_signal(_: libc::c_int) {}

/// Makes the guard the reaper of orphans below it (Linux only; elsewhere a
/// helper that leaves the group is not followed).
#[cfg(unix)]
fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a plain integer.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Reaps the orphans that became the guard's children and have ended, all
/// but `server`, whose status the waiting thread takes.
#[cfg(unix)]
fn reap_orphans(server: u32) {
    #[cfg(target_os = "linux")]
    loop {
        // SAFETY: waitid writes only into `info`; WNOWAIT leaves the child
        // waitable, so the server's status is never taken here.
        let pid = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            if libc::waitid(libc::P_ALL, 0, &mut info, flags) != 0 {
                return;
            }
            info.si_pid()
        };
        if pid <= 0 || u32::try_from(pid).ok() == Some(server) {
            return;
        }
        // SAFETY: waitpid on a child known to have ended.
        unsafe {
            libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = server;
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
