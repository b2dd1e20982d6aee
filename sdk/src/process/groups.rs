//! Process groups and signals: ending a group, asking whether it lives, signal names.

use std::io;

use super::guard;

/// Ends the process group when dropped, unless disarmed.
#[derive(Debug)]
pub(super) struct GroupGuard {
    pub(super) pgid: Option<i32>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, libc::SIGKILL);
        }
    }
}

/// Sends `signal` to the group; true when it was delivered.
pub(super) fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of this process.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Sends `SIGKILL` to every process of the process group `pgid` (on Unix; elsewhere an
/// [`io::ErrorKind::Unsupported`] error). A group that no longer exists is not an error.
pub fn kill_process_group(pgid: u32) -> io::Result<()> {
    let pgid = i32::try_from(pgid)
        .ok()
        .filter(|p| *p > 1)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process group id"))?;
    if signal_group(pgid, libc::SIGKILL) {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// True while the process group `pgid` has a member.
pub fn process_group_exists(pgid: u32) -> bool {
    i32::try_from(pgid).is_ok_and(|p| p > 1 && guard::group_exists(p))
}

/// `SIGKILL`s every process group [`LocalCommand`](super::LocalCommand) started in this process that still has
/// members (background processes of kept groups included); returns how many were signalled.
/// The runtime calls it when it stops serving; a provider's `shutdown` hook may call it too.
pub fn end_all_groups() -> usize {
    guard::kill_all()
}

/// The process groups [`LocalCommand`](super::LocalCommand) started in this process that still have members.
pub fn live_groups() -> Vec<u32> {
    guard::live().into_iter().map(|g| g as u32).collect()
}

/// The conventional name of a signal number (`9` → `"SIGKILL"`); `SIG<n>` when unknown.
pub fn signal_name(sig: i32) -> String {
    let known = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGUSR2, "SIGUSR2"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGCHLD, "SIGCHLD"),
        (libc::SIGCONT, "SIGCONT"),
        (libc::SIGSTOP, "SIGSTOP"),
        (libc::SIGTSTP, "SIGTSTP"),
        (libc::SIGTTIN, "SIGTTIN"),
        (libc::SIGTTOU, "SIGTTOU"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
        (libc::SIGVTALRM, "SIGVTALRM"),
        (libc::SIGPROF, "SIGPROF"),
        (libc::SIGWINCH, "SIGWINCH"),
        (libc::SIGSYS, "SIGSYS"),
    ];
    known.iter().find(|(n, _)| *n == sig).map_or_else(|| format!("SIG{sig}"), |(_, s)| (*s).into())
}
