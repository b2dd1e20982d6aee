//! [`LocalCommand::spawn_interactive`]: a command with live stdin and stdout, for the duplex
//! channels and login terminals of a local provider.

use std::io;
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::groups::{signal_group, GroupGuard};
use super::LocalCommand;

/// A running command whose stdin, stdout and stderr the provider drives itself (see
/// [`LocalCommand::spawn_interactive`]).
///
/// It runs in a process group of its own under the same guarantees as [`LocalCommand::run`]:
/// the group dies with the worker, and [`kill`](Self::kill) or dropping this value ends the
/// whole group (background children included).
#[derive(Debug)]
pub struct InteractiveProcess {
    child: Child,
    pgid: u32,
    // Kills what is left of the group when dropped.
    _group: GroupGuard,
}

impl LocalCommand {
    /// Starts the command with piped stdin, stdout and stderr and returns at once. The
    /// builder's stdin bytes, timeout and output bound do not apply: the caller writes stdin,
    /// reads the output and decides when the command ends.
    ///
    /// Fails when the command cannot be started (`NotFound`, `PermissionDenied`).
    pub fn spawn_interactive(&self) -> io::Result<InteractiveProcess> {
        let (child, pgid) = self.spawn_in_group(Stdio::piped())?;
        Ok(InteractiveProcess { child, pgid, _group: GroupGuard { pgid: Some(pgid as i32) } })
    }
}

impl InteractiveProcess {
    /// The command's process group id.
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// The command's stdin (once); dropping it closes the command's stdin.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The command's stdout (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// The command's stderr (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Ends the command's whole process group (`SIGKILL`).
    pub fn kill(&self) {
        signal_group(self.pgid as i32, libc::SIGKILL);
    }

    /// Waits for the command to exit. Its background children, if any, are ended when this
    /// value is dropped.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// The exit status, if the command has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }
}
