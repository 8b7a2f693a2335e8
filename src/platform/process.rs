//! Whether another process still runs: `status` and `upstream add` read
//! records that serving processes leave, and a record of a process that
//! died is not news. And the processes under another, which an upstream's
//! guard and zenmode end together when a server stops: a helper that left
//! the server's process group (`setsid`, `setpgid`) or was orphaned by a
//! double fork is still a descendant of the guard, which is a child
//! subreaper (see `gateway::supervisor`).

/// Whether a process with this pid runs. A zombie counts as gone; a process
/// of another user (which signal 0 may not reach) counts as running. Where
/// there is no way to tell (not Unix), every process counts as running.
pub fn is_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists
            && !std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
                status
                    .lines()
                    .any(|line| line.starts_with("State:") && line.contains('Z'))
            })
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// How many times [`kill_descendants`] looks again for processes that
/// were forked while it killed their parents.
const KILL_ROUNDS: usize = 50;

/// Every live descendant of `root` (children, their children, ...), not
/// `root` itself; zombies are left out. Read from /proc on Linux; empty
/// elsewhere, where there is no such table to read.
pub fn descendants(root: u32) -> Vec<u32> {
    let table = process_table();
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            table
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        next += 1;
    }
    found.remove(0);
    found
}

/// Asks the process `pid` to end (SIGTERM).
pub fn terminate(pid: u32) {
    send(pid, Kill::Terminate);
}

/// Asks every descendant of `root` to end (SIGTERM), once.
pub fn terminate_descendants(root: u32) {
    for pid in descendants(root) {
        send(pid, Kill::Terminate);
    }
}

/// Kills every descendant of `root` (SIGKILL), looking again until none is
/// left, since one may have forked before it died; `root` itself is left
/// alone. Gives up after [`KILL_ROUNDS`] rounds (a process forking faster
/// than it can be found).
pub fn kill_descendants(root: u32) {
    for _ in 0..KILL_ROUNDS {
        let found = descendants(root);
        if found.is_empty() {
            return;
        }
        for pid in found {
            send(pid, Kill::Kill);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[derive(Clone, Copy)]
enum Kill {
    Terminate,
    Kill,
}

fn send(pid: u32, kill: Kill) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(pid)
        && pid > 0
    {
        let signal = match kill {
            Kill::Terminate => libc::SIGTERM,
            Kill::Kill => libc::SIGKILL,
        };
        // SAFETY: kill has no memory effects; a process that is gone gives
        // ESRCH.
        unsafe {
            libc::kill(pid, signal);
        }
    }
    #[cfg(not(unix))]
    let _ = (pid, kill);
}

/// (pid, parent pid) of every process that is not a zombie.
fn process_table() -> Vec<(u32, u32)> {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                // The command name, in parentheses, may hold spaces and ')'.
                let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
                let state = fields.next()?;
                if state == "Z" || state == "X" {
                    return None;
                }
                Some((pid, fields.next()?.parse().ok()?))
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_a_reaped_child_does_not() {
        assert!(is_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(pid));
        assert!(!is_alive(u32::MAX), "a pid no system hands out");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn descendants_in_another_session_are_found_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("helper");
        // A shell whose child leaves the session and process group.
        let script = format!(
            "setsid sh -c 'echo $$ > {0}.tmp; mv {0}.tmp {0}; exec sleep 300' & wait",
            pid_file.display()
        );
        let mut shell = std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let helper = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "the helper started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(descendants(shell.id()).contains(&helper));
        assert!(descendants(std::process::id()).contains(&helper));
        kill_descendants(shell.id());
        assert!(!is_alive(helper), "the helper is gone");
        assert!(descendants(shell.id()).is_empty());
        shell.wait().unwrap();
    }
}
