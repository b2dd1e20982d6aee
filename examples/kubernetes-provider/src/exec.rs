//! Running one command in a lease Pod through the `exec` subresource (a WebSocket to the API
//! server, which the kubelet serves).
//!
//! * **No shell in between.** The command and its arguments reach the Pod as an argv; a small
//!   `sh` wrapper in front of them records its process id, changes to the working directory,
//!   sets the environment (`env -- NAME=value… /bin/sh -c 'exec "$@"' sh argv`; exec has no
//!   env or cwd of its own, and the inner shell keeps a command named `a=b` from being read
//!   as one more assignment) and removes the record when the command ends.
//! * **stdin.** Before Kubernetes 1.29 (protocol `v5.channel.k8s.io`) the exec protocol cannot
//!   close stdin alone: closing it closes the whole connection, output and exit status
//!   included. So the provider sends the length first (an argument of the wrapper), writes the
//!   bytes and keeps stdin open; the wrapper feeds the command through `head -c <length>`, so
//!   the command reads end-of-file exactly after the bytes the host sent, on any server.
//! * **Output** goes through the SDK's [`OutputCollector`]: streamed as it arrives (decoded as
//!   UTF-8 across chunk boundaries), kept for the result up to a bound on its encoded size so
//!   the answer always fits the host's line limit (beyond: `stdoutTruncated` /
//!   `stderrTruncated`; the stream keeps being drained).
//! * **Exit code** comes from the status channel (`NonZeroExitCode` carries it).
//! * **Timeout and cancellation really stop the command.** The runtime starts every exec as
//!   the leader of a new session, so its process id is also its process group; the wrapper
//!   writes it to `/tmp/.paperclip-exec/<tag>`. On expiry (or cancellation, release with
//!   `cancelActiveWork`, shutdown) a second exec sends `SIGKILL` to that whole group.
//! * **A Pod that goes away mid-command is an error, not a hang.** While a command runs, the
//!   Pod is looked at every [`WATCH_EVERY`]; deleted, being deleted or no longer running ends
//!   the call with an error, and a stream that ends without an exit status is one too.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::AttachParams;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use paperclip_sandbox_sdk::output::{CollectedOutput, OutputCollector, OutputSink};
use paperclip_sandbox_sdk::OutputStream;

use crate::cluster::{Cluster, ClusterError, ClusterResult};
use crate::spec::CONTAINER;

/// How often the Pod of a running command is looked at.
pub const WATCH_EVERY: Duration = Duration::from_secs(3);

/// How long the exec that kills commands may take.
const KILL_WITHIN: Duration = Duration::from_secs(10);

/// How long the stream of a killed command may take to end.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(10);

/// The wrapper: `$1` tag, `$2` working directory, `$3` stdin length (`-`: none), then
/// `NAME=value…`, [`EXEC_ARGS`] and the argv.
const WRAPPER: &str = "d=/tmp/.paperclip-exec; t=$1; c=$2; n=$3; shift 3; \
    { [ -d \"$d\" ] || mkdir -p \"$d\"; } 2>/dev/null && echo $$ >\"$d/$t\" 2>/dev/null; \
    if cd -- \"$c\"; then \
      if [ \"$n\" = - ]; then env -- \"$@\" </dev/null; else head -c \"$n\" | env -- \"$@\"; fi; rc=$?; \
    else rc=126; fi; rm -f \"$d/$t\"; exit $rc";

/// Kills the groups whose tags are the arguments.
const KILLER: &str = "d=/tmp/.paperclip-exec; for t; do \
    if [ -f \"$d/$t\" ]; then p=$(cat \"$d/$t\"); \
    kill -KILL \"-$p\" 2>/dev/null || kill -KILL \"$p\" 2>/dev/null; rm -f \"$d/$t\"; fi; done; exit 0";

/// Which output stream bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Stdout,
    /// stderr.
    Stderr,
}

/// Where a command's raw output bytes go (sync reads a tar stream this way).
pub trait RawSink: Send {
    /// Takes raw bytes of `stream`.
    fn bytes(&mut self, stream: Stream, data: &[u8]) -> impl Future<Output = ()> + Send;
}

/// The Pod a command runs in.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The connection.
    pub cluster: &'a Cluster,
    /// Namespace.
    pub namespace: &'a str,
    /// Pod name.
    pub pod: &'a str,
}

impl Target<'_> {
    fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.pod)
    }
}

/// Bytes for the command's stdin, with their length known in advance.
pub struct Stdin {
    /// Number of bytes `reader` yields.
    pub len: u64,
    /// The bytes.
    pub reader: Pin<Box<dyn AsyncRead + Send>>,
}

impl std::fmt::Debug for Stdin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdin").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Stdin {
    /// stdin from memory.
    pub fn bytes(bytes: Vec<u8>) -> Stdin {
        Stdin { len: bytes.len() as u64, reader: Box::pin(std::io::Cursor::new(bytes)) }
    }
}

/// One command to run.
#[derive(Debug, Default)]
pub struct ExecSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Environment entries.
    pub env: Vec<(String, String)>,
    /// Working directory inside the Pod.
    pub cwd: String,
    /// stdin, then end-of-file.
    pub stdin: Option<Stdin>,
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
}

/// How a command ended (raw).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawOutcome {
    /// Its exit code (`None` when killed for a timeout or a cancellation).
    pub exit_code: Option<i64>,
    /// Killed at its timeout.
    pub timed_out: bool,
    /// Killed because the call was cancelled.
    pub cancelled: bool,
}

/// How a command ended, with its output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutcome {
    /// Exit code, timeout, cancellation.
    pub raw: RawOutcome,
    /// stdout and stderr, bounded (with the timeout and cancellation marked).
    pub output: CollectedOutput,
}

/// The commands running in each Pod: what `cancelActiveWork` and shutdown kill.
#[derive(Debug, Clone, Default)]
pub struct ActiveExecs(Arc<Mutex<HashMap<String, HashSet<String>>>>);

impl ActiveExecs {
    fn add(&self, key: &str, tag: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(key.to_owned()).or_default().insert(tag.to_owned());
    }

    fn remove(&self, key: &str, tag: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(set) = map.get_mut(key) {
            set.remove(tag);
            if set.is_empty() {
                map.remove(key);
            }
        }
    }

    fn tags(&self, key: &str) -> Vec<String> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// Kills every command this worker runs in the Pod; the number killed.
    pub async fn kill_all(&self, target: Target<'_>) -> usize {
        let tags = self.tags(&target.key());
        if tags.is_empty() {
            return 0;
        }
        if let Err(e) = kill_tags(target, &tags).await {
            tracing::warn!(pod = target.pod, error = %e, "killing the running commands failed");
        }
        tags.len()
    }
}

/// Hands raw output to an [`OutputCollector`] (which streams it to `sink`).
struct Collecting<S> {
    sink: S,
    collector: OutputCollector,
}

impl<S: OutputSink> RawSink for Collecting<S> {
    async fn bytes(&mut self, stream: Stream, data: &[u8]) {
        let stream = match stream {
            Stream::Stdout => OutputStream::Stdout,
            Stream::Stderr => OutputStream::Stderr,
        };
        self.collector.feed(&mut self.sink, stream, data).await;
    }
}

/// Sends `SIGKILL` to the process groups recorded under `tags`.
pub async fn kill_tags(target: Target<'_>, tags: &[String]) -> ClusterResult<()> {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), KILLER.to_owned(), "sh".to_owned()];
    argv.extend(tags.iter().cloned());
    let mut discard = Discarding;
    let kill =
        Box::pin(attach(target, argv, None, &mut discard, None, None, std::future::pending()));
    match tokio::time::timeout(KILL_WITHIN, kill).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(ClusterError {
            operation: "exec",
            status: None,
            reason: "the kill did not finish".into(),
        }),
    }
}

struct Discarding;

impl RawSink for Discarding {
    async fn bytes(&mut self, _: Stream, _: &[u8]) {}
}

/// A command of [`run`] that could not be run: the cluster call that failed.
#[derive(Debug, Clone)]
pub struct CommandError(pub ClusterError);

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CommandError {}

/// Runs `spec` (see the module docs); `sink` receives decoded output as it arrives; `cancel`
/// completing kills the command.
pub async fn run(
    target: Target<'_>,
    spec: ExecSpec,
    active: &ActiveExecs,
    sink: impl OutputSink,
    cancel: impl Future<Output = ()>,
) -> Result<ExecOutcome, CommandError> {
    let mut collecting = Collecting { sink, collector: OutputCollector::new() };
    let raw = run_raw(target, spec, active, &mut collecting, cancel).await.map_err(CommandError)?;
    if raw.timed_out {
        collecting.collector.mark_timed_out();
    }
    if raw.cancelled {
        collecting.collector.mark_cancelled();
    }
    let output = collecting.collector.finish(&mut collecting.sink).await;
    Ok(ExecOutcome { raw, output })
}

/// The argv of the exec that runs `spec` through the [`WRAPPER`] under `tag`.
fn wrapper_argv(tag: &str, spec: &ExecSpec) -> Vec<String> {
    let length = spec.stdin.as_ref().map_or_else(|| "-".to_owned(), |s| s.len.to_string());
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), WRAPPER.to_owned(), "sh".to_owned()];
    argv.extend([tag.to_owned(), spec.cwd.clone(), length]);
    argv.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
    // `env` reads every leading argument with a `=` as an assignment, the command's name
    // included (`./a=b`): a shell that execs its arguments ends the assignments first.
    argv.extend(EXEC_ARGS.iter().map(|s| (*s).to_owned()));
    argv.extend(spec.argv.iter().cloned());
    argv
}

/// What `env` runs after the assignments: a shell that execs its arguments (the command and
/// its arguments, whatever their names), so none is read as an assignment.
const EXEC_ARGS: [&str; 4] = ["/bin/sh", "-c", "exec \"$@\"", "sh"];

/// Runs `spec` through the wrapper, handing raw output bytes to `sink`.
pub async fn run_raw(
    target: Target<'_>,
    spec: ExecSpec,
    active: &ActiveExecs,
    sink: &mut impl RawSink,
    cancel: impl Future<Output = ()>,
) -> ClusterResult<RawOutcome> {
    let tag = paperclip_sandbox_sdk::kit::random_hex(12);
    let argv = wrapper_argv(&tag, &spec);
    let key = target.key();
    active.add(&key, &tag);
    let out = attach(target, argv, spec.stdin, sink, spec.timeout, Some(&tag), cancel).await;
    active.remove(&key, &tag);
    out
}

/// Why a Pod can no longer run commands, or `None` while it can (or cannot be looked at).
async fn pod_gone(target: Target<'_>) -> Option<String> {
    match target.cluster.pod(target.namespace, target.pod).await {
        Ok(None) => Some("the lease Pod was deleted while the command ran".to_owned()),
        Ok(Some(p)) if p.metadata.deletion_timestamp.is_some() => {
            Some("the lease Pod is being deleted".to_owned())
        }
        Ok(Some(p)) => {
            let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
            (phase != "Running").then(|| format!("the lease Pod is no longer running ({phase})"))
        }
        Err(e) => {
            tracing::debug!(error = %e, "looking at the pod of a running command failed");
            None
        }
    }
}

fn gone(reason: String) -> ClusterError {
    ClusterError { operation: "exec", status: Some(404), reason }
}

/// The exit code the status channel reports (`Success`: 0; `NonZeroExitCode`: its cause).
fn exit_code(status: &Status) -> Option<i64> {
    if status.status.as_deref() == Some("Success") {
        return Some(0);
    }
    if status.reason.as_deref() != Some("NonZeroExitCode") {
        return None;
    }
    let causes = status.details.as_ref()?.causes.as_ref()?;
    let cause = causes.iter().find(|c| c.reason.as_deref() == Some("ExitCode"))?;
    cause.message.as_deref()?.parse().ok()
}

async fn attach(
    target: Target<'_>,
    argv: Vec<String>,
    stdin: Option<Stdin>,
    sink: &mut impl RawSink,
    timeout: Option<Duration>,
    tag: Option<&str>,
    cancel: impl Future<Output = ()>,
) -> ClusterResult<RawOutcome> {
    let ap = AttachParams::default()
        .container(CONTAINER)
        .stdin(stdin.is_some())
        .stdout(true)
        .stderr(true);
    let mut process = target
        .cluster
        .pods(target.namespace)
        .exec(target.pod, argv, &ap)
        .await
        .map_err(|e| ClusterError::from_kube("exec", e))?;
    let (Some(mut stdout), Some(mut stderr), Some(status)) =
        (process.stdout(), process.stderr(), process.take_status())
    else {
        return Err(ClusterError {
            operation: "exec",
            status: None,
            reason: "no output streams".into(),
        });
    };
    let writer_half = process.stdin();
    // stdin: copy everything, then keep the channel open (closing it would close the
    // connection on servers before 1.29; the wrapper's `head -c` gives the command its EOF).
    let writer = async move {
        if let (Some(mut w), Some(mut s)) = (writer_half, stdin) {
            if let Err(e) = tokio::io::copy(&mut s.reader, &mut w).await {
                tracing::debug!(error = %e, "stdin not fully written");
            }
            let _ = w.flush().await;
            // `w` stays alive (open) while this future waits.
            std::future::pending::<()>().await;
        }
        std::future::pending::<()>().await;
    };
    tokio::pin!(writer, cancel, status);
    let deadline = timeout.map(|t| Instant::now() + t);
    let expiry = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(expiry);
    let mut watch = tokio::time::interval(WATCH_EVERY);
    watch.reset();
    let mut outcome = RawOutcome::default();
    let mut kill_by: Option<Instant> = None;
    let (mut out_done, mut err_done) = (false, false);
    let (mut out_buf, mut err_buf) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    while !(out_done && err_done) {
        let drain = async {
            match kill_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            n = stdout.read(&mut out_buf), if !out_done => match n {
                Ok(0) | Err(_) => out_done = true,
                // Awaiting the sink is the backpressure.
                Ok(n) => sink.bytes(Stream::Stdout, &out_buf[..n]).await,
            },
            n = stderr.read(&mut err_buf), if !err_done => match n {
                Ok(0) | Err(_) => err_done = true,
                Ok(n) => sink.bytes(Stream::Stderr, &err_buf[..n]).await,
            },
            _ = &mut writer => {}
            _ = &mut expiry, if kill_by.is_none() => {
                outcome.timed_out = true;
                kill(target, tag).await;
                kill_by = Some(Instant::now() + DRAIN_AFTER_KILL);
            }
            _ = &mut cancel, if kill_by.is_none() => {
                outcome.cancelled = true;
                kill(target, tag).await;
                kill_by = Some(Instant::now() + DRAIN_AFTER_KILL);
            }
            _ = watch.tick(), if tag.is_some() => {
                if let Some(why) = pod_gone(target).await {
                    process.abort();
                    return Err(gone(why));
                }
            }
            _ = drain => {
                tracing::warn!(pod = target.pod, "the output of a killed command did not end; giving up on it");
                process.abort();
                return Ok(outcome);
            }
        }
    }
    if kill_by.is_some() {
        return Ok(outcome);
    }
    match tokio::time::timeout(Duration::from_secs(10), &mut status).await {
        Ok(Some(s)) => match exit_code(&s) {
            // Killed by a signal: by the command's own doing, or because the Pod is going
            // away (its containers are killed); the latter is an error, not a result.
            Some(code) if code > 128 && tag.is_some() => match pod_gone(target).await {
                Some(why) => Err(gone(why)),
                None => {
                    outcome.exit_code = Some(code);
                    Ok(outcome)
                }
            },
            Some(code) => {
                outcome.exit_code = Some(code);
                Ok(outcome)
            }
            None => Err(ClusterError {
                operation: "exec",
                status: None,
                reason: s.message.unwrap_or_default(),
            }),
        },
        _ => Err(gone(
            pod_gone(target)
                .await
                .unwrap_or_else(|| "the command's stream ended without an exit status".to_owned()),
        )),
    }
}

async fn kill(target: Target<'_>, tag: Option<&str>) {
    let Some(tag) = tag else { return };
    if let Err(e) = kill_tags(target, &[tag.to_owned()]).await {
        tracing::warn!(pod = target.pod, error = %e, "killing the command failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the wrapper's argv with this machine's `sh` and `env` (what the Pod's busybox
    /// does with it), `input` on stdin: stdout and the exit code.
    fn run_wrapper_here(spec: &ExecSpec, input: &[u8]) -> (String, Option<i32>) {
        use std::io::Write;
        let tag = format!("unit-{}", paperclip_sandbox_sdk::kit::random_hex(6));
        let argv = wrapper_argv(&tag, spec);
        let mut child = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code())
    }

    #[test]
    fn a_command_whose_name_has_an_equals_sign_runs_with_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = dir.path().to_str().unwrap().to_owned();
        let program = format!("{dir_path}/say=hi");
        std::fs::write(&program, "#!/bin/sh\necho \"ran $GREETING $1\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spec = ExecSpec {
            argv: vec![program, "a=b".to_owned()],
            env: vec![("GREETING".to_owned(), "x=y z".to_owned())],
            cwd: dir_path.clone(),
            ..ExecSpec::default()
        };
        assert_eq!(run_wrapper_here(&spec, b""), ("ran x=y z a=b\n".to_owned(), Some(0)));
        // A plain command, with stdin through the length prefix, still works.
        let spec = ExecSpec {
            argv: vec!["sh".to_owned(), "-c".to_owned(), "cat; echo \" $GREETING\"".to_owned()],
            env: vec![("GREETING".to_owned(), "hello".to_owned())],
            cwd: dir_path,
            stdin: Some(Stdin::bytes(b"in".to_vec())),
            ..ExecSpec::default()
        };
        assert_eq!(run_wrapper_here(&spec, b"input"), ("in hello\n".to_owned(), Some(0)));
    }

    #[test]
    fn exit_codes_come_from_the_status() {
        let ok: Status = serde_json::from_value(serde_json::json!({"status": "Success"})).unwrap();
        assert_eq!(exit_code(&ok), Some(0));
        let three: Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}
        }))
        .unwrap();
        assert_eq!(exit_code(&three), Some(3));
        let other: Status = serde_json::from_value(
            serde_json::json!({"status": "Failure", "reason": "InternalError"}),
        )
        .unwrap();
        assert_eq!(exit_code(&other), None);
    }
}
