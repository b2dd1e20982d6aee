//! Native `environmentSyncIn` / `environmentSyncOut`: tar streams over the exec subresource.
//!
//! * **Confinement.** Lease-side paths (syncIn targets, syncOut sources) must be absolute,
//!   without `.` or `..`, and strictly below the workspace; inside the Pod the path's existing
//!   part is resolved (`realpath`) before anything is written or read, so a symlink planted in
//!   the workspace cannot redirect a transfer elsewhere. Host-side paths must be absolute.
//! * **syncIn** packs the host files into a temporary tar file (the exec protocol before
//!   Kubernetes 1.29 cannot end stdin on its own, so the length must be known first; see
//!   [`crate::exec`]), then one exec resolves and prepares the target (a directory target is
//!   removed first: destroy-then-replace) and runs `tar -x` on exactly those bytes.
//! * **syncOut** is one exec that resolves the source and runs `tar -c`; its stdout streams
//!   into the host-side unpacker, which starts only once the first bytes arrived (a missing
//!   source never touches the host target).
//! * Tar rules (modes, excludes, symlinks, confinement of entries) are the SDK kit's
//!   ([`paperclip_sandbox_sdk::kit::tar`]).
//! * **Order, post-upload commands, deadline** are the kit's
//!   ([`paperclip_sandbox_sdk::kit::transfer`]): operations, mappings and commands apply in
//!   array order; the first failure fails the call, naming the operation. Post-upload commands
//!   run as `sh -c <command>` in their `cwd` (confined; default the workspace), bounded by their
//!   `timeoutMs`; a non-zero exit fails the call. The whole call is bounded by the larger of
//!   `minimumTimeoutMs` and `syncTimeoutMs`.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use paperclip_sandbox_protocol::methods::sync::{self as psync, SyncResult};
use paperclip_sandbox_sdk::kit::tar::{self as tarball, Rules, Transfer};
use paperclip_sandbox_sdk::kit::transfer::{self, Direction, SyncBackend};
use paperclip_sandbox_sdk::kit::{random_hex, ErrorKind, KitError, Result};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::cluster::ClusterError;
use crate::config::Settings;
use crate::exec::{self, ActiveExecs, ExecSpec, RawSink, Stdin, Stream, Target};
use crate::spec::base_env;

// busybox `realpath` takes no `--` (the paths are absolute, so none starts with `-`).

/// Resolves and prepares a syncIn target, then unpacks stdin: `$1` workspace, `$2` target,
/// `$3` `directory` or `file`. Exit 90: unresolvable, 91: outside the workspace, 92/93:
/// preparing failed.
const PREPARE_IN: &str = "w=$1; t=$2; k=$3; p=${t%/*}; n=${t##*/}; a=$p; \
    while [ -n \"$a\" ] && [ ! -e \"$a\" ] && [ ! -L \"$a\" ]; do a=${a%/*}; done; \
    [ -n \"$a\" ] || exit 91; \
    ra=$(realpath \"$a\") || exit 90; case \"$ra/\" in \"$w\"/*) ;; *) exit 91 ;; esac; \
    mkdir -p -- \"$p\" || exit 92; rp=$(realpath \"$p\") || exit 90; \
    case \"$rp/\" in \"$w\"/*) ;; *) exit 91 ;; esac; r=\"$rp/$n\"; \
    if [ -L \"$r\" ]; then rm -f -- \"$r\" || exit 93; \
    elif [ \"$k\" = directory ] || [ -d \"$r\" ]; then rm -rf -- \"$r\" || exit 93; fi; \
    exec tar -x -f - -C \"$rp\"";

/// Resolves a syncOut source and writes it as a tar stream: `$1` workspace, `$2` source.
const PACK_OUT: &str = "w=$1; r=$(realpath \"$2\" 2>/dev/null) || exit 90; \
    case \"$r\" in \"$w\"/*) ;; *) exit 91 ;; esac; cd -- \"${r%/*}\" || exit 90; \
    exec tar -c -f - -- \"${r##*/}\"";

fn cluster_error(e: ClusterError) -> KitError {
    let kind = if e.is_not_found() { ErrorKind::NotFound } else { ErrorKind::Io };
    let mut err = KitError::new(kind, e.to_string());
    if e.status.is_none() {
        err.os_error = Some(5); // EIO: the cluster connection failed.
    }
    err
}

impl From<exec::CommandError> for KitError {
    fn from(e: exec::CommandError) -> Self {
        cluster_error(e.0)
    }
}

/// Maps a failed script's exit code to the error it means.
fn script_failure(code: Option<i64>, stderr: &str, what: &str) -> KitError {
    match code {
        Some(90) => KitError::new(ErrorKind::NotFound, format!("{what} does not exist in the Pod")),
        Some(91) => {
            KitError::new(ErrorKind::Confinement, "the path resolves outside the workspace")
        }
        Some(code) => {
            let detail = stderr.lines().last().unwrap_or("").chars().take(200).collect::<String>();
            KitError {
                exit_code: i32::try_from(code).ok(),
                ..KitError::new(
                    ErrorKind::Io,
                    format!("tar in the Pod failed (exit {code}): {detail}"),
                )
            }
        }
        None => KitError::new(ErrorKind::Io, "tar in the Pod did not finish"),
    }
}

fn rules(settings: &Settings, m: &psync::FileMapping) -> Result<Rules> {
    Rules::for_mapping(m, settings.uid, settings.gid)
}

/// A temporary file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Collects stderr only.
#[derive(Default)]
struct Stderr(Vec<u8>);

impl RawSink for Stderr {
    async fn bytes(&mut self, stream: Stream, data: &[u8]) {
        if stream == Stream::Stderr && self.0.len() < 64 * 1024 {
            self.0.extend_from_slice(data);
        }
    }
}

async fn sync_in_mapping(
    target: Target<'_>,
    settings: &Settings,
    active: &ActiveExecs,
    m: &psync::FileMapping,
) -> Result<Transfer> {
    let directory = matches!(m.kind, psync::MappingKind::Directory);
    let dest = transfer::sync_in_target(&settings.workspace, m)?;
    let rules = rules(settings, m)?;
    let name = dest.rsplit('/').next().unwrap_or_default().to_owned();
    let tmp = TempFile(
        std::env::temp_dir().join(format!(".paperclip-kubernetes-sync-{}.tar", random_hex(8))),
    );
    let (source, path) = (PathBuf::from(&m.source_path), tmp.0.clone());
    let transfer = tokio::task::spawn_blocking(move || {
        let file =
            std::fs::File::create(&path).map_err(|e| KitError::io("creating the archive", e))?;
        let mut out = io::BufWriter::new(file);
        let t = tarball::pack(&source, &name, directory, &rules, &mut out)?;
        io::Write::flush(&mut out).map_err(|e| KitError::io("writing the archive", e))?;
        Ok::<_, KitError>(t)
    })
    .await
    .map_err(|e| KitError::new(ErrorKind::Io, format!("packing task failed: {e}")))??;
    let file =
        tokio::fs::File::open(&tmp.0).await.map_err(|e| KitError::io("reading the archive", e))?;
    let len = file.metadata().await.map_err(|e| KitError::io("reading the archive", e))?.len();
    let kind = if directory { "directory" } else { "file" };
    let spec = ExecSpec {
        argv: ["sh", "-c", PREPARE_IN, "sh", &settings.workspace, &dest, kind]
            .map(str::to_owned)
            .to_vec(),
        env: base_env(settings),
        cwd: settings.workspace.clone(),
        stdin: Some(Stdin { len, reader: Box::pin(file) }),
        timeout: None,
    };
    let mut stderr = Stderr::default();
    let out = exec::run_raw(target, spec, active, &mut stderr, std::future::pending())
        .await
        .map_err(cluster_error)?;
    match out.exit_code {
        Some(0) => Ok(transfer),
        code => {
            Err(script_failure(code, &String::from_utf8_lossy(&stderr.0), "the target's parent"))
        }
    }
}

/// Feeds a tar stream from stdout into the host-side unpacker, started on the first bytes.
struct Feed {
    target: PathBuf,
    directory: bool,
    rules: Option<Rules>,
    tx: Option<mpsc::Sender<io::Result<Bytes>>>,
    unpacker: Option<JoinHandle<Result<Transfer>>>,
    stderr: Vec<u8>,
}

impl RawSink for Feed {
    async fn bytes(&mut self, stream: Stream, data: &[u8]) {
        if stream == Stream::Stderr {
            if self.stderr.len() < 64 * 1024 {
                self.stderr.extend_from_slice(data);
            }
            return;
        }
        if self.unpacker.is_none() {
            let Some(rules) = self.rules.take() else { return };
            let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(8);
            let (target, directory) = (self.target.clone(), self.directory);
            self.unpacker = Some(tokio::task::spawn_blocking(move || {
                tarball::unpack(tarball::ChannelReader::new(rx), &target, directory, &rules)
            }));
            self.tx = Some(tx);
        }
        if let Some(tx) = &self.tx {
            if tx.send(Ok(Bytes::copy_from_slice(data))).await.is_err() {
                // The unpacker stopped (its error is the answer); keep draining.
                self.tx = None;
            }
        }
    }
}

async fn sync_out_mapping(
    target: Target<'_>,
    settings: &Settings,
    active: &ActiveExecs,
    m: &psync::FileMapping,
) -> Result<Transfer> {
    let directory = matches!(m.kind, psync::MappingKind::Directory);
    let source = transfer::sync_out_source(&settings.workspace, m)?;
    let mut feed = Feed {
        target: PathBuf::from(&m.target_path),
        directory,
        rules: Some(rules(settings, m)?),
        tx: None,
        unpacker: None,
        stderr: Vec::new(),
    };
    let spec = ExecSpec {
        argv: ["sh", "-c", PACK_OUT, "sh", &settings.workspace, &source]
            .map(str::to_owned)
            .to_vec(),
        env: base_env(settings),
        cwd: settings.workspace.clone(),
        stdin: None,
        timeout: None,
    };
    let out = exec::run_raw(target, spec, active, &mut feed, std::future::pending()).await;
    // End of the stream for the unpacker, whatever happened.
    feed.tx = None;
    let unpacked = match feed.unpacker.take() {
        Some(u) => Some(
            u.await
                .map_err(|e| KitError::new(ErrorKind::Io, format!("unpacking task failed: {e}")))?,
        ),
        None => None,
    };
    let out = out.map_err(cluster_error)?;
    match (out.exit_code, unpacked) {
        (Some(0), Some(t)) => t,
        (Some(0), None) => Err(KitError::new(ErrorKind::Io, "tar in the Pod wrote nothing")),
        (code, _) => {
            Err(script_failure(code, &String::from_utf8_lossy(&feed.stderr), "sourcePath"))
        }
    }
}

async fn post_upload(
    target: Target<'_>,
    settings: &Settings,
    active: &ActiveExecs,
    c: &psync::PostUploadCommand,
    deadline: Instant,
) -> Result<()> {
    let spec = ExecSpec {
        argv: vec!["sh".to_owned(), "-c".to_owned(), c.command.clone()],
        env: base_env(settings),
        cwd: transfer::post_upload_cwd(&settings.workspace, c)?,
        stdin: None,
        timeout: Some(transfer::post_upload_timeout(c, deadline)),
    };
    let out = exec::run(target, spec, active, (), std::future::pending()).await?;
    transfer::post_upload_outcome(out.raw.timed_out, out.raw.exit_code)
}

/// One lease Pod as a [`SyncBackend`].
struct Lease<'a> {
    target: Target<'a>,
    settings: &'a Settings,
    active: &'a ActiveExecs,
}

impl SyncBackend for Lease<'_> {
    async fn mapping(&self, direction: Direction, m: &psync::FileMapping) -> Result<Transfer> {
        match direction {
            Direction::In => sync_in_mapping(self.target, self.settings, self.active, m).await,
            Direction::Out => sync_out_mapping(self.target, self.settings, self.active, m).await,
        }
    }

    async fn post_upload(&self, c: &psync::PostUploadCommand, deadline: Instant) -> Result<()> {
        post_upload(self.target, self.settings, self.active, c, deadline).await
    }
}

/// Applies `operations` to the lease Pod within `timeout`.
pub async fn sync(
    target: Target<'_>,
    settings: &Settings,
    active: &ActiveExecs,
    direction: Direction,
    operations: &[psync::SyncOperation],
    timeout: Duration,
) -> Result<SyncResult> {
    let lease = Lease { target, settings, active };
    transfer::run_operations(&lease, direction, operations, timeout).await
}
