//! Spawning a worker below its own reaper (a helper process that is a child subreaper, so
//! whatever the worker starts stays in a tree the harness can list and end), in its own process group, with
//! piped stdio, a bounded line reader per output stream, a writer thread for stdin, the shutdown
//! ladder and, on drop, the end of the worker's whole tree.
//!
//! Every byte read from the worker is bounded: a stdout line is kept whole up to
//! [`MAX_KEPT_LINE`] (longer ones are measured, not kept), a stderr line up to
//! [`MAX_STDERR_LINE`], unread lines up to a fixed budget (then the worker waits, as behind a slow
//! host), and the transcript stores a bounded amount ([`crate::transcript`]). No harness thread
//! waits on a pipe without looking at its stop flag every few milliseconds, and dropping a
//! [`WorkerProcess`] ends every process the worker started before its threads are stopped.
//!
//! The worker gets an environment like the published host gives it: `PATH`,
//! `NODE_PATH`, `NODE_ENV` (default `production`), `TZ` (default `UTC`), the two
//! `PAPERCLIP_DEPLOYMENT_*` variables and a `PAPERCLIP_PLUGIN_ID`, plus whatever the caller adds;
//! no `HOME`. On Linux the worker also gets `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with the
//! harness even when the harness is killed.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::jsonrpc::HOST_MAX_LINE_UNITS;

use crate::error::HarnessError;
use crate::transcript::{Direction, Transcript};

/// How long the ladder waits after SIGTERM before SIGKILL, and how long a SIGKILLed group
/// gets to be reaped.
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);

/// What to run, and with which extra environment. Its `Debug` shows the environment's names,
/// not their values (they may be secrets).
#[derive(Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program (looked up in `PATH` when it has no slash).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables, on top of the host-like base environment.
    pub env: Vec<(String, String)>,
    /// The working directory; the harness's own when `None`.
    pub cwd: Option<PathBuf>,
}

/// `Debug` of named values that may be secrets: each name with `<redacted>`.
pub(crate) struct RedactedValues<'a>(pub(crate) Vec<&'a str>);

impl std::fmt::Debug for RedactedValues<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Redacted;
        impl std::fmt::Debug for Redacted {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("<redacted>")
            }
        }
        f.debug_map().entries(self.0.iter().map(|k| (k, Redacted))).finish()
    }
}

impl std::fmt::Debug for WorkerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env = RedactedValues(self.env.iter().map(|(k, _)| k.as_str()).collect());
        f.debug_struct("WorkerCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl WorkerCommand {
    /// A command from a non-empty argv.
    pub fn from_argv(argv: &[String]) -> Result<Self, HarnessError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| HarnessError::Usage("a worker command is required after `--`".into()))?;
        Ok(WorkerCommand { program: program.clone(), args: args.to_vec(), env: vec![], cwd: None })
    }

    /// The command as a shell-like string, for messages.
    pub fn display(&self) -> String {
        std::iter::once(&self.program).chain(&self.args).cloned().collect::<Vec<_>>().join(" ")
    }

    /// The host-like base environment plus the extra variables.
    pub fn environment(&self) -> Vec<(String, String)> {
        let var = |k: &str, default: &str| std::env::var(k).unwrap_or_else(|_| default.into());
        let mut env = vec![
            ("PATH".to_owned(), var("PATH", "/usr/local/bin:/usr/bin:/bin")),
            ("NODE_PATH".to_owned(), var("NODE_PATH", "")),
            ("NODE_ENV".to_owned(), var("NODE_ENV", "production")),
            ("TZ".to_owned(), var("TZ", "UTC")),
            ("PAPERCLIP_DEPLOYMENT_MODE".to_owned(), var("PAPERCLIP_DEPLOYMENT_MODE", "")),
            ("PAPERCLIP_DEPLOYMENT_EXPOSURE".to_owned(), var("PAPERCLIP_DEPLOYMENT_EXPOSURE", "")),
            ("PAPERCLIP_PLUGIN_ID".to_owned(), crate::ids::uuid()),
        ];
        for (k, v) in &self.env {
            env.retain(|(existing, _)| existing != k);
            env.push((k.clone(), v.clone()));
        }
        env
    }
}

/// The longest stdout line the harness keeps whole, in bytes. A longer line is read to its end
/// without being kept (only its first [`LONG_LINE_PREFIX`] bytes and its length): no check asks
/// a worker for a frame nearly this long, and the host's own limit
/// ([`HOST_MAX_LINE_UNITS`]) is
/// judged on the counted length.
pub const MAX_KEPT_LINE: usize = 16 * 1024 * 1024;

/// How many leading bytes of a line over [`MAX_KEPT_LINE`] are kept.
pub const LONG_LINE_PREFIX: usize = 4096;

/// The longest stderr line kept, in bytes (the rest of the line is counted, not kept).
pub const MAX_STDERR_LINE: usize = 64 * 1024;

/// How many bytes of stdout lines may wait for the host side before the reader stops reading
/// (the worker then blocks on its stdout, as it would with a host that reads slowly).
const MAX_QUEUED_BYTES: usize = MAX_KEPT_LINE + 1024 * 1024;

/// What one queued line costs besides its bytes (its allocation and the channel's slot).
const QUEUED_LINE_OVERHEAD: usize = 96;

/// How long a reader or the writer waits on its pipe before it looks at its stop flag.
const PIPE_SLICE: Duration = Duration::from_millis(50);

/// After the worker process has exited, how long its stdout may stay open (held by a
/// descendant) before the harness treats the worker as gone.
const EXIT_DRAIN: Duration = Duration::from_millis(100);

/// Something a reader thread saw.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcEvent {
    /// One stdout line, without its `\n`.
    Stdout(Vec<u8>),
    /// A stdout line longer than [`MAX_KEPT_LINE`]: its first bytes, its length in bytes and in
    /// UTF-16 code units (the host's measure).
    LongLine {
        /// The first [`LONG_LINE_PREFIX`] bytes.
        prefix: Vec<u8>,
        /// The line's length in bytes.
        bytes: usize,
        /// The line's length in UTF-16 code units.
        units: usize,
    },
    /// stdout reached end of file, or the worker process exited and its stdout stayed open
    /// (held by a descendant) for longer than a short drain.
    StdoutClosed,
}

/// The UTF-16 code units a run of UTF-8 bytes adds (a 4-byte sequence is a surrogate pair).
fn utf16_units(bytes: &[u8]) -> usize {
    bytes.iter().map(|&b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0)).sum()
}

/// A running worker process, its reaper and its pipes.
#[derive(Debug)]
pub struct WorkerProcess {
    reaped: crate::reaper::Reaped,
    pgid: i32,
    stdin: Option<Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    events: Receiver<ProcEvent>,
    queued: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    closed_sent: bool,
    transcript: Transcript,
}

/// One line being read: what is kept of it and how long it is.
#[derive(Default)]
struct Partial {
    kept: Vec<u8>,
    bytes: usize,
    units: usize,
    /// A [`ProcEvent::LongLine`] already went out for this line while it grew.
    reported: bool,
    /// One went out after it passed the host's line limit.
    over_host: bool,
}

#[allow(clippy::too_many_arguments)]
fn spawn_reader(
    fd: OwnedFd,
    dir: Direction,
    transcript: Transcript,
    tx: Sender<ProcEvent>,
    queued: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    thread::spawn(move || {
        let keep = if dir == Direction::Stderr { MAX_STDERR_LINE } else { MAX_KEPT_LINE };
        let mut line = Partial::default();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut listening = true;
        let emit = |line: Partial, listening: &mut bool| {
            let whole = line.bytes == line.kept.len();
            transcript.record_long(dir, &line.kept, line.bytes);
            if dir == Direction::Stderr || !*listening {
                return;
            }
            let event = if whole {
                ProcEvent::Stdout(line.kept)
            } else {
                let mut prefix = line.kept;
                prefix.truncate(LONG_LINE_PREFIX);
                ProcEvent::LongLine { prefix, bytes: line.bytes, units: line.units }
            };
            let size = QUEUED_LINE_OVERHEAD
                + match &event {
                    ProcEvent::Stdout(b) => b.len(),
                    _ => LONG_LINE_PREFIX,
                };
            // Back-pressure: wait while the host side has much unread (bounded by the stop flag).
            while queued.load(Ordering::Acquire) > MAX_QUEUED_BYTES && !stop.load(Ordering::Acquire)
            {
                thread::sleep(Duration::from_millis(2));
            }
            queued.fetch_add(size, Ordering::AcqRel);
            if tx.send(event).is_err() {
                // Nobody listens any more; keep draining so the worker never blocks.
                *listening = false;
            }
        };
        loop {
            if stop.load(Ordering::Acquire) {
                return;
            }
            if !crate::reaper::wait_readable(fd.as_raw_fd(), PIPE_SLICE) {
                continue;
            }
            // SAFETY: read into an owned buffer from a descriptor this thread owns.
            let n = unsafe { libc::read(fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted
                    || e.kind() == std::io::ErrorKind::WouldBlock
                {
                    continue;
                }
                break;
            }
            if n == 0 {
                break;
            }
            let mut data = &chunk[..n as usize];
            while !data.is_empty() {
                let (part, rest, ended) = match data.iter().position(|&b| b == b'\n') {
                    Some(i) => (&data[..i], &data[i + 1..], true),
                    None => (data, &data[data.len()..], false),
                };
                line.bytes += part.len();
                line.units += utf16_units(part);
                let room = keep.saturating_sub(line.kept.len());
                line.kept.extend_from_slice(&part[..part.len().min(room)]);
                if ended {
                    emit(std::mem::take(&mut line), &mut listening);
                } else if dir == Direction::Recv
                    && ((!line.reported && line.bytes > keep)
                        || (line.reported && !line.over_host && line.units > HOST_MAX_LINE_UNITS))
                {
                    line.over_host = line.units > HOST_MAX_LINE_UNITS;
                    // A line that may never end (an endless line) is reported as soon as it
                    // is too long to keep, so the call waiting for it fails now, not at its
                    // timeout; its final length is reported when it ends.
                    line.reported = true;
                    let prefix = line.kept[..LONG_LINE_PREFIX.min(line.kept.len())].to_vec();
                    let event =
                        ProcEvent::LongLine { prefix, bytes: line.bytes, units: line.units };
                    queued.fetch_add(LONG_LINE_PREFIX + QUEUED_LINE_OVERHEAD, Ordering::AcqRel);
                    if listening && tx.send(event).is_err() {
                        listening = false;
                    }
                }
                data = rest;
            }
        }
        if line.bytes > 0 {
            emit(line, &mut listening);
        }
        if dir == Direction::Recv && listening {
            let _ = tx.send(ProcEvent::StdoutClosed);
        }
    });
}

/// Writes queued lines to the worker's stdin without ever blocking on the pipe for longer than
/// [`PIPE_SLICE`] at a time: a worker (or a descendant holding its stdin) that never reads
/// cannot hold this thread past the stop flag.
fn spawn_writer(
    fd: OwnedFd,
    lines: Receiver<Vec<u8>>,
    transcript: Transcript,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    crate::reaper::set_nonblocking(fd.as_raw_fd());
    thread::spawn(move || {
        let mut broken = false;
        loop {
            let line = match lines.recv_timeout(PIPE_SLICE) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => continue,
                Err(_) => return,
            };
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            transcript.record(Direction::Send, body);
            let mut rest = &line[..];
            while !broken && !rest.is_empty() {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                // SAFETY: write from a live slice to a descriptor this thread owns.
                let n = unsafe { libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()) };
                if n >= 0 {
                    rest = &rest[n as usize..];
                    continue;
                }
                match std::io::Error::last_os_error().kind() {
                    std::io::ErrorKind::WouldBlock => {
                        let mut pfd =
                            libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                        // SAFETY: poll on one pollfd.
                        unsafe { libc::poll(&mut pfd, 1, PIPE_SLICE.as_millis() as i32) };
                    }
                    std::io::ErrorKind::Interrupted => {}
                    _ => broken = true,
                }
            }
        }
        // Dropping the descriptor here closes the pipe: the worker sees end of file.
    })
}

/// The program's path: as given when it has a slash, else the first executable match in the
/// `PATH` the worker gets.
fn resolve_program(command: &WorkerCommand, env: &[(String, String)]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    if command.program.contains('/') {
        return Ok(PathBuf::from(&command.program));
    }
    let path = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str()).unwrap_or("");
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let candidate = std::path::Path::new(dir).join(&command.program);
        if std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        {
            return Ok(candidate);
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::NotFound, "not found on PATH"))
}

impl WorkerProcess {
    /// Spawns the worker below its own reaper, in a new process group, recording its lines into
    /// `transcript`.
    pub fn spawn(command: &WorkerCommand, transcript: Transcript) -> Result<Self, HarnessError> {
        let spawn_error = |source| HarnessError::Spawn { command: command.display(), source };
        let env = command.environment();
        let path = resolve_program(command, &env).map_err(spawn_error)?;
        let argv: Vec<String> =
            std::iter::once(&command.program).chain(&command.args).cloned().collect();
        let plan = crate::reaper::ExecPlan::new(&path, &argv, &env, command.cwd.as_deref())
            .map_err(spawn_error)?;
        let mut reaped = crate::reaper::spawn(&plan).map_err(spawn_error)?;
        let pgid = reaped.worker;
        let (tx, events) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let stdout = reaped.stdout.take().expect("stdout is piped");
        let stderr = reaped.stderr.take().expect("stderr is piped");
        spawn_reader(
            stdout,
            Direction::Recv,
            transcript.clone(),
            tx.clone(),
            queued.clone(),
            stop.clone(),
        );
        spawn_reader(
            stderr,
            Direction::Stderr,
            transcript.clone(),
            tx,
            queued.clone(),
            stop.clone(),
        );
        let stdin = reaped.stdin.take().expect("stdin is piped");
        let (line_tx, line_rx) = mpsc::channel::<Vec<u8>>();
        let writer = spawn_writer(stdin, line_rx, transcript.clone(), stop.clone());
        Ok(WorkerProcess {
            reaped,
            pgid,
            stdin: Some(line_tx),
            writer: Some(writer),
            events,
            queued,
            stop,
            status: None,
            exited_at: None,
            closed_sent: false,
            transcript,
        })
    }

    /// The worker's pid, which is also its process-group id.
    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// The transcript this process records into.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Queues raw bytes for the worker's stdin (include the `\n`). False once stdin is closed.
    pub fn send(&self, bytes: Vec<u8>) -> bool {
        self.stdin.as_ref().is_some_and(|tx| tx.send(bytes).is_ok())
    }

    /// Closes stdin once every queued line is written.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the next reader event until `deadline`; `None` on timeout or when both readers
    /// are gone. Once the worker process has exited and its stdout stays open (a descendant
    /// holds it) for a short drain (100 ms) with nothing arriving, [`ProcEvent::StdoutClosed`] comes
    /// without end of file: the end of the worker is its process, not its pipe.
    pub fn next_event(&mut self, deadline: Instant) -> Option<ProcEvent> {
        if self.closed_sent {
            return None;
        }
        loop {
            let now = Instant::now();
            let slice = deadline.saturating_duration_since(now).min(Duration::from_millis(20));
            match self.events.recv_timeout(slice) {
                Ok(event) => {
                    let size = match &event {
                        ProcEvent::Stdout(b) => b.len() + QUEUED_LINE_OVERHEAD,
                        ProcEvent::LongLine { .. } => LONG_LINE_PREFIX + QUEUED_LINE_OVERHEAD,
                        _ => 0,
                    };
                    self.queued.fetch_sub(size, Ordering::AcqRel);
                    if event == ProcEvent::StdoutClosed {
                        self.closed_sent = true;
                    }
                    return Some(event);
                }
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.try_wait().is_some() {
                let exited_at = *self.exited_at.get_or_insert_with(Instant::now);
                if exited_at.elapsed() >= EXIT_DRAIN {
                    self.closed_sent = true;
                    return Some(ProcEvent::StdoutClosed);
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    /// The exit status, if the worker has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt as _;
        if self.status.is_none() {
            self.status = self.reaped.exit_status(Duration::ZERO).map(ExitStatus::from_raw);
        }
        self.status
    }

    /// Waits up to `timeout` for the worker to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt as _;
        if self.status.is_none() {
            self.status = self.reaped.exit_status(timeout).map(ExitStatus::from_raw);
        }
        self.status
    }

    /// Sends `signal` (`SIGTERM` or `SIGKILL`) to the worker's whole process group, through its
    /// reaper, which signals the group only while it is alive (its id is the worker's pid,
    /// which the kernel does not hand out again while a member of the group lives).
    pub fn signal_group(&mut self, signal: i32) {
        self.reaped.signal_group(signal);
        if signal == libc::SIGKILL {
            let deadline = Instant::now() + SIGTERM_GRACE;
            while self.group_alive() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// True while a process of the worker's group other than an exited worker is alive.
    pub fn group_alive(&mut self) -> bool {
        let pgid = self.pgid;
        if self.try_wait().is_none() {
            return true;
        }
        self.descendants().iter().any(|(pid, _)| process_group(*pid) == Some(pgid))
    }

    /// Every live process the worker started, at any depth, also the ones that left its
    /// process group or session (they are re-parented to the worker's reaper), as
    /// `(pid, command name)`; the worker itself is listed while it runs. Only the worker's own
    /// tree is read.
    pub fn descendants(&self) -> Vec<(i32, String)> {
        self.reaped.descendants()
    }

    /// Ends every process of the worker's tree (the worker included), waiting up to `timeout`;
    /// true when none is left.
    pub fn end_tree(&mut self, timeout: Duration) -> bool {
        self.reaped.end_tree(timeout)
    }

    /// The end of the shutdown ladder: close stdin, wait `grace`, SIGTERM the group, wait
    /// `term_grace`, SIGKILL the group. Returns how the worker ended and whether it left on its
    /// own.
    pub fn stop(&mut self, grace: Duration, term_grace: Duration) -> (Option<ExitStatus>, bool) {
        self.close_stdin();
        if let Some(status) = self.wait_exit(grace) {
            return (Some(status), true);
        }
        self.signal_group(libc::SIGTERM);
        if let Some(status) = self.wait_exit(term_grace) {
            return (Some(status), false);
        }
        self.signal_group(libc::SIGKILL);
        (self.wait_exit(SIGTERM_GRACE), false)
    }
}

/// The process group of `pid`, from `/proc/<pid>/stat` (a process of the worker's own tree).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name: state ppid pgrp …
    stat.rsplit(')').next()?.split_whitespace().nth(2)?.parse().ok()
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.close_stdin();
        // End the whole tree (the worker, its group, and whatever left the group), then stop
        // the pipe threads: none of them waits on a pipe past its stop flag.
        self.reaped.end_tree(SIGTERM_GRACE * 2);
        self.stop.store(true, Ordering::Release);
        self.reaped.finish();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// True while any process is left in process group `pgid` (asked of the kernel with signal 0;
/// no process table is scanned, nothing is signalled).
#[cfg(test)]
fn group_alive(pgid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> WorkerCommand {
        WorkerCommand::from_argv(&["sh".into(), "-c".into(), script.into()]).unwrap()
    }

    #[test]
    fn lines_are_recorded_both_ways_and_eof_ends_cat() {
        let t = Transcript::new("cat");
        let mut p = WorkerProcess::spawn(&sh("cat; echo oops >&2"), t.clone()).unwrap();
        assert!(p.send(b"hello\r\n".to_vec()));
        let deadline = Instant::now() + Duration::from_secs(300);
        assert_eq!(p.next_event(deadline), Some(ProcEvent::Stdout(b"hello\r".to_vec())));
        p.close_stdin();
        assert!(p.wait_exit(Duration::from_secs(300)).is_some());
        let dirs: Vec<_> = t.entries().iter().map(|e| e.dir).collect();
        assert!(dirs.starts_with(&[Direction::Send, Direction::Recv]));
    }

    #[test]
    fn a_worker_starts_with_default_signal_dispositions_as_the_host_gives_them() {
        // This test process ignores SIGQUIT, as a shell's background job does; the worker must
        // not inherit that (SigIgn bit 3 is SIGQUIT).
        // SAFETY: setting a disposition; no handler runs.
        unsafe { libc::signal(libc::SIGQUIT, libc::SIG_IGN) };
        let t = Transcript::new("sigign");
        let mut p = WorkerProcess::spawn(&sh("grep SigIgn /proc/self/status"), t).unwrap();
        let deadline = Instant::now() + Duration::from_secs(300);
        let line = match p.next_event(deadline) {
            Some(ProcEvent::Stdout(line)) => String::from_utf8(line).unwrap(),
            other => panic!("no SigIgn line: {other:?}"),
        };
        let mask =
            u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
        assert_eq!(mask & (1 << (libc::SIGQUIT - 1)), 0, "SIGQUIT ignored in the worker: {line}");
        assert!(p.wait_exit(Duration::from_secs(300)).is_some());
    }

    #[test]
    fn an_exit_is_reported_and_signals_kill() {
        let t = Transcript::new("exit");
        let mut p = WorkerProcess::spawn(&sh("exit 7"), t).unwrap();
        let status = p.wait_exit(Duration::from_secs(300)).expect("exited");
        assert_eq!(status.code(), Some(7));
        assert_eq!(p.try_wait().and_then(|s| s.code()), Some(7), "the status is kept");
        assert!(!p.group_alive(), "only the exited worker was in its group");
        drop(p);

        let mut killed = WorkerProcess::spawn(&sh("kill -9 $$"), Transcript::new("k")).unwrap();
        let status = killed.wait_exit(Duration::from_secs(300)).expect("exited");
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    }

    #[test]
    fn a_descendant_that_left_the_session_is_found_and_ended() {
        let t = Transcript::new("escape");
        // The daemon double-forks out of the worker's session and group, then the worker exits.
        let script = "setsid sh -c 'sleep 300 & exit 0' </dev/null >/dev/null 2>&1; echo started";
        let mut p = WorkerProcess::spawn(&sh(script), t).unwrap();
        assert!(p.wait_exit(Duration::from_secs(20)).is_some());
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut left = p.descendants();
        while left.iter().map(|(_, name)| name.as_str()).ne(["sleep"]) && Instant::now() < deadline
        {
            thread::sleep(Duration::from_millis(10));
            left = p.descendants();
        }
        assert!(left.iter().any(|(_, name)| name == "sleep"), "{left:?}");
        let pids: Vec<i32> = left.iter().map(|(pid, _)| *pid).collect();
        assert!(!p.group_alive(), "the daemon left the worker's group: {left:?}");
        assert!(p.end_tree(Duration::from_secs(20)));
        assert!(p.descendants().is_empty());
        for pid in pids {
            assert!(std::fs::metadata(format!("/proc/{pid}")).is_err(), "{pid} is still there");
        }
    }

    #[test]
    fn a_descendant_holding_stdout_does_not_hold_the_harness() {
        let t = Transcript::new("held");
        // The worker exits at once; its daemon keeps stdout open and never reads stdin.
        let script = "setsid sh -c 'sleep 300' & echo bye";
        let mut p = WorkerProcess::spawn(&sh(script), t).unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(60);
        let mut events = vec![];
        while let Some(event) = p.next_event(deadline) {
            events.push(event);
        }
        assert_eq!(events, [ProcEvent::Stdout(b"bye".to_vec()), ProcEvent::StdoutClosed]);
        // A lot queued for a stdin nobody reads: dropping still ends promptly.
        assert!(p.send(vec![b'x'; 1 << 20]));
        let dropped = Instant::now();
        drop(p);
        assert!(dropped.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn an_endless_line_is_measured_not_kept() {
        let t = Transcript::new("endless");
        let script = "head -c 40000000 /dev/zero | tr '\\0' 'a'; echo; echo '{}'";
        let mut p = WorkerProcess::spawn(&sh(script), t.clone()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        // Reported once while it grows past what is kept, then with its final length.
        match p.next_event(deadline) {
            Some(ProcEvent::LongLine { bytes, .. }) => assert!(bytes > MAX_KEPT_LINE),
            other => panic!("{other:?}"),
        }
        match p.next_event(deadline) {
            Some(ProcEvent::LongLine { prefix, bytes, units }) => {
                assert_eq!(bytes, 40_000_000);
                assert_eq!(units, 40_000_000);
                assert_eq!(prefix.len(), LONG_LINE_PREFIX);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.next_event(deadline), Some(ProcEvent::Stdout(b"{}".to_vec())));
        assert_eq!(t.entries()[0].elided_bytes, Some(40_000_000));
        assert_eq!(utf16_units("é😀".as_bytes()), 3);
    }

    #[test]
    fn many_workers_at_once_in_one_process_keep_to_their_own_pipes() {
        // Each reaper closes every descriptor but its own: a reaper forked while another
        // worker's pipes are open must not keep that worker's stdin open (it would never see
        // end of file).
        let threads: Vec<_> = (0..8)
            .map(|i| {
                thread::spawn(move || {
                    let t = Transcript::new(&format!("cat-{i}"));
                    let mut p = WorkerProcess::spawn(&sh("cat >/dev/null; echo done"), t).unwrap();
                    thread::sleep(Duration::from_millis(50));
                    p.close_stdin();
                    let deadline = Instant::now() + Duration::from_secs(60);
                    assert_eq!(p.next_event(deadline), Some(ProcEvent::Stdout(b"done".to_vec())));
                    assert!(p.wait_exit(Duration::from_secs(60)).is_some());
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn environment_is_host_like() {
        let mut c = sh("true");
        c.env.push(("TZ".into(), "Europe/Paris".into()));
        let env = c.environment();
        assert!(env.iter().any(|(k, _)| k == "PATH"));
        assert!(!env.iter().any(|(k, _)| k == "HOME"));
        assert_eq!(env.iter().filter(|(k, _)| k == "TZ").count(), 1);
        assert!(env.contains(&("TZ".into(), "Europe/Paris".into())));
    }

    #[test]
    fn stop_kills_a_worker_that_ignores_eof_and_the_group_is_empty_after() {
        let t = Transcript::new("stubborn");
        let mut p =
            WorkerProcess::spawn(&sh("trap '' TERM; while :; do sleep 0.05; done"), t).unwrap();
        let pid = p.pid();
        assert!(p.group_alive());
        let (status, on_its_own) = p.stop(Duration::from_millis(50), Duration::from_millis(50));
        assert!(status.is_some());
        assert!(!on_its_own);
        drop(p);
        assert!(!group_alive(pid));
    }

    #[test]
    fn spawn_failure_names_the_command() {
        let err = WorkerProcess::spawn(
            &WorkerCommand::from_argv(&["/nonexistent/worker".into()]).unwrap(),
            Transcript::new("x"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/worker"));
    }
}
