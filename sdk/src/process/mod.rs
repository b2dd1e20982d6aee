//! Running commands as local processes: [`LocalCommand`], the runner every local provider
//! needs, and the process-group helpers under it.
//!
//! A command a provider starts may start children of its own (`sh -c 'a | b'`, a background
//! job). [`LocalCommand`] runs it so that none of them is ever left behind:
//!
//! * **A process group per command**, ended as a whole (`SIGKILL` to the group) on timeout,
//!   on cancellation (the worker shuts down, the host is gone) and when the run is dropped.
//! * **Death-signal guard.** The command dies with the worker even when the worker is killed
//!   with `SIGKILL` or crashes, and so do its grandchildren (see "Guarantees" below).
//! * **stdin** is written from the given bytes and then closed (`/dev/null` without any).
//! * **Streaming with backpressure.** Output is streamed as it arrives: with
//!   [`LocalCommand::execute`] as `execute.log` notifications through the [`Context`]; with
//!   [`LocalCommand::run`] to any [`OutputSink`]. While the host does not read the worker's
//!   stdout, the sink waits ([`Context::send_execute_log`]), the runner stops reading the
//!   command's pipes and the command blocks on them: memory stays flat.
//! * **Large reads, no added latency, no copies.** The command's pipes are widened to 1 MiB
//!   and read in reads that grow to 512 KiB while the command is ahead, so under load each
//!   read takes what has accumulated and becomes one `execute.log` chunk; an idle command's
//!   few bytes are read and streamed as soon as they arrive (no timer, no batching delay).
//!   Reads go straight into the text collected for the result, which is streamed from there.
//! * **Results that always fit the host's line limit.** stdout and stderr are collected for the
//!   result up to a bound on their *JSON-encoded* size (a newline takes two UTF-16 code units
//!   on the wire), by default half each of the host's line limit
//!   ([`HOST_MAX_LINE_UNITS`]) less room for the rest of the answer; past it the text is cut
//!   on a character boundary and [`CommandOutput::stdout_truncated`] /
//!   [`CommandOutput::stderr_truncated`] say so (streaming goes on).
//! * Bytes that are not UTF-8 become U+FFFD; a character split across two reads is kept
//!   whole.
//!
//! ```no_run
//! use paperclip_sandbox_sdk::prelude::*;
//! use paperclip_sandbox_sdk::process::LocalCommand;
//!
//! async fn execute(params: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> {
//!     let mut cmd = LocalCommand::new(&params.command);
//!     cmd.args(params.args()).env_clear().env("PATH", "/usr/bin:/bin");
//!     if let Some(stdin) = &params.stdin {
//!         cmd.stdin(stdin.as_bytes().to_vec());
//!     }
//!     cmd.timeout(params.timeout());
//!     // Streams execute.log, ends the group on timeout or shutdown, answers the result.
//!     Ok(cmd.execute(&cx).await?)
//! }
//! ```
//!
//! # Guarantees
//!
//! A command's process group ends with the worker, however the worker ends: the command
//! leader gets `PR_SET_PDEATHSIG(SIGKILL)` (set race-free between `fork` and `exec`), the
//! worker becomes a child subreaper so background processes whose parent exits are
//! re-parented to it and reaped, and a small guard process forked from the worker kills
//! every group the runner started when the worker dies, even by `SIGKILL` (Linux; elsewhere
//! only the group kill on timeout, cancellation and drop applies). The SDK's runtime also
//! ends every group the runner started when it stops serving ([`end_all_groups`]).
//!
//! Run commands from async tasks on the runtime's threads, not from a short-lived thread:
//! the death signal fires when the thread that forked the command ends.
//!
//! [`HOST_MAX_LINE_UNITS`]: paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS

use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use paperclip_sandbox_protocol::methods::{ExecuteResult, OutputStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::Context;

mod groups;
mod guard;
mod interactive;
pub(crate) mod output;
pub(crate) mod sink;

pub use groups::{
    end_all_groups, kill_process_group, live_groups, process_group_exists, signal_name,
};
use groups::{signal_group, GroupGuard};
pub use interactive::InteractiveProcess;
pub use sink::{sink_fn, OutputSink, SinkFn};

use crate::output::{CollectedOutput, OutputCollector};
pub use crate::output::{DEFAULT_MAX_OUTPUT_UNITS, RESULT_RESERVE_UNITS};

/// The default time output is still read after the command itself has exited (from
/// background processes that hold its pipes).
pub const DEFAULT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

/// The largest read of an output stream: while the command writes faster than the
/// host takes `execute.log`, output accumulates in the (widened, [`PIPE_SIZE`]) pipe and one
/// read takes up to this much — one notification instead of eight — while an idle command's
/// few bytes are read, and streamed, as soon as they arrive. Below
/// [`EXECUTE_LOG_MAX_CHUNK_CHARS`](paperclip_sandbox_protocol::methods::EXECUTE_LOG_MAX_CHUNK_CHARS),
/// so a read is one chunk and never needs splitting.
const READ_BUF_MAX: usize = 512 * 1024;

/// The pipe capacity asked for each output stream.
const PIPE_SIZE: usize = 1024 * 1024;

const _: () =
    assert!(READ_BUF_MAX + 3 < paperclip_sandbox_protocol::methods::EXECUTE_LOG_MAX_CHUNK_CHARS);

/// Asks the kernel for a [`PIPE_SIZE`] pipe (Linux `F_SETPIPE_SZ`; the default is 64 KiB).
/// Refused (over `/proc/sys/fs/pipe-max-size`), not a pipe, or elsewhere, it stays as it is.
/// The runtime widens the protocol output the same way (fewer, larger writes to the host).
pub(crate) fn widen_pipe(pipe: Option<&impl std::os::fd::AsRawFd>) {
    #[cfg(target_os = "linux")]
    if let Some(pipe) = pipe {
        // SAFETY: fcntl(2) on a descriptor this process owns; no memory is passed.
        unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE as libc::c_int) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pipe;
}

/// A command to run as a local process (see the [module docs](self)).
///
/// Built like [`std::process::Command`], then run once with [`execute`](Self::execute) (for an
/// `environmentExecute` hook) or [`run`](Self::run).
#[derive(Debug, Clone)]
pub struct LocalCommand {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env_clear: bool,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
    max_output: usize,
    drain_after_exit: Duration,
    keep_background: bool,
}

impl LocalCommand {
    /// A command running `program` (looked up on the `PATH` of its environment), with no
    /// arguments, the worker's environment and working directory, and no timeout.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        LocalCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env_clear: false,
            env: Vec::new(),
            stdin: None,
            timeout: None,
            max_output: DEFAULT_MAX_OUTPUT_UNITS,
            drain_after_exit: DEFAULT_DRAIN_AFTER_EXIT,
            keep_background: false,
        }
    }

    /// Adds one argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// The working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Starts from an empty environment instead of the worker's.
    pub fn env_clear(&mut self) -> &mut Self {
        self.env_clear = true;
        self.env.clear();
        self
    }

    /// Sets one variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    /// Bytes written to the command's stdin, which is then closed (default: `/dev/null`). A
    /// command that exits without reading them is not an error.
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Ends the process group after this long ([`CommandOutput::timed_out`]); `None` (the
    /// default) for no timeout, as [`ExecuteParams::timeout`] gives it:
    /// `command.timeout(params.timeout())`.
    ///
    /// [`ExecuteParams::timeout`]: paperclip_sandbox_protocol::methods::ExecuteParams::timeout
    pub fn timeout(&mut self, timeout: impl Into<Option<Duration>>) -> &mut Self {
        self.timeout = timeout.into();
        self
    }

    /// The bound on each of stdout and stderr in the result, in JSON-encoded UTF-16 code units
    /// (default [`DEFAULT_MAX_OUTPUT_UNITS`]). Keep the sum of both below the host's line
    /// limit.
    pub fn max_output_units(&mut self, units: usize) -> &mut Self {
        self.max_output = units;
        self
    }

    /// How long output is still read after the command itself exited (default
    /// [`DEFAULT_DRAIN_AFTER_EXIT`]).
    pub fn drain_after_exit(&mut self, drain: Duration) -> &mut Self {
        self.drain_after_exit = drain;
        self
    }

    /// Whether processes the command left running in the background (`server &`) survive its
    /// normal exit (default `false`: the group is ended once the command and the drain are
    /// done). Kept groups still end with the worker; end them earlier with
    /// [`kill_process_group`] on [`CommandOutput::pgid`].
    pub fn keep_background(&mut self, keep: bool) -> &mut Self {
        self.keep_background = keep;
        self
    }

    /// Runs the command for an `environmentExecute` hook: streams its output as `execute.log`
    /// through `cx`, ends it when `cx` is cancelled, and answers the result
    /// ([`CommandOutput::into_execute_result`]). A program that does not exist or is not
    /// executable answers exit code 127 or 126, as a shell would
    /// ([`CommandOutput::from_spawn_error`]).
    pub async fn execute(&self, cx: &Context) -> io::Result<ExecuteResult> {
        let cancel = cx.cancellation().clone();
        let mut sink = cx;
        let out = match self.run(&mut sink, async move { cancel.cancelled().await }, |_| ()).await {
            Ok(out) => out,
            Err(e) => match CommandOutput::from_spawn_error(&self.program, &e) {
                Some(out) => {
                    cx.send_execute_log(OutputStream::Stderr, &out.stderr).await;
                    out
                }
                None => return Err(e),
            },
        };
        Ok(out.into_execute_result())
    }

    /// The program.
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// Starts the command as both runners do: stdout and stderr piped, in a process group of
    /// its own under the death-signal guard (registered with it), killed on drop. Returns the
    /// child and its group id.
    fn spawn_in_group(&self, stdin: Stdio) -> io::Result<(tokio::process::Child, u32)> {
        guard::ensure_started();
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        if self.env_clear {
            cmd.env_clear();
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let worker = std::process::id() as libc::pid_t;
        // SAFETY: the closure makes only async-signal-safe system calls (guard::pre_exec).
        unsafe { cmd.pre_exec(move || guard::pre_exec(worker)) };
        let child = cmd.spawn()?;
        let pgid = child.id().ok_or_else(|| io::Error::other("the command has no pid"))?;
        guard::register(pgid as i32);
        Ok((child, pgid))
    }

    /// Runs the command: output goes to `sink` as it arrives, `cancel` completing ends the
    /// group ([`CommandOutput::cancelled`]), `on_spawn` receives the group id right after the
    /// spawn (to record it, for example, so a lease's stop can end it).
    ///
    /// Fails when the command cannot be started (`NotFound` when the program does not exist,
    /// `PermissionDenied` when it is not executable) or waiting for it fails. Dropping the
    /// future ends the group.
    pub async fn run<S, C>(
        &self,
        sink: &mut S,
        cancel: C,
        on_spawn: impl FnOnce(u32),
    ) -> io::Result<CommandOutput>
    where
        S: OutputSink,
        C: Future<Output = ()>,
    {
        let stdin = if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
        let (mut child, pgid) = self.spawn_in_group(stdin)?;
        let mut group = GroupGuard { pgid: Some(pgid as i32) };
        on_spawn(pgid);

        let mut stdin = child.stdin.take();
        let stdin_bytes = self.stdin.as_deref().unwrap_or_default();
        let mut stdin_pos = 0;
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        widen_pipe(stdout.as_ref());
        widen_pipe(stderr.as_ref());
        let mut output = OutputCollector::with_reads(self.max_output, READ_BUF_MAX);

        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        let deadline = self.timeout.and_then(|t| Instant::now().checked_add(t));
        let mut status: Option<ExitStatus> = None;
        let mut drain_until: Option<Instant> = None;
        let (mut timed_out, mut cancelled) = (false, false);
        let mut cancel = pin!(cancel);

        loop {
            if stdout.is_none() && stderr.is_none() && status.is_some() {
                break;
            }
            let killed = timed_out || cancelled;
            let (out, err) = output.streams_mut();
            let read = tokio::select! {
                biased;
                _ = &mut cancel, if !killed && status.is_none() => {
                    tracing::debug!(pgid, "command cancelled; ending its process group");
                    signal_group(pgid as i32, libc::SIGKILL);
                    cancelled = true;
                    None
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or(far)),
                    if deadline.is_some() && !killed && status.is_none() => {
                    tracing::debug!(pgid, "command timed out; ending its process group");
                    signal_group(pgid as i32, libc::SIGKILL);
                    timed_out = true;
                    None
                }
                st = child.wait(), if status.is_none() => {
                    status = Some(st?);
                    drain_until = Some(Instant::now() + self.drain_after_exit);
                    None
                }
                n = read_into(stdout.as_mut(), out.read_target()), if stdout.is_some() => {
                    Some((OutputStream::Stdout, n))
                }
                n = read_into(stderr.as_mut(), err.read_target()), if stderr.is_some() => {
                    Some((OutputStream::Stderr, n))
                }
                w = write_some(stdin.as_mut(), &stdin_bytes[stdin_pos..]), if stdin.is_some() => {
                    match w {
                        Ok(n) if n > 0 && stdin_pos + n < stdin_bytes.len() => stdin_pos += n,
                        // Done, or the command closed its stdin: not an error.
                        _ => {
                            if let Some(mut s) = stdin.take() {
                                let _ = s.shutdown().await;
                            }
                        }
                    }
                    None
                }
                _ = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() => break,
            };
            let Some((stream, n)) = read else { continue };
            let n = match n {
                Ok(n) if n > 0 => n,
                // End of output (or a read error, which ends it too).
                _ => {
                    match stream {
                        OutputStream::Stdout => stdout = None,
                        OutputStream::Stderr => stderr = None,
                    }
                    // What is held back was never a whole character.
                    output.mark_ended(timed_out, cancelled);
                    output.end(sink, stream).await;
                    continue;
                }
            };
            let collected = output.stream_mut(stream);
            let piece = collected.piece(n);
            let text = collected.text(&piece);
            if !(timed_out || cancelled || text.is_empty()) {
                // Stream, but keep watching the timeout and the cancellation while the sink
                // waits for the host.
                tokio::select! {
                    biased;
                    _ = &mut cancel, if status.is_none() => {
                        signal_group(pgid as i32, libc::SIGKILL);
                        cancelled = true;
                    }
                    _ = tokio::time::sleep_until(deadline.unwrap_or(far)),
                        if deadline.is_some() && status.is_none() => {
                        signal_group(pgid as i32, libc::SIGKILL);
                        timed_out = true;
                    }
                    () = sink.chunk(stream, text) => {}
                }
            }
            collected.commit(piece);
        }

        let ended_by_us = timed_out || cancelled;
        if self.keep_background && !ended_by_us {
            group.pgid = None;
        }
        drop(group);
        guard::sweep();
        let status = match status {
            Some(s) => s,
            // The drain ended before the command exited: impossible, the drain starts at exit.
            None => child.wait().await?,
        };
        output.mark_ended(timed_out, cancelled);
        let out = output.into_output();
        Ok(CommandOutput {
            exit_code: status.code(),
            signal: status.signal(),
            timed_out,
            cancelled,
            stdout_truncated: out.stdout_truncated,
            stderr_truncated: out.stderr_truncated,
            stdout: out.stdout,
            stderr: out.stderr,
            pgid,
        })
    }
}

/// Appends at most `max` bytes read from `reader` to `buf` (straight into its spare capacity).
async fn read_into<R: tokio::io::AsyncRead + Unpin>(
    reader: Option<&mut R>,
    (buf, max): (&mut Vec<u8>, usize),
) -> io::Result<usize> {
    match reader {
        Some(r) => r.take(max as u64).read_buf(buf).await,
        None => Ok(0),
    }
}

async fn write_some<W: tokio::io::AsyncWrite + Unpin>(
    writer: Option<&mut W>,
    bytes: &[u8],
) -> io::Result<usize> {
    match writer {
        Some(w) if !bytes.is_empty() => w.write(bytes).await,
        _ => Ok(0),
    }
}

/// How a command run by [`LocalCommand::run`] ended, with its collected output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOutput {
    /// The exit code; `None` when a signal ended the command.
    pub exit_code: Option<i32>,
    /// The number of the signal that ended the command ([`signal_name`] names it).
    pub signal: Option<i32>,
    /// True when the timeout ended the group.
    pub timed_out: bool,
    /// True when the cancellation ended the group.
    pub cancelled: bool,
    /// stdout, bounded (see [`LocalCommand::max_output_units`]).
    pub stdout: String,
    /// stderr, bounded.
    pub stderr: String,
    /// True when stdout was cut to fit the bound.
    pub stdout_truncated: bool,
    /// True when stderr was cut to fit the bound.
    pub stderr_truncated: bool,
    /// The command's process group id (its pid).
    pub pgid: u32,
}

impl CommandOutput {
    /// The output a shell gives for a command it cannot start: exit code 127 when `err` says
    /// the program does not exist, 126 when it is not executable, with a line naming the
    /// program on stderr; `None` for any other error.
    pub fn from_spawn_error(program: &OsStr, err: &io::Error) -> Option<CommandOutput> {
        let code = match err.kind() {
            io::ErrorKind::NotFound => 127,
            io::ErrorKind::PermissionDenied => 126,
            _ => return None,
        };
        let stderr = format!("cannot run {}: {err}\n", program.to_string_lossy());
        Some(CommandOutput {
            exit_code: Some(code),
            signal: None,
            timed_out: false,
            cancelled: false,
            stdout: String::new(),
            stderr,
            stdout_truncated: false,
            stderr_truncated: false,
            pgid: 0,
        })
    }

    /// The `environmentExecute` result: exit code, signal name, `timedOut`, stdout, stderr,
    /// and `metadata` with `stdoutTruncated`, `stderrTruncated` and `cancelled` when true.
    pub fn into_execute_result(self) -> ExecuteResult {
        let exit_code = self.exit_code.map(i64::from);
        let signal = self.signal.map(signal_name);
        let output = CollectedOutput {
            stdout: self.stdout,
            stderr: self.stderr,
            stdout_truncated: self.stdout_truncated,
            stderr_truncated: self.stderr_truncated,
            timed_out: self.timed_out,
            cancelled: self.cancelled,
        };
        output.into_execute_result(exit_code, signal)
    }
}

#[cfg(test)]
mod tests;
