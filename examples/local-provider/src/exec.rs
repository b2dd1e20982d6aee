//! Run one command inside a lease, on the SDK's command runner
//! ([`paperclip_sandbox_sdk::process::LocalCommand`]).
//!
//! - The runner gives the command its own **process group**, ends it on timeout, cancellation
//!   or when the [`run`] future is dropped, streams output with backpressure, bounds the
//!   result by its encoded size (the `stdoutTruncated` / `stderrTruncated` flags), and makes
//!   the group die with the worker.
//! - The environment is cleared, then set to a minimal base ([`base_env`]: `PATH`,
//!   `HOME=<lease dir>`, `TMPDIR=<lease dir>/.tmp`, `XDG_CACHE_HOME=<lease dir>/.cache`), then the
//!   request's `env` on top.
//! - `cwd` defaults to the lease directory and is **confined** to it ([`crate::confine`]); a
//!   relative `cwd` is taken relative to the lease directory.
//! - `stdin`, when given, is written and then closed; otherwise stdin is `/dev/null`.
//! - After the command itself exits, output still arriving from background processes that hold
//!   its pipes is drained for at most [`DEFAULT_DRAIN_AFTER_EXIT`]; those processes keep
//!   running (a command may start a server with `&`) until the lease is stopped, released or
//!   destroyed, or the worker ends.
//! - A command that cannot be found answers exit code 127 (126 when it is not executable) with a
//!   message on stderr, as a shell would, rather than an error.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_sandbox_protocol::methods::execute::ExecuteParams;
use paperclip_sandbox_sdk::process::{kill_process_group, process_group_exists, LocalCommand};
pub use paperclip_sandbox_sdk::process::{
    signal_name, CommandOutput, OutputSink, DEFAULT_DRAIN_AFTER_EXIT,
};

use crate::beneath::{Anchor, Resolve};
use crate::confine::{confine, Leaf};
use crate::error::{LocalError, Result};

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
    /// End the process group after this long.
    pub timeout: Option<Duration>,
}

impl<C> From<&ExecuteParams<C>> for ExecRequest {
    /// The request of an `environmentExecute` call (its `cwd` taken as a path).
    fn from(params: &ExecuteParams<C>) -> Self {
        Self {
            command: params.command.clone(),
            args: params.args().to_vec(),
            cwd: params.cwd.as_ref().map(PathBuf::from),
            env: params.env.clone().unwrap_or_default(),
            stdin: params.stdin.as_ref().map(|s| s.clone().into_bytes()),
            timeout: params.timeout(),
        }
    }
}

/// The process groups started in each lease, so that stop / release / destroy can end them.
#[derive(Debug, Clone, Default)]
pub struct ProcessGroups(Arc<Mutex<HashMap<PathBuf, Vec<u32>>>>);

impl ProcessGroups {
    /// Records `pgid` as started in `lease`, so its stop, release and destroy end it.
    pub(crate) fn register(&self, lease: &Path, pgid: u32) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let groups = map.entry(lease.to_path_buf()).or_default();
        groups.retain(|&g| process_group_exists(g));
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
        map.get(lease).map_or(0, |v| v.iter().filter(|&&g| process_group_exists(g)).count())
    }
}

fn kill_group(pgid: u32) -> bool {
    let live = process_group_exists(pgid);
    live && kill_process_group(pgid).is_ok()
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

/// Run `req` in `lease_dir` (see the module docs). Output goes to `sink` as it arrives;
/// `cancel` ends the process group when it completes (pass `std::future::pending()` for
/// none). `groups`, when given, records the process group so the lease's stop can end it.
pub async fn run<C>(
    lease_dir: &Path,
    req: ExecRequest,
    groups: Option<&ProcessGroups>,
    sink: &mut impl OutputSink,
    cancel: C,
) -> Result<CommandOutput>
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
    // The check above is a moment in time: the command starts in the directory opened
    // beneath the lease (symlinks that stay inside are followed, none that leave), by its
    // descriptor, so a directory swapped for a symlink meanwhile cannot move it out.
    let rel = cwd.strip_prefix(&lease_canon).unwrap_or(Path::new(""));
    let cwd_dir = Anchor::open(&lease_canon)
        .and_then(|lease| lease.dir_beneath(rel, Resolve::Beneath, false))
        .map_err(|e| {
            if crate::beneath::is_refusal(&e) {
                LocalError::new(
                    crate::error::ErrorKind::Confinement,
                    "cwd leaves the lease directory through a symlink",
                )
            } else {
                LocalError::io("open cwd in the lease", e)
            }
        })?;
    let tmp = lease_canon.join(".tmp");
    if let Err(e) = std::fs::create_dir_all(&tmp) {
        tracing::warn!(error = %e, "cannot create the lease's TMPDIR");
    }

    let mut cmd = LocalCommand::new(&req.command);
    cmd.args(&req.args)
        .current_dir(cwd_dir.path())
        .env_clear()
        .envs(base_env(&lease_canon))
        .envs(&req.env)
        .keep_background(true);
    if let Some(stdin) = req.stdin {
        cmd.stdin(stdin);
    }
    cmd.timeout(req.timeout);
    let on_spawn = |pgid: u32| {
        if let Some(groups) = groups {
            groups.register(&lease_canon, pgid);
        }
    };
    let ran = cmd.run(sink, cancel, on_spawn).await;
    drop(cwd_dir);
    match ran {
        Ok(out) => Ok(out),
        Err(e) => match CommandOutput::from_spawn_error(cmd.get_program(), &e) {
            Some(out) => {
                sink.chunk(paperclip_sandbox_sdk::OutputStream::Stderr, &out.stderr).await;
                Ok(out)
            }
            None => Err(LocalError::io(format!("run {:?}", req.command), e)),
        },
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
