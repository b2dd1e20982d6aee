//! Helpers for providers that run commands as local processes.
//!
//! A command a provider starts may start children of its own (`sh -c 'a | b'`, a background
//! job). Killing only the direct child leaves those running, and they outlive the worker
//! (conformance requirement SHUT-3). Start each command in a new process group
//! (`Command::process_group(0)`, available on both `std` and `tokio` commands) and end the
//! whole group with [`kill_process_group`] on timeout, cancellation or shutdown.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let child = tokio::process::Command::new("sh")
//!     .args(["-c", "sleep 60 & sleep 60"])
//!     .process_group(0) // the child leads a new group whose id is its pid
//!     .spawn()?;
//! if let Some(pid) = child.id() {
//!     paperclip_sandbox_sdk::process::kill_process_group(pid)?; // both sleeps end
//! }
//! # Ok(()) }
//! ```

use std::io;

/// Sends `SIGKILL` to every process of the process group `pgid` (on Unix; elsewhere an
/// [`io::ErrorKind::Unsupported`] error). A group that no longer exists is not an error.
pub fn kill_process_group(pgid: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        let pgid = i32::try_from(pgid)
            .ok()
            .filter(|p| *p > 1)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process group id"))?;
        // SAFETY: kill(2) takes plain integers and touches no memory of this process.
        if unsafe { libc::kill(-pgid, libc::SIGKILL) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            Ok(())
        } else {
            Err(err)
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        Err(io::Error::new(io::ErrorKind::Unsupported, "process groups are a Unix feature"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    #[test]
    fn kills_the_whole_group_and_tolerates_a_gone_group() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        kill_process_group(child.id()).unwrap();
        child.wait().unwrap();
        // The background sleep (a grandchild) is gone too.
        let deadline = Instant::now() + Duration::from_secs(5);
        let alive = |pid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rfind(')').is_some_and(|i| !s[i + 1..].trim_start().starts_with('Z'))
            })
        };
        while alive(grandchild) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(grandchild), "the grandchild {grandchild} survived");
        // The group is gone now: not an error.
        kill_process_group(child.id()).unwrap();
        assert!(kill_process_group(0).is_err());
        assert!(kill_process_group(1).is_err());
    }
}
