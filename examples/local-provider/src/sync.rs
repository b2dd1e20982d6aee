//! `environmentSyncIn` / `environmentSyncOut`: apply sync operations to a lease.
//!
//! - **Direction.** SyncIn copies from the host (any absolute path) into the lease (targets
//!   confined to the lease directory, strictly below it); SyncOut copies from the lease (sources
//!   confined) to the host (any absolute path). Confinement: [`crate::confine`].
//! - **Order.** Operations, their file mappings and their post-upload commands are applied
//!   strictly in array order, and the first failure fails the whole call with an error naming
//!   the operation (and the mapping or command index); nothing is reported as partial success.
//! - **Copies.** [`crate::copy`]: atomic-replace files, destroy-then-replace directories, modes,
//!   excludes, tar `-h` symlink semantics, bounded memory. A SyncOut that follows symlinks refuses
//!   links that lead out of the lease.
//! - **Post-upload commands** (SyncIn only; a SyncOut carrying any is refused) run after the
//!   operation's files land, each as `sh -c <command>` (never rewritten), in the lease's
//!   environment ([`crate::exec`]), in `cwd` (absolute, confined to the lease; default the lease
//!   directory), bounded by their `timeoutMs` and by the call's deadline. A non-zero exit fails
//!   the call.
//! - **Deadline**. The whole call is bounded by
//!   [`effective_timeout_ms`]`(minimumTimeoutMs, syncTimeoutMs)` = the larger of the two.
//!   `minimumTimeoutMs` must be a whole number from 1 to 1,800,000 (the protocol crate checks it).
//!   On expiry the copy stops at its next buffer, running commands are killed, and the call
//!   fails with [`ErrorKind::Timeout`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_protocol::methods::sync as psync;
use serde::Serialize;
use tokio::time::Instant;

use crate::beneath::{Anchor, Resolve};
use crate::confine::{confine, is_lease_root, Leaf};
use crate::copy::{copy_dir_mapping, copy_file_mapping, CopyOptions, Transfer};
use crate::error::{ErrorKind, LocalError, Result};
use crate::exec::{self, ExecRequest, ProcessGroups};
use crate::glob::Excludes;

/// The direction of a sync call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host → lease (`environmentSyncIn`).
    In,
    /// Lease → host (`environmentSyncOut`).
    Out,
}

/// A file mapping's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MappingKind {
    /// A single file (or symlink).
    File,
    /// A directory tree.
    Directory,
}

/// One file mapping of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMapping {
    /// Where to read.
    pub source_path: PathBuf,
    /// Where to write.
    pub target_path: PathBuf,
    /// File or directory.
    pub kind: MappingKind,
    /// POSIX permission bits for the files written.
    pub mode: Option<u32>,
    /// Exclude globs ([`crate::glob`]).
    pub exclude: Vec<String>,
    /// tar `-h`: copy link targets instead of links.
    pub follow_symlinks: bool,
}

/// A command run after an operation's files land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostUploadCommand {
    /// A shell command line, run as `sh -c <command>`.
    pub command: String,
    /// Absolute working directory inside the lease.
    pub cwd: Option<PathBuf>,
    /// Its own timeout.
    pub timeout_ms: Option<u64>,
}

/// One sync operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncOperation {
    /// Opaque id, echoed in the result.
    pub operation_id: String,
    /// Its mappings, applied in order.
    pub files: Vec<FileMapping>,
    /// Commands run after the files land (SyncIn).
    pub post_upload_commands: Vec<PostUploadCommand>,
}

/// What one operation transferred.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationResult {
    /// The operation's id.
    pub operation_id: String,
    /// Files and links written.
    pub files_transferred: u64,
    /// Bytes of file content written.
    pub bytes_transferred: u64,
}

/// The largest `mode` a mapping may carry: POSIX permission bits with setuid, setgid and
/// sticky (which are accepted but never applied).
pub const MAX_MODE: u32 = 0o7777;

fn operation_from_wire((i, op): (usize, &psync::SyncOperation)) -> Result<SyncOperation> {
    let mut files = Vec::with_capacity(op.files.len());
    for (j, f) in op.files.iter().enumerate() {
        if f.mode.is_some_and(|m| m > MAX_MODE) {
            return Err(LocalError::invalid(format!(
                "operations[{i}].files[{j}].mode must be POSIX permission bits (0 to 0o7777)"
            )));
        }
        let kind = match f.kind {
            psync::MappingKind::File => MappingKind::File,
            psync::MappingKind::Directory => MappingKind::Directory,
            other => {
                return Err(LocalError::invalid(format!("unsupported mapping kind {other:?}")))
            }
        };
        files.push(FileMapping {
            source_path: PathBuf::from(&f.source_path),
            target_path: PathBuf::from(&f.target_path),
            kind,
            mode: f.mode,
            exclude: f.exclude.clone().unwrap_or_default(),
            follow_symlinks: f.follow_symlinks.unwrap_or(false),
        });
    }
    Ok(SyncOperation {
        operation_id: op.operation_id.clone(),
        files,
        post_upload_commands: op
            .post_upload_commands()
            .iter()
            .map(|c| PostUploadCommand {
                command: c.command.clone(),
                cwd: c.cwd.as_ref().map(PathBuf::from),
                timeout_ms: c.timeout_ms,
            })
            .collect(),
    })
}

/// The core operations of a sync call's typed `operations`: a `mode` past [`MAX_MODE`] or a
/// mapping kind other than file and directory is an [`ErrorKind::InvalidParams`] error naming
/// its index.
pub fn operations_from_wire(operations: &[psync::SyncOperation]) -> Result<Vec<SyncOperation>> {
    operations.iter().enumerate().map(operation_from_wire).collect()
}

pub use paperclip_sandbox_sdk::kit::effective_sync_timeout_ms as effective_timeout_ms;

/// Apply `operations` to the lease at `lease_dir`, in order, within `timeout`.
pub async fn sync(
    direction: Direction,
    lease_dir: &Path,
    operations: Vec<SyncOperation>,
    timeout: Duration,
    groups: &ProcessGroups,
) -> Result<Vec<OperationResult>> {
    let abort = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + timeout;
    let work = run_operations(direction, lease_dir, operations, deadline, groups, abort.clone());
    match tokio::time::timeout_at(deadline, work).await {
        Ok(result) => result,
        Err(_) => {
            abort.store(true, Ordering::Relaxed);
            Err(LocalError::new(
                ErrorKind::Timeout,
                format!("sync did not finish within {} ms", timeout.as_millis()),
            ))
        }
    }
}

async fn run_operations(
    direction: Direction,
    lease_dir: &Path,
    operations: Vec<SyncOperation>,
    deadline: Instant,
    groups: &ProcessGroups,
    abort: Arc<AtomicBool>,
) -> Result<Vec<OperationResult>> {
    let lease = lease_dir.canonicalize().map_err(|e| LocalError::io("resolve the lease", e))?;
    let mut results = Vec::with_capacity(operations.len());
    for (k, op) in operations.into_iter().enumerate() {
        // The operation is named by its place in the params, never by the host's operationId.
        let tag = |msg: String| format!("operations[{k}].{msg}");
        if direction == Direction::Out && !op.post_upload_commands.is_empty() {
            return Err(LocalError::invalid(tag(
                "postUploadCommands are only valid in syncIn".into()
            )));
        }
        let mut total = Transfer::default();
        for (index, mapping) in op.files.iter().enumerate() {
            let t = transfer(direction, &lease, mapping.clone(), abort.clone())
                .await
                .map_err(|e| e.context(tag(format!("files[{index}]"))))?;
            total += t;
        }
        for (index, cmd) in op.post_upload_commands.iter().enumerate() {
            run_post_upload(&lease, cmd, deadline, groups)
                .await
                .map_err(|e| e.context(tag(format!("postUploadCommands[{index}]"))))?;
        }
        tracing::debug!(operation = %op.operation_id, files = total.files, bytes = total.bytes, "sync operation done");
        results.push(OperationResult {
            operation_id: op.operation_id,
            files_transferred: total.files,
            bytes_transferred: total.bytes,
        });
    }
    Ok(results)
}

/// `path` (confined, canonical, below `lease`) as its parent relative to the lease and its
/// last component.
fn split_in_lease<'a>(lease: &Path, path: &'a Path) -> Result<(&'a Path, &'a std::ffi::OsStr)> {
    let rel = path.strip_prefix(lease).map_err(|_| {
        LocalError::new(ErrorKind::Confinement, "the path is outside the lease directory")
    })?;
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(LocalError::new(ErrorKind::Confinement, "the path names the lease directory")),
    }
}

/// A failed resolution beneath the lease: a refusal (a symlink or an escape on the way) is a
/// confinement error.
fn beneath_error(what: &str, e: std::io::Error) -> LocalError {
    if crate::beneath::is_refusal(&e) {
        LocalError::new(
            ErrorKind::Confinement,
            format!("{what} goes through a symlink or leaves the lease directory"),
        )
    } else {
        LocalError::io(format!("resolve {what} in the lease"), e)
    }
}

fn require_absolute(path: &Path, what: &str) -> Result<()> {
    if !path.is_absolute() {
        return Err(LocalError::invalid(format!("{what} must be an absolute path")));
    }
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(LocalError::new(
            ErrorKind::Confinement,
            format!("{what} contains a `..` component"),
        ));
    }
    Ok(())
}

/// Resolve and copy one mapping on a blocking thread.
async fn transfer(
    direction: Direction,
    lease: &Path,
    mapping: FileMapping,
    abort: Arc<AtomicBool>,
) -> Result<Transfer> {
    // The path checks above are only as good as the moment they ran; the copy then goes
    // through directory descriptors opened beneath the lease without following any symlink
    // ([`crate::beneath`]), so a process flipping a directory into a symlink cannot move the
    // copy outside.
    let lease_dir = Anchor::open(lease).map_err(|e| LocalError::io("open the lease", e))?;
    let (source, target, links_confined_to, anchor) = match direction {
        Direction::In => {
            require_absolute(&mapping.source_path, "sourcePath")?;
            let target = confine(lease, &mapping.target_path, Leaf::NoFollow)?;
            if is_lease_root(lease, &target) {
                return Err(LocalError::new(
                    ErrorKind::Confinement,
                    "targetPath must be below the lease directory, not the lease directory itself",
                ));
            }
            let (parent, name) = split_in_lease(lease, &target)?;
            let anchor = lease_dir
                .dir_beneath(parent, Resolve::NoSymlinks, true)
                .map_err(|e| beneath_error("targetPath", e))?;
            (mapping.source_path.clone(), anchor.path().join(name), None, anchor)
        }
        Direction::Out => {
            require_absolute(&mapping.target_path, "targetPath")?;
            let follow_leaf = mapping.kind == MappingKind::Directory || mapping.follow_symlinks;
            let leaf = if follow_leaf { Leaf::Follow } else { Leaf::NoFollow };
            let source = confine(lease, &mapping.source_path, leaf)?;
            let (anchor, source) = if mapping.kind == MappingKind::Directory {
                let rel = source.strip_prefix(lease).unwrap_or(Path::new(""));
                let anchor = lease_dir
                    .dir_beneath(rel, Resolve::NoSymlinks, false)
                    .map_err(|e| beneath_error("sourcePath", e))?;
                let path = anchor.path();
                (anchor, path)
            } else {
                let (parent, name) = split_in_lease(lease, &source)?;
                let anchor = lease_dir
                    .dir_beneath(parent, Resolve::NoSymlinks, false)
                    .map_err(|e| beneath_error("sourcePath", e))?;
                let path = anchor.path().join(name);
                (anchor, path)
            };
            (source, mapping.target_path.clone(), Some(lease.to_path_buf()), anchor)
        }
    };
    let excludes = Excludes::new(&mapping.exclude)?;
    let task = tokio::task::spawn_blocking(move || {
        let opts = CopyOptions {
            mode: mapping.mode,
            excludes: &excludes,
            follow_symlinks: mapping.follow_symlinks,
            links_confined_to: links_confined_to.as_deref(),
            abort: &abort,
            // Out of the sandbox, a directory never brings setgid, sticky or world-writable
            // bits to the host.
            dir_mode_mask: match direction {
                Direction::In => 0o777,
                Direction::Out => 0o775,
            },
        };
        let copied = match mapping.kind {
            MappingKind::File => copy_file_mapping(&source, &target, &opts),
            MappingKind::Directory => copy_dir_mapping(&source, &target, &opts),
        };
        drop(anchor);
        copied
    });
    task.await.map_err(|e| LocalError::new(ErrorKind::Io, format!("copy task failed: {e}")))?
}

async fn run_post_upload(
    lease: &Path,
    cmd: &PostUploadCommand,
    deadline: Instant,
    groups: &ProcessGroups,
) -> Result<()> {
    let cwd = match &cmd.cwd {
        None => lease.to_path_buf(),
        Some(c) if c.is_absolute() => confine(lease, c, Leaf::Follow)?,
        Some(_) => return Err(LocalError::invalid("cwd must be an absolute path")),
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout =
        cmd.timeout_ms.filter(|&t| t > 0).map_or(left, |t| Duration::from_millis(t).min(left));
    let req = ExecRequest {
        command: "sh".into(),
        args: vec!["-c".into(), cmd.command.clone()],
        cwd: Some(cwd),
        timeout: Some(timeout),
        ..Default::default()
    };
    let out = exec::run(lease, req, Some(groups), &mut (), std::future::pending()).await?;
    if out.timed_out {
        return Err(LocalError::new(
            ErrorKind::Timeout,
            format!("timed out after {} ms", timeout.as_millis()),
        ));
    }
    if out.exit_code != Some(0) {
        let how = match (&out.exit_code, &out.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by {}", exec::signal_name(*sig)),
            (None, None) => "failed".to_string(),
        };
        let tail: String = {
            let chars: Vec<char> = out.stderr.trim_end().chars().collect();
            chars[chars.len().saturating_sub(2_000)..].iter().collect()
        };
        let err = LocalError::new(ErrorKind::CommandFailed, format!("command {how}: {tail}"));
        return Err(LocalError { exit_code: out.exit_code, ..err });
    }
    Ok(())
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
