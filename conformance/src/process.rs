//! Spawning a worker in its own process group, with piped stdio, a line-recording reader per
//! output stream, a writer thread for stdin, the shutdown ladder and kill-on-drop.
//!
//! The worker gets an environment like the published host gives it: `PATH`,
//! `NODE_PATH`, `NODE_ENV` (default `production`), `TZ` (default `UTC`), the two
//! `PAPERCLIP_DEPLOYMENT_*` variables and a `PAPERCLIP_PLUGIN_ID`, plus whatever the caller adds;
//! no `HOME`. On Linux the worker also gets `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with the
//! harness even when the harness is killed.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::transcript::{Direction, Transcript};

/// How often exit is polled while waiting for a worker to end.
const EXIT_POLL: Duration = Duration::from_millis(3);

/// How long the ladder waits after SIGTERM before SIGKILL, and how long a SIGKILLed group
/// gets to be reaped.
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);

/// What to run, and with which extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// Something a reader thread saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcEvent {
    /// One stdout line, without its `\n`.
    Stdout(Vec<u8>),
    /// One stderr line, without its `\n`.
    Stderr(Vec<u8>),
    /// stdout reached end of file.
    StdoutClosed,
}

/// A running worker process and its pipes.
#[derive(Debug)]
pub struct WorkerProcess {
    child: Child,
    pgid: i32,
    stdin: Option<Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
    events: Receiver<ProcEvent>,
    status: Option<ExitStatus>,
    /// The leader has been reaped (its pid may be handed out again unless a member of its
    /// group is left).
    reaped: bool,
    /// The group was seen empty after the leader was reaped: its id may belong to someone else
    /// now, so it is never signalled again.
    group_gone: bool,
    transcript: Transcript,
}

fn spawn_reader<R: Read + Send + 'static>(
    stream: R,
    dir: Direction,
    transcript: Transcript,
    tx: Sender<ProcEvent>,
) {
    thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        loop {
            let mut buf = Vec::new();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    transcript.record(dir, &buf);
                    let event = match dir {
                        Direction::Stderr => ProcEvent::Stderr(buf),
                        _ => ProcEvent::Stdout(buf),
                    };
                    if tx.send(event).is_err() {
                        // Nobody listens any more; keep draining so the worker never blocks.
                        continue;
                    }
                }
            }
        }
        if dir == Direction::Recv {
            let _ = tx.send(ProcEvent::StdoutClosed);
        }
    });
}

/// Between fork and exec: default signal dispositions and an empty mask (as the host gives its
/// workers), then the parent-death signal (Linux).
fn prepare_worker_process() -> std::io::Result<()> {
    // What Node (libuv) does for every child, and so the host for its workers: all signals
    // back to their default disposition and none blocked, whatever the harness inherited (a
    // shell's background job ignores SIGINT and SIGQUIT, and a worker would inherit that).
    // SAFETY: sigaction (through signal), sigemptyset and sigprocmask are async-signal-safe.
    unsafe {
        for sig in 1..=31 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag of the calling (child) process; it
        // is async-signal-safe, as required between fork and exec.
        let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl WorkerProcess {
    /// Spawns the worker in a new process group, recording its lines into `transcript`.
    pub fn spawn(command: &WorkerCommand, transcript: Transcript) -> Result<Self, HarnessError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .env_clear()
            .envs(command.environment())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        // SAFETY: the closure makes only async-signal-safe calls (see the function).
        unsafe {
            cmd.pre_exec(prepare_worker_process);
        }
        let mut child = cmd
            .spawn()
            .map_err(|source| HarnessError::Spawn { command: command.display(), source })?;
        let pgid = i32::try_from(child.id()).expect("pids fit in i32");
        let (tx, events) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        spawn_reader(stdout, Direction::Recv, transcript.clone(), tx.clone());
        spawn_reader(stderr, Direction::Stderr, transcript.clone(), tx);
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let (line_tx, line_rx) = mpsc::channel::<Vec<u8>>();
        let writer_transcript = transcript.clone();
        let writer = thread::spawn(move || {
            let mut broken = false;
            for line in line_rx {
                let body = line.strip_suffix(b"\n").unwrap_or(&line);
                writer_transcript.record(Direction::Send, body);
                if !broken && (stdin.write_all(&line).is_err() || stdin.flush().is_err()) {
                    broken = true;
                }
            }
            // Dropping stdin here closes the pipe: the worker sees end of file.
        });
        Ok(WorkerProcess {
            child,
            pgid,
            stdin: Some(line_tx),
            writer: Some(writer),
            events,
            status: None,
            reaped: false,
            group_gone: false,
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
    /// are gone.
    pub fn next_event(&self, deadline: Instant) -> Option<ProcEvent> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        self.events.recv_timeout(timeout).ok()
    }

    /// The exit status, if the worker has exited. An exited worker stays a zombie
    /// (`waitid` with `WNOWAIT`) until its group is asked for or this value is dropped, so its pid,
    /// the group id every signal of the harness goes to, cannot go to another process first.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = exited_unreaped(self.pgid);
        }
        self.status
    }

    /// Waits up to `timeout` for the worker to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(EXIT_POLL);
        }
    }

    /// Sends `signal` to the worker's whole process group, unless the group is known to be
    /// gone.
    ///
    /// The group's id is the worker's pid. The kernel does not hand that number out again while
    /// the worker is unreaped (an exited worker stays a zombie until the group is asked for,
    /// see [`try_wait`](Self::try_wait)) or while any member of its group lives. A signal goes
    /// out only right after the group was seen alive, and never once it was seen empty; after
    /// a `SIGKILL` the group is watched until it is empty (2 s at most), so the id is not left
    /// to be signalled later, when the number could belong to someone else.
    pub fn signal_group(&mut self, signal: i32) {
        if !self.group_alive() {
            return;
        }
        // SAFETY: kill has no memory-safety preconditions; a stale group gives ESRCH.
        if unsafe { libc::kill(-self.pgid, signal) } != 0 {
            self.group_gone = self.reaped;
            return;
        }
        if signal == libc::SIGKILL {
            let deadline = Instant::now() + Duration::from_secs(2);
            while self.group_alive() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
        }
    }

    /// True while a process of the worker's group other than an exited worker is alive: the
    /// exited worker is reaped first, so it is not counted (no process table is scanned).
    pub fn group_alive(&mut self) -> bool {
        if self.try_wait().is_some() && !self.reaped {
            let _ = self.child.wait();
            self.reaped = true;
        }
        if self.group_gone {
            return false;
        }
        let alive = group_alive(self.pgid);
        self.group_gone = self.reaped && !alive;
        alive
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

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.close_stdin();
        // Kill whatever is left in the group (the worker or its orphans), then reap.
        self.signal_group(libc::SIGKILL);
        if self.wait_exit(SIGTERM_GRACE).is_some() && !self.reaped {
            let _ = self.child.wait();
        }
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The exit status of the child `pid` once it has exited, leaving it unreaped (a zombie keeps
/// its pid, and so its process-group id, from being reused); `None` while it runs. The caller
/// reaps it later (`Child::wait`).
pub(crate) fn exited_unreaped(pid: i32) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt as _;
    // SAFETY: waitid writes only into the zeroed siginfo it is given; the accessors read the
    // fields the kernel filled for a child state change.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) != 0 || info.si_pid() == 0
        {
            return None;
        }
        let status = info.si_status();
        let raw = match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_KILLED => status & 0x7f,
            libc::CLD_DUMPED => (status & 0x7f) | 0x80,
            _ => return None,
        };
        Some(ExitStatus::from_raw(raw))
    }
}

/// True while any process is left in process group `pgid` (asked of the kernel with signal 0;
/// no process table is scanned, nothing is signalled).
pub fn group_alive(pgid: i32) -> bool {
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
    fn an_exited_worker_keeps_its_pid_until_dropped() {
        let t = Transcript::new("exit");
        let mut p = WorkerProcess::spawn(&sh("exit 7"), t).unwrap();
        let pid = p.pid();
        let status = p.wait_exit(Duration::from_secs(300)).expect("exited");
        assert_eq!(status.code(), Some(7));
        assert_eq!(p.try_wait().and_then(|s| s.code()), Some(7), "the status is kept");
        // Still a zombie: its pid (the group id the harness signals) is not free for reuse.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("pid still held");
        let state = stat.rsplit(')').next().unwrap().trim_start().chars().next();
        assert_eq!(state, Some('Z'));
        // Asking for the group reaps the worker: an exited worker is not a member that counts.
        assert!(!p.group_alive(), "only the exited worker was in its group");
        assert!(std::fs::metadata(format!("/proc/{pid}")).is_err(), "reaped once asked for");
        // The group was seen empty: its id is never signalled again.
        p.signal_group(libc::SIGKILL);
        assert!(p.group_gone);
        drop(p);

        let mut killed = WorkerProcess::spawn(&sh("kill -9 $$"), Transcript::new("k")).unwrap();
        let status = killed.wait_exit(Duration::from_secs(300)).expect("exited");
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
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
        // Orphaned members are reaped by init shortly after the SIGKILL.
        let deadline = Instant::now() + Duration::from_secs(300);
        while group_alive(pid) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
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
