//! The order, confinement and deadline rules of a native sync call, for backends that move
//! files themselves (with [`super::tar`] or otherwise).
//!
//! * [`run_operations`] applies the operations, their mappings and their post-upload commands
//!   in array order; the first failure fails the call and names the operation (and mapping or
//!   command) by its index, never by its `operationId`; the whole call is bounded by one
//!   deadline.
//! * [`confine_lexically`] checks a lease-side path before it reaches the backend: absolute,
//!   normalized, strictly below the workspace. (A backend that can follow symlinks in the
//!   lease must still resolve the path there; this is the check that needs no round trip.)
//! * [`post_upload_cwd`], [`post_upload_timeout`] and [`post_upload_outcome`]: the working
//!   directory, the time limit and the verdict of one post-upload command.

use std::future::Future;
use std::path::{Component, Path};
use std::time::Duration;

use paperclip_sandbox_protocol::methods::sync::{
    FileMapping, PostUploadCommand, SyncOperation, SyncOperationResult, SyncResult,
};
use tokio::time::Instant;

use super::error::{ErrorKind, KitError, Result};
use super::tar::Transfer;

/// The direction of a sync call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Host → lease (`environmentSyncIn`).
    In,
    /// Lease → host (`environmentSyncOut`).
    Out,
}

/// How long [`run_operations`] waits past its deadline before it drops the work: a
/// post-upload command bounded by the deadline itself ([`post_upload_timeout`]) is killed
/// there, and this grace lets it report that before the transfer as a whole is dropped.
pub const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// Lexical confinement of a lease-side path: `path` must be absolute, without empty, `.` or
/// `..` components or a trailing `/`, and strictly below `root`. Otherwise a
/// [`ErrorKind::Confinement`] error naming `what` (the path is never quoted).
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

/// A syncIn mapping checked before anything moves: its lease-side `targetPath` confined
/// below `workspace` ([`confine_lexically`], returned), its host-side `sourcePath` absolute.
pub fn sync_in_target(workspace: &str, m: &FileMapping) -> Result<String> {
    let target = confine_lexically(workspace, &m.target_path, "targetPath")?;
    if !Path::new(&m.source_path).is_absolute() {
        return Err(KitError::invalid("sourcePath must be an absolute path"));
    }
    Ok(target)
}

/// A syncOut mapping from a lease that returns symlinks as links, checked before anything
/// moves: its lease-side `sourcePath` confined below `workspace` (returned), its host-side
/// `targetPath` absolute, and `followSymlinks` refused.
pub fn sync_out_source(workspace: &str, m: &FileMapping) -> Result<String> {
    let source = confine_lexically(workspace, &m.source_path, "sourcePath")?;
    if !Path::new(&m.target_path).is_absolute() {
        return Err(KitError::invalid("targetPath must be an absolute path"));
    }
    if m.follow_symlinks() {
        return Err(KitError::invalid(
            "followSymlinks is not supported on syncOut from this lease: links are returned as links",
        ));
    }
    Ok(source)
}

/// The working directory of a post-upload command: its `cwd` when that is the workspace or
/// confined below it ([`confine_lexically`]), else the workspace.
pub fn post_upload_cwd(workspace: &str, command: &PostUploadCommand) -> Result<String> {
    match &command.cwd {
        None => Ok(workspace.to_owned()),
        Some(cwd) if cwd == workspace => Ok(cwd.clone()),
        Some(cwd) => confine_lexically(workspace, cwd, "postUploadCommands[].cwd"),
    }
}

/// The time limit of a post-upload command: its `timeoutMs` (when positive), never past the
/// call's `deadline`.
pub fn post_upload_timeout(command: &PostUploadCommand, deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(Instant::now());
    command.timeout_ms.filter(|&t| t > 0).map(Duration::from_millis).map_or(left, |t| t.min(left))
}

/// The verdict of a post-upload command that ended: a [`ErrorKind::Timeout`] when it was
/// killed at its time limit, [`ErrorKind::CommandFailed`] with the exit code when it exited
/// other than 0 (or without a code), `Ok` for exit 0.
pub fn post_upload_outcome(timed_out: bool, exit_code: Option<i64>) -> Result<()> {
    if timed_out {
        return Err(KitError::new(ErrorKind::Timeout, "a post-upload command timed out"));
    }
    match exit_code {
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

/// A backend that moves the files of one sync mapping and runs one post-upload command;
/// [`run_operations`] applies a call's operations through it.
pub trait SyncBackend {
    /// Transfers one mapping in `direction`.
    fn mapping(
        &self,
        direction: Direction,
        mapping: &FileMapping,
    ) -> impl Future<Output = Result<Transfer>> + Send;

    /// Runs one post-upload command (syncIn only), within the call's `deadline` (see
    /// [`post_upload_timeout`]); [`post_upload_outcome`] is its verdict.
    fn post_upload(
        &self,
        command: &PostUploadCommand,
        deadline: Instant,
    ) -> impl Future<Output = Result<()>> + Send;
}

/// Applies `operations` in array order within `timeout`: each mapping through
/// [`SyncBackend::mapping`], then (syncIn only) each post-upload command through
/// [`SyncBackend::post_upload`]. A syncOut operation with post-upload commands is an
/// invalid-params error; the first failure ends the call with its error prefixed by its place
/// in the params, `operations[<k>].files[<i>]` or `operations[<k>].postUploadCommands[<i>]`
/// (never by the host's `operationId`, which is not quoted); work still running
/// [`DEADLINE_GRACE`] after the deadline is dropped and the call fails as a timeout.
pub async fn run_operations<B: SyncBackend + Sync>(
    backend: &B,
    direction: Direction,
    operations: &[SyncOperation],
    timeout: Duration,
) -> Result<SyncResult> {
    // Checked for every operation before any file moves.
    if direction == Direction::Out
        && operations.iter().any(|op| !op.post_upload_commands().is_empty())
    {
        return Err(KitError::invalid("a syncOut operation cannot carry postUploadCommands"));
    }
    let deadline = Instant::now() + timeout;
    let work = async {
        let mut results = Vec::with_capacity(operations.len());
        for (k, op) in operations.iter().enumerate() {
            let mut total = Transfer::default();
            for (i, m) in op.files.iter().enumerate() {
                let t = backend
                    .mapping(direction, m)
                    .await
                    .map_err(|e| e.context(format!("operations[{k}].files[{i}]")))?;
                total.files += t.files;
                total.bytes += t.bytes;
            }
            for (i, c) in op.post_upload_commands().iter().enumerate() {
                backend
                    .post_upload(c, deadline)
                    .await
                    .map_err(|e| e.context(format!("operations[{k}].postUploadCommands[{i}]")))?;
            }
            results.push(SyncOperationResult::new(
                op.operation_id.clone(),
                total.files,
                total.bytes,
            ));
        }
        Ok(SyncResult::new(results))
    };
    match tokio::time::timeout_at(deadline + DEADLINE_GRACE, work).await {
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
    use paperclip_sandbox_protocol::methods::sync::MappingKind;

    /// Counts the mappings it is asked to move.
    struct Counting(std::sync::atomic::AtomicUsize);

    impl SyncBackend for Counting {
        async fn mapping(&self, _: Direction, _: &FileMapping) -> Result<Transfer> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(Transfer::default())
        }
        async fn post_upload(&self, _: &PostUploadCommand, _: Instant) -> Result<()> {
            Ok(())
        }
    }

    /// Before, the first operation's files moved before the second operation's
    /// post-upload command was refused.
    #[tokio::test]
    async fn a_sync_out_with_post_upload_commands_moves_nothing() {
        let mapping = FileMapping::new("/workspace/a", "/host/a", MappingKind::Directory);
        let first = SyncOperation::new("op-1", vec![mapping.clone()]);
        let mut second = SyncOperation::new("op-2", vec![mapping]);
        second.post_upload_commands = Some(vec![PostUploadCommand::new("true")]);
        let backend = Counting(Default::default());
        let e = run_operations(&backend, Direction::Out, &[first, second], Duration::from_secs(60))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
        assert_eq!(backend.0.load(std::sync::atomic::Ordering::SeqCst), 0, "no file moved");
    }

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
            "/workspace//a",
        ] {
            let e = confine_lexically("/workspace", bad, "p").unwrap_err();
            assert_eq!(e.kind, ErrorKind::Confinement, "{bad}");
            assert_eq!(e.message, "p must be an absolute path strictly inside the workspace");
        }
    }

    #[test]
    fn mappings_are_checked_on_both_sides() {
        let m = |src: &str, dst: &str| FileMapping::new(src, dst, MappingKind::File);
        assert_eq!(sync_in_target("/w", &m("/host/a", "/w/a")).unwrap(), "/w/a");
        assert_eq!(
            sync_in_target("/w", &m("/host/a", "/etc/a")).unwrap_err().kind,
            ErrorKind::Confinement
        );
        assert_eq!(
            sync_in_target("/w", &m("host/a", "/w/a")).unwrap_err().kind,
            ErrorKind::InvalidParams
        );
        assert_eq!(sync_out_source("/w", &m("/w/a", "/host/a")).unwrap(), "/w/a");
        assert_eq!(
            sync_out_source("/w", &m("/w/../a", "/host/a")).unwrap_err().kind,
            ErrorKind::Confinement
        );
        assert_eq!(
            sync_out_source("/w", &m("/w/a", "host")).unwrap_err().kind,
            ErrorKind::InvalidParams
        );
        let mut follow = m("/w/a", "/host/a");
        follow.follow_symlinks = Some(true);
        let e = sync_out_source("/w", &follow).unwrap_err();
        assert!(e.message.starts_with("followSymlinks is not supported"), "{}", e.message);
    }

    #[test]
    fn post_upload_cwd_timeout_and_outcome() {
        let mut c = PostUploadCommand::new("make");
        assert_eq!(post_upload_cwd("/w", &c).unwrap(), "/w");
        c.cwd = Some("/w/sub".into());
        assert_eq!(post_upload_cwd("/w", &c).unwrap(), "/w/sub");
        c.cwd = Some("/etc".into());
        assert_eq!(post_upload_cwd("/w", &c).unwrap_err().kind, ErrorKind::Confinement);

        let far = Instant::now() + Duration::from_secs(600);
        c.timeout_ms = Some(1_000);
        assert_eq!(post_upload_timeout(&c, far), Duration::from_secs(1));
        c.timeout_ms = Some(0);
        assert!(post_upload_timeout(&c, far) > Duration::from_secs(500));
        c.timeout_ms = Some(1_000_000);
        assert!(post_upload_timeout(&c, Instant::now()) <= Duration::from_millis(1));

        assert!(post_upload_outcome(false, Some(0)).is_ok());
        assert_eq!(post_upload_outcome(true, None).unwrap_err().kind, ErrorKind::Timeout);
        let e = post_upload_outcome(false, Some(3)).unwrap_err();
        assert_eq!((e.kind, e.exit_code), (ErrorKind::CommandFailed, Some(3)));
        assert_eq!(post_upload_outcome(false, None).unwrap_err().exit_code, None);
    }

    fn op(id: &str, files: usize, commands: usize) -> SyncOperation {
        let m = FileMapping::new("/src", "/w/dst", MappingKind::File);
        let mut op = SyncOperation::new(id, vec![m; files]);
        op.post_upload_commands = Some(vec![PostUploadCommand::new("true"); commands]);
        op
    }

    /// Logs what it is asked; its post-upload commands exit with `exit`; its mappings never
    /// end when `hang`.
    struct Fake {
        log: std::sync::Mutex<Vec<&'static str>>,
        exit: i64,
        hang: bool,
    }

    impl Fake {
        fn new(exit: i64, hang: bool) -> Self {
            Fake { log: Default::default(), exit, hang }
        }
    }

    impl SyncBackend for Fake {
        async fn mapping(&self, _d: Direction, _m: &FileMapping) -> Result<Transfer> {
            self.log.lock().unwrap().push("map");
            if self.hang {
                std::future::pending::<()>().await;
            }
            Ok(Transfer { files: 1, bytes: 10 })
        }

        async fn post_upload(&self, _c: &PostUploadCommand, _d: Instant) -> Result<()> {
            self.log.lock().unwrap().push("cmd");
            post_upload_outcome(false, Some(self.exit))
        }
    }

    #[tokio::test]
    async fn operations_apply_in_order_and_the_first_failure_names_its_place() {
        let ops = [op("a", 2, 1), op("b", 1, 0)];
        let fake = Fake::new(0, false);
        let minute = Duration::from_secs(60);
        let result = run_operations(&fake, Direction::In, &ops, minute).await.unwrap();
        assert_eq!(*fake.log.lock().unwrap(), ["map", "map", "cmd", "map"]);
        assert_eq!(result.operations.len(), 2);
        assert_eq!(
            (result.operations[0].files_transferred, result.operations[0].bytes_transferred),
            (2, 20)
        );
        let e =
            run_operations(&Fake::new(2, false), Direction::In, &ops, minute).await.unwrap_err();
        assert_eq!(
            e.message,
            "operations[0].postUploadCommands[0]: a post-upload command exited with 2"
        );
        let fake = Fake::new(0, false);
        let e = run_operations(&fake, Direction::Out, &ops, minute).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
        assert!(fake.log.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_mapping_past_the_deadline_and_its_grace_is_a_timeout() {
        let ops = [op("a", 1, 0)];
        let fake = Fake::new(0, true);
        let e =
            run_operations(&fake, Direction::Out, &ops, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Timeout);
        assert_eq!(e.message, "the sync did not finish within 5000 ms");
    }
}
