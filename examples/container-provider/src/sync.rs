//! Native `environmentSyncIn` / `environmentSyncOut` through the engine's archive API.
//!
//! * **Confinement.** Lease-side paths (syncIn targets, syncOut sources) must be absolute,
//!   without `.` or `..`, and strictly below the workspace; before a transfer, the path is
//!   resolved inside the container (`realpath -m`), so a symlink planted in the workspace
//!   cannot redirect it elsewhere. Host-side paths must be absolute.
//! * **syncIn** packs the host files as a tar stream ([`paperclip_sandbox_sdk::kit::tar::pack`]) straight into
//!   `PUT /containers/{id}/archive` of the target's parent directory. A directory target is
//!   removed first (destroy-then-replace); entries are owned by the lease user.
//! * **syncOut** streams `GET /containers/{id}/archive` straight into
//!   [`paperclip_sandbox_sdk::kit::tar::unpack`].
//! * **Order, post-upload commands, deadline** are the kit's ([`paperclip_sandbox_sdk::kit::transfer`]): operations,
//!   mappings and commands apply in array order and the first failure fails the call, naming
//!   the operation. Post-upload commands (syncIn only) run as `sh -c <command>` in their `cwd`
//!   (confined like targets; default the workspace), bounded by their `timeoutMs`; a non-zero
//!   exit fails the call. The whole call is bounded by the larger of `minimumTimeoutMs` and
//!   `syncTimeoutMs`; on expiry the transfer is dropped, a running command is killed, and the
//!   call fails as a timeout.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::query_parameters::{
    DownloadFromContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;
use paperclip_sandbox_protocol::methods::sync::{self as psync, SyncResult};
use paperclip_sandbox_sdk::kit::tar::{self as tarball, Rules, Transfer};
use paperclip_sandbox_sdk::kit::transfer::{self, Direction, SyncBackend};
use paperclip_sandbox_sdk::kit::{ErrorKind, KitError, Result};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::Settings;
use crate::engine::{Engine, EngineError};
use crate::exec::{self, ActiveExecs, ExecSpec};
use crate::lease::base_env;

/// Resolves a path inside the container and checks it stays below the workspace: `$1` the
/// workspace, `$2` the path; prints the resolved path.
const RESOLVE: &str = "r=$(realpath -m -- \"$2\") || exit 90; \
    case \"$r\" in \"$1\"/*) ;; *) exit 91 ;; esac; printf '%s' \"$r\"";

/// Like [`RESOLVE`], then prepares a syncIn target: `$3` is `directory` or `file`.
const PREPARE: &str = "r=$(realpath -m -- \"$2\") || exit 90; \
    case \"$r\" in \"$1\"/*) ;; *) exit 91 ;; esac; \
    p=$(dirname -- \"$r\"); mkdir -p -- \"$p\" || exit 92; \
    if [ \"$3\" = directory ] || [ -d \"$r\" ]; then rm -rf -- \"$r\" || exit 93; fi; printf '%s' \"$r\"";

fn engine_error(e: EngineError) -> KitError {
    let kind = if e.is_not_found() { ErrorKind::NotFound } else { ErrorKind::Io };
    let mut err = KitError::new(kind, e.to_string());
    if e.status.is_none() {
        err.os_error = Some(libc_eio());
    }
    err
}

impl From<exec::CommandError> for KitError {
    fn from(e: exec::CommandError) -> Self {
        engine_error(e.0)
    }
}

fn libc_eio() -> i32 {
    5 // EIO: the engine connection failed.
}

async fn resolve(
    engine: &Engine,
    settings: &Settings,
    container: &str,
    script: &str,
    args: &[&str],
) -> Result<String> {
    let mut argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        script.to_owned(),
        "sh".to_owned(),
        settings.workspace.clone(),
    ];
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    let out =
        exec::run_simple(engine, container, &settings.user(), argv).await.map_err(engine_error)?;
    match out.exit_code {
        Some(0) => Ok(out.output.stdout),
        Some(91) => {
            Err(KitError::new(ErrorKind::Confinement, "the path resolves outside the workspace"))
        }
        Some(code) => Err(KitError {
            exit_code: i32::try_from(code).ok(),
            ..KitError::new(
                ErrorKind::Io,
                format!("preparing the path in the container failed (exit {code})"),
            )
        }),
        None => Err(KitError::new(ErrorKind::Io, "preparing the path in the container failed")),
    }
}

fn rules(settings: &Settings, m: &psync::FileMapping) -> Result<Rules> {
    Rules::for_mapping(m, settings.uid, settings.gid)
}

fn split(path: &str) -> (String, String) {
    let p = Path::new(path);
    let parent = p.parent().map(|p| p.display().to_string()).unwrap_or_else(|| "/".to_owned());
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    (parent, name)
}

async fn sync_in_mapping(
    engine: &Engine,
    settings: &Settings,
    container: &str,
    m: &psync::FileMapping,
) -> Result<Transfer> {
    let directory = matches!(m.kind, psync::MappingKind::Directory);
    let target = transfer::sync_in_target(&settings.workspace, m)?;
    let rules = rules(settings, m)?;
    let kind = if directory { "directory" } else { "file" };
    let real = resolve(engine, settings, container, PREPARE, &[&target, kind]).await?;
    let (parent, name) = split(&real);
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    let source = PathBuf::from(&m.source_path);
    let packer = tokio::task::spawn_blocking(move || {
        tarball::pack(&source, &name, directory, &rules, tarball::ChannelWriter::new(tx))
    });
    let body =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let options = UploadToContainerOptionsBuilder::default().path(&parent).build();
    let upload = engine.docker().upload_to_container(
        container,
        Some(options),
        bollard::body_try_stream(body),
    );
    let uploaded = engine.bounded("upload archive", upload).await;
    let packed = packer
        .await
        .map_err(|e| KitError::new(ErrorKind::Io, format!("packing task failed: {e}")))?;
    // A packing error is the cause when both fail (the upload saw a truncated stream).
    let transfer = packed?;
    uploaded.map_err(engine_error)?;
    Ok(transfer)
}

async fn sync_out_mapping(
    engine: &Engine,
    settings: &Settings,
    container: &str,
    m: &psync::FileMapping,
) -> Result<Transfer> {
    let directory = matches!(m.kind, psync::MappingKind::Directory);
    let source = transfer::sync_out_source(&settings.workspace, m)?;
    let rules = rules(settings, m)?;
    let real = resolve(engine, settings, container, RESOLVE, &[&source]).await?;
    let options = DownloadFromContainerOptionsBuilder::default().path(&real).build();
    let mut stream = engine.docker().download_from_container(container, Some(options));
    // The first chunk tells whether the source exists before the host target is touched.
    let first = match engine.bounded("download archive", async { Ok(stream.next().await) }).await {
        Err(e) => return Err(engine_error(e)),
        Ok(None) => Bytes::new(),
        Ok(Some(Ok(b))) => b,
        Ok(Some(Err(e))) => {
            return Err(engine_error(EngineError::from_bollard("download archive", e)))
        }
    };
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(4);
    let target = PathBuf::from(&m.target_path);
    let unpacker = tokio::task::spawn_blocking(move || {
        tarball::unpack(tarball::ChannelReader::new(rx), &target, directory, &rules)
    });
    let mut pending = Some(first);
    loop {
        let chunk = match pending.take() {
            Some(b) => Ok(b),
            None => match stream.next().await {
                None => break,
                Some(Ok(b)) => Ok(b),
                Some(Err(e)) => Err(io::Error::other(
                    EngineError::from_bollard("download archive", e).to_string(),
                )),
            },
        };
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            break;
        }
    }
    drop(tx);
    unpacker
        .await
        .map_err(|e| KitError::new(ErrorKind::Io, format!("unpacking task failed: {e}")))?
}

async fn post_upload(
    engine: &Engine,
    settings: &Settings,
    container: &str,
    active: &ActiveExecs,
    c: &psync::PostUploadCommand,
    deadline: Instant,
) -> Result<()> {
    let spec = ExecSpec {
        argv: vec!["sh".to_owned(), "-c".to_owned(), c.command.clone()],
        env: base_env(settings),
        cwd: Some(transfer::post_upload_cwd(&settings.workspace, c)?),
        user: settings.user(),
        stdin: None,
        timeout: Some(transfer::post_upload_timeout(c, deadline)),
    };
    let out = exec::run(engine, container, spec, active, &mut (), std::future::pending()).await?;
    transfer::post_upload_outcome(out.output.timed_out, out.exit_code)
}

/// One lease container as a [`SyncBackend`].
struct Lease<'a> {
    engine: &'a Engine,
    settings: &'a Settings,
    container: &'a str,
    active: &'a ActiveExecs,
}

impl SyncBackend for Lease<'_> {
    async fn mapping(&self, direction: Direction, m: &psync::FileMapping) -> Result<Transfer> {
        match direction {
            Direction::In => sync_in_mapping(self.engine, self.settings, self.container, m).await,
            Direction::Out => sync_out_mapping(self.engine, self.settings, self.container, m).await,
        }
    }

    async fn post_upload(&self, c: &psync::PostUploadCommand, deadline: Instant) -> Result<()> {
        post_upload(self.engine, self.settings, self.container, self.active, c, deadline).await
    }
}

/// Applies `operations` to the lease `container` within `timeout`.
pub async fn sync(
    engine: &Engine,
    settings: &Settings,
    container: &str,
    active: &ActiveExecs,
    direction: Direction,
    operations: &[psync::SyncOperation],
    timeout: Duration,
) -> Result<SyncResult> {
    let lease = Lease { engine, settings, container, active };
    transfer::run_operations(&lease, direction, operations, timeout).await
}
