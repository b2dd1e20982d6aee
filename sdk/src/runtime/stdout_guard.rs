//! Process-level guards of a stdio worker.
//!
//! * [`take_protocol_stdout`] moves the protocol stream off fd 1: it duplicates fd 1 into a
//!   private close-on-exec descriptor used only for frames, then points fd 1 at stderr. A stray
//!   `println!` in provider code, or a child process that inherits fd 1, then writes to
//!   stderr and can never corrupt the protocol stream; and commands the provider spawns do not
//!   inherit the protocol descriptor.
//! * [`exit_with_parent`] asks Linux to send SIGTERM when the parent (the host, or the
//!   JavaScript shim) dies, and exits at once if it already has. On other
//!   systems it does nothing; stdin EOF ends the worker anyway.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

static TAKEN: AtomicBool = AtomicBool::new(false);

/// Returns the protocol output (a private duplicate of fd 1) and redirects fd 1 to stderr.
///
/// Call it once, before anything else in the process writes to stdout; a second call fails
/// with [`io::ErrorKind::AlreadyExists`].
pub(crate) fn take_protocol_stdout() -> io::Result<File> {
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "protocol stdout already taken"));
    }
    // Anything already buffered by Rust's stdout belongs to fd 1 as it is now.
    io::stdout().flush()?;
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) only creates a new descriptor (>= 3) for fd 1; no memory
    // is touched.
    let private = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if private < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `private` is a fresh descriptor that nothing else owns; the File takes it.
    let file = unsafe { File::from_raw_fd(private) };
    // SAFETY: dup2 atomically replaces fd 1 with a copy of fd 2; both are valid descriptors.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Makes the worker die with its parent (Linux: `PR_SET_PDEATHSIG` with SIGTERM).
///
/// A parent that died before the call is caught by a `getppid` check right after it, which
/// exits with code 0. A parent that died before the worker even read its parent id is not
/// detectable this way; stdin EOF still ends the worker then.
pub(crate) fn exit_with_parent() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() };
        // SAFETY: prctl(PR_SET_PDEATHSIG, sig) only sets a process attribute.
        let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) };
        if rc != 0 {
            tracing::warn!(error = %io::Error::last_os_error(), "PR_SET_PDEATHSIG failed");
        }
        // SAFETY: as above.
        if unsafe { libc::getppid() } != parent {
            tracing::info!("parent exited during startup; exiting");
            std::process::exit(0);
        }
    }
}
