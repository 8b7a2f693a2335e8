//! Whether another process still runs: `status` and `upstream add` read
//! records that serving processes leave, and a record of a process that
//! died is not news.

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
}
