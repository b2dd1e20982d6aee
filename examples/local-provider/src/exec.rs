//! Run one command inside a lease.
//!
//! - The command runs in its own **process group** (`process_group(0)`); a timeout, a
//!   cancellation, or dropping the [`run`] future kills the whole group with `SIGKILL`, so
//!   grandchildren (`sh -c 'sleep 30 & sleep 30'`) die too.
//! - The environment is cleared, then set to a minimal base ([`base_env`]: `PATH`,
//!   `HOME=<lease dir>`, `TMPDIR=<lease dir>/.tmp`, `XDG_CACHE_HOME=<lease dir>/.cache`), then the
//!   request's `env` on top.
//! - `cwd` defaults to the lease directory and is **confined** to it ([`crate::confine`]); a
//!   relative `cwd` is taken relative to the lease directory.
//! - `stdin`, when given, is written and then closed; otherwise stdin is `/dev/null`.
//! - Output is streamed to a callback as it arrives and accumulated for the result, at most
//!   [`OUTPUT_CAP_BYTES`] per stream; beyond that the result is truncated and
//!   [`ExecOutcome::stdout_truncated`] / [`ExecOutcome::stderr_truncated`] say so (streaming goes
//!   on). Bytes that are not UTF-8 are replaced with U+FFFD (lossy conversion); a multi-byte
//!   character split across two reads is reassembled before conversion.
//! - After the command itself exits, output still arriving from background processes that hold
//!   its pipes is drained for at most [`DRAIN_AFTER_EXIT`]; those processes keep running (a
//!   command may start a server with `&`) until the lease is stopped, released or destroyed.
//! - A command that cannot be found answers exit code 127 (126 when it is not executable) with a
//!   message on stderr, as a shell would, rather than an error.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::confine::{confine, Leaf};
use crate::error::{LocalError, Result};

/// The most output kept in the result, per stream (64 MiB).
pub const OUTPUT_CAP_BYTES: usize = 64 * 1024 * 1024;

/// How long output is still collected after the command itself has exited.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

const READ_BUF: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// The program, looked up on the `PATH` of the final environment.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory (absolute inside the lease, or relative to it); default the lease.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of [`base_env`].
    pub env: BTreeMap<String, String>,
    /// Bytes written to stdin, which is then closed.
    pub stdin: Option<Vec<u8>>,
    /// Kill the process group after this long.
    pub timeout: Option<Duration>,
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl OutputStream {
    /// The wire name (`"stdout"` / `"stderr"`), as in `execute.log`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutcome {
    /// The exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it, for example `"SIGKILL"`.
    pub signal: Option<String>,
    /// True when the timeout killed it.
    pub timed_out: bool,
    /// True when a cancellation killed it.
    pub cancelled: bool,
    /// All of stdout (up to [`OUTPUT_CAP_BYTES`]).
    pub stdout: String,
    /// All of stderr (up to [`OUTPUT_CAP_BYTES`]).
    pub stderr: String,
    /// True when stdout exceeded the cap.
    pub stdout_truncated: bool,
    /// True when stderr exceeded the cap.
    pub stderr_truncated: bool,
}

/// The process groups started in each lease, so that stop / release / destroy can end them.
#[derive(Debug, Clone, Default)]
pub struct ProcessGroups(Arc<Mutex<HashMap<PathBuf, Vec<i32>>>>);

impl ProcessGroups {
    fn register(&self, lease: &Path, pgid: i32) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let groups = map.entry(lease.to_path_buf()).or_default();
        groups.retain(|&g| group_alive(g));
        groups.push(pgid);
    }

    /// Kill (`SIGKILL`) every process group started in `lease` that still exists; returns how
    /// many were signalled. `SIGKILL` cannot be caught, so once it is delivered the group runs
    /// no more code.
    pub fn kill_all(&self, lease: &Path) -> usize {
        let groups =
            self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(lease).unwrap_or_default();
        groups.into_iter().filter(|&g| kill_group(g)).count()
    }

    /// Kill (`SIGKILL`) every process group of every lease; returns how many were signalled.
    /// For worker shutdown: nothing the worker started outlives it.
    pub fn kill_everything(&self) -> usize {
        let all = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        all.into_values().flatten().filter(|&g| kill_group(g)).count()
    }

    /// The number of process groups of `lease` that still exist.
    pub fn live_count(&self, lease: &Path) -> usize {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(lease).map_or(0, |v| v.iter().filter(|&&g| group_alive(g)).count())
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks for existence; no memory is involved.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

fn kill_group(pgid: i32) -> bool {
    // SAFETY: kill(2) on a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, libc::SIGKILL) == 0 }
}

/// Kills the process group when dropped, unless disarmed.
struct GroupGuard {
    pgid: Option<i32>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }
}

/// The base environment of every command in `lease_dir`.
pub fn base_env(lease_dir: &Path) -> BTreeMap<String, String> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let lease = lease_dir.display().to_string();
    BTreeMap::from([
        ("PATH".to_string(), path),
        ("HOME".to_string(), lease.clone()),
        ("TMPDIR".to_string(), format!("{lease}/.tmp")),
        ("XDG_CACHE_HOME".to_string(), format!("{lease}/.cache")),
    ])
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

/// Incremental lossy UTF-8 decoding that keeps an incomplete trailing character for later.
#[derive(Debug, Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let cut = complete_prefix_len(&self.pending);
        let out = String::from_utf8_lossy(&self.pending[..cut]).into_owned();
        self.pending.drain(..cut);
        out
    }

    fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// The length of `buf` without a trailing, possibly incomplete, multi-byte sequence.
fn complete_prefix_len(buf: &[u8]) -> usize {
    let n = buf.len();
    for back in 1..=n.min(3) {
        let b = buf[n - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xF0..=0xF7 => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

struct Collected {
    bytes: Vec<u8>,
    truncated: bool,
    decoder: Utf8Stream,
}

impl Collected {
    fn new() -> Self {
        Self { bytes: Vec::new(), truncated: false, decoder: Utf8Stream::default() }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = OUTPUT_CAP_BYTES.saturating_sub(self.bytes.len());
        if chunk.len() > room {
            self.truncated = true;
        }
        self.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
}

/// Run `req` in `lease_dir` (see the module docs). `on_chunk` receives output as it arrives;
/// `cancel` kills the process group when it completes (pass `std::future::pending()` for none).
/// `groups`, when given, records the process group so the lease's stop can end it.
pub async fn run<C>(
    lease_dir: &Path,
    req: ExecRequest,
    groups: Option<&ProcessGroups>,
    mut on_chunk: impl FnMut(OutputStream, String),
    cancel: C,
) -> Result<ExecOutcome>
where
    C: Future<Output = ()>,
{
    let lease_canon = lease_dir
        .canonicalize()
        .map_err(|e| LocalError::io(format!("lease {}", lease_dir.display()), e))?;
    let cwd = match &req.cwd {
        None => lease_canon.clone(),
        Some(c) if c.is_absolute() => confine(lease_dir, c, Leaf::Follow)?,
        Some(c) => confine(lease_dir, &lease_canon.join(c), Leaf::Follow)?,
    };
    if !cwd.is_dir() {
        return Err(LocalError::invalid(format!("cwd {} is not a directory", cwd.display())));
    }
    let tmp = lease_canon.join(".tmp");
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        tracing::warn!(error = %e, "cannot create the lease's TMPDIR");
    }

    let mut cmd = tokio::process::Command::new(&req.command);
    cmd.args(&req.args)
        .current_dir(&cwd)
        .env_clear()
        .envs(base_env(&lease_canon))
        .envs(&req.env)
        .stdin(if req.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => return Err(LocalError::io(format!("spawn {:?}", req.command), e)),
            };
            let stderr = format!("local-provider: cannot run {:?}: {e}\n", req.command);
            on_chunk(OutputStream::Stderr, stderr.clone());
            return Ok(ExecOutcome { exit_code: Some(code), stderr, ..Default::default() });
        }
    };
    let pgid = child.id().map(|p| p as i32);
    let mut guard = GroupGuard { pgid };
    if let (Some(groups), Some(pgid)) = (groups, pgid) {
        groups.register(&lease_canon, pgid);
    }

    if let (Some(bytes), Some(mut stdin)) = (req.stdin, child.stdin.take()) {
        tokio::spawn(async move {
            // A command that exits without reading its stdin closes the pipe: not an error.
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }
    let (tx, mut rx) = mpsc::channel::<(OutputStream, Vec<u8>)>(16);
    if let Some(out) = child.stdout.take() {
        tokio::spawn(pump(out, OutputStream::Stdout, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump(err, OutputStream::Stderr, tx.clone()));
    }
    drop(tx);

    let far = Instant::now() + Duration::from_secs(365 * 86_400);
    let deadline = req.timeout.map(|t| Instant::now() + t);
    let mut out = Collected::new();
    let mut err = Collected::new();
    let mut status = None;
    let mut timed_out = false;
    let mut cancelled = false;
    let mut pipes_open = true;
    let mut drain_until: Option<Instant> = None;
    let mut cancel = std::pin::pin!(cancel);
    loop {
        if !pipes_open && status.is_some() {
            break;
        }
        let killed = timed_out || cancelled;
        tokio::select! {
            msg = rx.recv(), if pipes_open => match msg {
                Some((stream, bytes)) => {
                    let c = if stream == OutputStream::Stdout { &mut out } else { &mut err };
                    c.push(&bytes);
                    let text = c.decoder.push(&bytes);
                    if !text.is_empty() {
                        on_chunk(stream, text);
                    }
                }
                None => pipes_open = false,
            },
            st = child.wait(), if status.is_none() => {
                status = Some(st.map_err(|e| LocalError::io("wait for the command", e))?);
                drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if status.is_none() && !killed && deadline.is_some() => {
                tracing::debug!(pgid, "command timed out; killing its process group");
                pgid.map(kill_group);
                timed_out = true;
            }
            _ = &mut cancel, if status.is_none() && !killed => {
                tracing::debug!(pgid, "command cancelled; killing its process group");
                pgid.map(kill_group);
                cancelled = true;
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() => break,
        }
    }
    // Background processes may go on (see the module docs); only a kill ends the group here.
    if !(timed_out || cancelled) {
        guard.pgid = None;
    }
    drop(guard);
    for (stream, c) in [(OutputStream::Stdout, &mut out), (OutputStream::Stderr, &mut err)] {
        let tail = c.decoder.finish();
        if !tail.is_empty() {
            on_chunk(stream, tail);
        }
    }
    let status = status.expect("the loop ends only after the command exited");
    Ok(ExecOutcome {
        exit_code: status.code(),
        signal: status.signal().map(signal_name),
        timed_out,
        cancelled,
        stdout: String::from_utf8_lossy(&out.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&err.bytes).into_owned(),
        stdout_truncated: out.truncated,
        stderr_truncated: err.truncated,
    })
}

async fn pump(
    mut reader: impl tokio::io::AsyncRead + Unpin,
    stream: OutputStream,
    tx: mpsc::Sender<(OutputStream, Vec<u8>)>,
) {
    let mut buf = vec![0u8; READ_BUF];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send((stream, buf[..n].to_vec())).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
