//! Native `environmentSyncIn` / `environmentSyncOut` through the engine's archive API.
//!
//! * **Confinement.** Lease-side paths (syncIn targets, syncOut sources) must be absolute,
//!   without `.` or `..`, and strictly below the workspace; before a transfer, the path is
//!   resolved inside the container (`realpath -m`), so a symlink planted in the workspace
//!   cannot redirect it elsewhere. Host-side paths must be absolute.
//! * **syncIn** packs the host files as a tar stream ([`crate::tarball::pack`]) straight into
//!   `PUT /containers/{id}/archive` of the target's parent directory. A directory target is
//!   removed first (destroy-then-replace); entries are owned by the lease user.
//! * **syncOut** streams `GET /containers/{id}/archive` straight into
//!   [`crate::tarball::unpack`].
//! * **Order, post-upload commands, deadline.** Operations, mappings and commands apply in
//!   array order and the first failure fails the call, naming the operation. Post-upload
//!   commands (syncIn only) run as `sh -c <command>` in their `cwd` (confined like targets;
//!   default the workspace), bounded by their `timeoutMs`; a non-zero exit fails the call. The
//!   whole call is bounded by the larger of `minimumTimeoutMs` and `syncTimeoutMs`; on expiry
//!   the transfer is dropped, a running command is killed, and the call fails as a timeout.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use bollard::query_parameters::{
    DownloadFromContainerOptionsBuilder, UploadToContainerOptionsBuilder,
};
use bytes::Bytes;
use futures_util::StreamExt;
use paperclip_sandbox_protocol::methods::sync::{self as psync, SyncOperationResult, SyncResult};
use paperclip_sandbox_sdk::kit::Excludes;
use paperclip_sandbox_sdk::kit::{ErrorKind, KitError, Result};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::Settings;
use crate::engine::{Engine, EngineError};
use crate::exec::{self, ActiveExecs, ExecSpec};
use crate::lease::base_env;
use crate::tarball::{self, Rules, Transfer};

/// The direction of a sync call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host → lease.
    In,
    /// Lease → host.
    Out,
}

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

fn libc_eio() -> i32 {
    5 // EIO: the engine connection failed.
}

/// Lexical confinement: absolute, normalized, strictly below `root`.
pub fn confine_lexically(root: &str, path: &str, what: &str) -> Result<String> {
    let p = Path::new(path);
    let ok = p.is_absolute()
        && path.split('/').skip(1).all(|c| !c.is_empty() && c != "." && c != "..")
        && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !path.ends_with('/')
        && p.starts_with(root)
        && p != Path::new(root);
    if !ok {
        return Err(KitError::new(
            ErrorKind::Confinement,
            format!("{what} must be an absolute path strictly inside the workspace"),
        ));
    }
    Ok(path.to_owned())
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
    Ok(Rules {
        mode: m.mode,
        excludes: Excludes::new(m.exclude.as_deref().unwrap_or_default())?,
        follow_symlinks: m.follow_symlinks(),
        uid: u64::from(settings.uid),
        gid: u64::from(settings.gid),
    })
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
    let target = confine_lexically(&settings.workspace, &m.target_path, "targetPath")?;
    if !Path::new(&m.source_path).is_absolute() {
        return Err(KitError::invalid("sourcePath must be an absolute path"));
    }
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
    let source = confine_lexically(&settings.workspace, &m.source_path, "sourcePath")?;
    if !Path::new(&m.target_path).is_absolute() {
        return Err(KitError::invalid("targetPath must be an absolute path"));
    }
    if m.follow_symlinks() {
        return Err(KitError::invalid(
            "followSymlinks is not supported on syncOut from a container: links are returned as links",
        ));
    }
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
    let cwd = match &c.cwd {
        None => settings.workspace.clone(),
        Some(cwd) if cwd == &settings.workspace => cwd.clone(),
        Some(cwd) => confine_lexically(&settings.workspace, cwd, "postUploadCommands[].cwd")?,
    };
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout =
        c.timeout_ms.filter(|&t| t > 0).map(Duration::from_millis).map_or(left, |t| t.min(left));
    let spec = ExecSpec {
        argv: vec!["sh".to_owned(), "-c".to_owned(), c.command.clone()],
        env: base_env(settings),
        cwd: Some(cwd),
        user: settings.user(),
        stdin: None,
        timeout: Some(timeout),
    };
    let out = exec::run(engine, container, spec, active, &mut (), std::future::pending())
        .await
        .map_err(engine_error)?;
    if out.output.timed_out {
        return Err(KitError::new(ErrorKind::Timeout, "a post-upload command timed out"));
    }
    match out.exit_code {
        Some(0) => Ok(()),
        code => Err(KitError {
            exit_code: code.and_then(|c| i32::try_from(c).ok()),
            ..KitError::new(
                ErrorKind::CommandFailed,
                format!(
                    "a post-upload command exited with {}",
                    code.map_or("no code".to_owned(), |c| c.to_string())
                ),
            )
        }),
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
    let deadline = Instant::now() + timeout;
    let work = async {
        let mut results = Vec::with_capacity(operations.len());
        for op in operations {
            if direction == Direction::Out && !op.post_upload_commands().is_empty() {
                return Err(KitError::invalid(
                    "a syncOut operation cannot carry postUploadCommands",
                ));
            }
            let mut total = Transfer::default();
            for (i, m) in op.files.iter().enumerate() {
                let t = match direction {
                    Direction::In => sync_in_mapping(engine, settings, container, m).await,
                    Direction::Out => sync_out_mapping(engine, settings, container, m).await,
                }
                .map_err(|e| e.context(format!("operation {} mapping {i}", op.operation_id)))?;
                total.files += t.files;
                total.bytes += t.bytes;
            }
            for (i, c) in op.post_upload_commands().iter().enumerate() {
                post_upload(engine, settings, container, active, c, deadline).await.map_err(
                    |e| e.context(format!("operation {} postUploadCommands[{i}]", op.operation_id)),
                )?;
            }
            results.push(SyncOperationResult::new(
                op.operation_id.clone(),
                total.files,
                total.bytes,
            ));
        }
        Ok(SyncResult::new(results))
    };
    // A post-upload command is bounded by the deadline itself and killed there; the grace
    // lets it report that before the transfer as a whole is dropped.
    match tokio::time::timeout_at(deadline + Duration::from_secs(2), work).await {
        Ok(r) => r,
        Err(_) => Err(KitError::new(
            ErrorKind::Timeout,
            format!("the sync did not finish within {} ms", timeout.as_millis()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_paths_are_confined_lexically() {
        assert!(confine_lexically("/workspace", "/workspace/a/b", "p").is_ok());
        for bad in [
            "/workspace",
            "/workspace/../etc",
            "/etc/passwd",
            "workspace/a",
            "/workspace/./a",
            "/workspacex/a",
            "/workspace/a/",
        ] {
            let e = confine_lexically("/workspace", bad, "p").unwrap_err();
            assert_eq!(e.kind, ErrorKind::Confinement, "{bad}");
        }
    }
}
