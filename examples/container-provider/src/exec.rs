//! Running one command in a lease container through the engine's exec API.
//!
//! * **No shell in between.** The command and its arguments reach the container as an argv;
//!   a small `sh` wrapper in front of them only records its process id (see below) and
//!   removes that record when the command ends. `;`, `$()` and quotes in arguments arrive
//!   literally.
//! * **stdin** is attached when the host sends some: the bytes are written, then the write
//!   half of the connection is shut down, so the command reads end-of-file.
//! * **Output** goes through the SDK's [`OutputCollector`]: streamed as it arrives (decoded as
//!   UTF-8 without splitting a character between chunks) and kept for the result up to its
//!   encoded bound against the host's line limit; beyond that the result says
//!   `stdoutTruncated` / `stderrTruncated`, and the stream keeps being drained so the command
//!   never blocks on a full pipe.
//! * **Every engine request is bounded by the call's deadline** (the engine handle carries it,
//!   [`Engine::with_deadline`]); so is the wait for the output, after which the command is
//!   killed and the call answers that it ran out of time.
//! * **Timeout and cancellation really stop the command.** The engine runs every exec as the
//!   leader of a new session inside the container, so its process id is also its process
//!   group; the wrapper writes it to `/tmp/.paperclip-exec/<tag>`. On expiry (or when the call
//!   is cancelled, the lease released with `cancelActiveWork`, or the worker shut down) a
//!   second exec sends `SIGKILL` to that whole group, children included, and the first exec's
//!   stream is awaited until it ends.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use paperclip_sandbox_sdk::output::{CollectedOutput, OutputCollector, OutputSink};
use paperclip_sandbox_sdk::prelude::{ExecuteResult, OutputStream};

use crate::engine::{Engine, EngineError, EngineResult};

/// How long the stream of a killed command may take to end.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(10);

/// How long killing a command may take once the call's deadline has passed.
const DEADLINE_KILL: Duration = Duration::from_secs(2);

/// The directory (on the lease's `/tmp` tmpfs) where running commands record their group.
pub const EXEC_DIR: &str = "/tmp/.paperclip-exec";

/// The wrapper: `$1` is the tag, the rest is the command's argv.
const WRAPPER: &str = "d=/tmp/.paperclip-exec; t=$1; shift; \
    { [ -d \"$d\" ] || mkdir -p \"$d\"; } 2>/dev/null && echo $$ >\"$d/$t\" 2>/dev/null; \
    \"$@\"; rc=$?; rm -f \"$d/$t\"; exit $rc";

/// Kills the groups whose tags are the arguments.
const KILLER: &str = "d=/tmp/.paperclip-exec; for t; do \
    if [ -f \"$d/$t\" ]; then p=$(cat \"$d/$t\"); \
    kill -KILL \"-$p\" 2>/dev/null || kill -KILL \"$p\" 2>/dev/null; rm -f \"$d/$t\"; fi; done; exit 0";

/// One command to run.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// `NAME=value` entries.
    pub env: Vec<String>,
    /// Working directory inside the container.
    pub cwd: Option<String>,
    /// `uid:gid`.
    pub user: String,
    /// Bytes written to stdin, then end-of-file.
    pub stdin: Option<Vec<u8>>,
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutcome {
    /// Its exit code (`None` when it was killed for a timeout or a cancellation).
    pub exit_code: Option<i64>,
    /// Its output, bounded, with the truncation, timeout and cancellation flags.
    pub output: CollectedOutput,
}

impl ExecOutcome {
    /// The `environmentExecute` result: a command killed other than at its timeout ended by
    /// `SIGKILL`.
    pub fn into_execute_result(self) -> ExecuteResult {
        let killed = self.exit_code.is_none() && !self.output.timed_out;
        let signal = killed.then(|| "SIGKILL".to_owned());
        self.output.into_execute_result(self.exit_code, signal)
    }
}

/// The commands running in each container: what `cancelActiveWork`, stop and shutdown kill.
#[derive(Debug, Clone, Default)]
pub struct ActiveExecs(Arc<Mutex<HashMap<String, HashSet<String>>>>);

impl ActiveExecs {
    fn add(&self, container: &str, tag: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(container.to_owned()).or_default().insert(tag.to_owned());
    }

    fn remove(&self, container: &str, tag: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(set) = map.get_mut(container) {
            set.remove(tag);
            if set.is_empty() {
                map.remove(container);
            }
        }
    }

    /// Tags running in `container`.
    pub fn tags(&self, container: &str) -> Vec<String> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(container).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    /// Every container with a running command.
    pub fn containers(&self) -> Vec<String> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.keys().cloned().collect()
    }

    /// Kills every command this worker runs in `container`; the number killed.
    pub async fn kill_all(&self, engine: &Engine, container: &str, user: &str) -> usize {
        let tags = self.tags(container);
        if tags.is_empty() {
            return 0;
        }
        if let Err(e) = kill_tags(engine, container, user, &tags).await {
            tracing::warn!(container, error = %e, "killing the running commands failed");
        }
        tags.len()
    }
}

/// Sends `SIGKILL` to the process groups recorded under `tags`.
pub async fn kill_tags(
    engine: &Engine,
    container: &str,
    user: &str,
    tags: &[String],
) -> EngineResult<()> {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), KILLER.to_owned(), "sh".to_owned()];
    argv.extend(tags.iter().cloned());
    let spec = ExecSpec { argv, user: user.to_owned(), ..ExecSpec::default() };
    // Boxed: run_raw may call back here (never with a tag of its own, so it never recurses).
    let out =
        Box::pin(run_raw(engine, container, &spec, None, &mut (), std::future::pending())).await?;
    tracing::debug!(container, killed = tags.len(), exit = ?out.exit_code, "killed process groups");
    Ok(())
}

/// Runs a command and collects its output (no timeout, no registry): for the provider's own
/// short commands (sync preparation, readiness).
pub async fn run_simple(
    engine: &Engine,
    container: &str,
    user: &str,
    argv: Vec<String>,
) -> EngineResult<ExecOutcome> {
    let spec = ExecSpec { argv, user: user.to_owned(), ..ExecSpec::default() };
    run_raw(engine, container, &spec, None, &mut (), std::future::pending()).await
}

/// A command of [`run`] that could not be run: the engine call that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError(pub EngineError);

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CommandError {}

/// Runs `spec` in `container` (see the module docs); `on_chunk` receives output as it
/// arrives; `cancel` completing kills the command.
pub async fn run(
    engine: &Engine,
    container: &str,
    spec: ExecSpec,
    active: &ActiveExecs,
    on_chunk: &mut impl OutputSink,
    cancel: impl Future<Output = ()>,
) -> Result<ExecOutcome, CommandError> {
    let tag = paperclip_sandbox_sdk::kit::random_hex(12);
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), WRAPPER.to_owned(), "sh".to_owned()];
    argv.push(tag.clone());
    argv.extend(spec.argv.iter().cloned());
    let wrapped = ExecSpec { argv, ..spec };
    active.add(container, &tag);
    let out = run_raw(engine, container, &wrapped, Some(&tag), on_chunk, cancel).await;
    active.remove(container, &tag);
    out.map_err(CommandError)
}

async fn run_raw(
    engine: &Engine,
    container: &str,
    spec: &ExecSpec,
    tag: Option<&str>,
    on_chunk: &mut impl OutputSink,
    cancel: impl Future<Output = ()>,
) -> EngineResult<ExecOutcome> {
    let docker = engine.docker();
    let options = CreateExecOptions::<String> {
        attach_stdin: Some(spec.stdin.is_some()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        env: Some(spec.env.clone()),
        cmd: Some(spec.argv.clone()),
        user: Some(spec.user.clone()),
        working_dir: spec.cwd.clone(),
        ..CreateExecOptions::default()
    };
    let exec = engine.bounded("create exec", docker.create_exec(container, options)).await?;
    let start = StartExecOptions { output_capacity: Some(64 * 1024), ..Default::default() };
    let started = engine.bounded("start exec", docker.start_exec(&exec.id, Some(start))).await?;
    let StartExecResults::Attached { mut output, mut input } = started else {
        return Err(EngineError {
            operation: "start exec",
            status: None,
            reason: "the engine did not attach the output".to_owned(),
        });
    };
    // stdin: write everything, then shut the write half down (end-of-file), concurrently with
    // reading, so a command that writes before reading cannot deadlock.
    let stdin = spec.stdin.clone();
    let writer = async move {
        if let Some(bytes) = stdin {
            if let Err(e) = input.write_all(&bytes).await {
                tracing::debug!(error = %e, "stdin closed early by the command");
            }
            let _ = input.shutdown().await;
        }
        // Keep the write half alive until the output ends (dropping it may close the
        // connection on some engines).
        std::future::pending::<()>().await;
    };
    tokio::pin!(writer);
    tokio::pin!(cancel);
    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);

    // The call's deadline bounds the wait for the output too: the engine may stop answering
    // after the exec started.
    let call_deadline = async {
        match engine.deadline() {
            Some(d) => tokio::time::sleep_until(d.instant()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(call_deadline);
    let mut collected = OutputCollector::new();
    let mut exit_code = None;
    let mut kill_by: Option<Instant> = None;
    loop {
        let drain = async {
            match kill_by {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            item = output.next() => match item {
                None => break,
                // Awaiting the sink is the backpressure: while the host does not read, the
                // output is not read either and the command blocks on its pipe.
                Some(Ok(LogOutput::StdOut { message })) => {
                    collected.feed(on_chunk, OutputStream::Stdout, &message).await;
                }
                Some(Ok(LogOutput::StdErr { message })) => {
                    collected.feed(on_chunk, OutputStream::Stderr, &message).await;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    // Some engines close the connection instead of ending the stream when the
                    // command exits before reading all its stdin: a finished exec's output is
                    // complete.
                    if kill_by.is_some() || finished(engine, &exec.id).await {
                        break;
                    }
                    return Err(EngineError::from_bollard("read exec output", e));
                }
            },
            _ = &mut writer => {}
            _ = &mut sleep, if kill_by.is_none() => {
                collected.mark_timed_out();
                kill(engine, container, &spec.user, tag).await;
                kill_by = Some(Instant::now() + DRAIN_AFTER_KILL);
            }
            _ = &mut cancel, if kill_by.is_none() => {
                collected.mark_cancelled();
                kill(engine, container, &spec.user, tag).await;
                kill_by = Some(Instant::now() + DRAIN_AFTER_KILL);
            }
            _ = &mut call_deadline => {
                // The host's timer is about to fire: end the command (if the engine still
                // answers) and give up on it.
                let killing = engine.without_deadline();
                let _ = tokio::time::timeout(DEADLINE_KILL, kill(&killing, container, &spec.user, tag)).await;
                return Err(EngineError::deadline("read exec output"));
            }
            _ = drain => {
                tracing::warn!(container, "the output of a killed command did not end; giving up on it");
                break;
            }
        }
    }
    if kill_by.is_none() {
        exit_code = exit_code_of(engine, &exec.id).await?;
    }
    Ok(ExecOutcome { exit_code, output: collected.finish(on_chunk).await })
}

async fn kill(engine: &Engine, container: &str, user: &str, tag: Option<&str>) {
    let Some(tag) = tag else { return };
    if let Err(e) = kill_tags(engine, container, user, &[tag.to_owned()]).await {
        tracing::warn!(container, error = %e, "killing a command failed");
    }
}

/// True when the engine reports the exec no longer running.
async fn finished(engine: &Engine, exec_id: &str) -> bool {
    let info = engine.bounded("inspect exec", engine.docker().inspect_exec(exec_id)).await;
    info.is_ok_and(|i| i.running == Some(false))
}

/// The exit code once the engine reports the exec finished (it may lag the stream's end).
async fn exit_code_of(engine: &Engine, exec_id: &str) -> EngineResult<Option<i64>> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let info = engine.bounded("inspect exec", engine.docker().inspect_exec(exec_id)).await?;
        if info.running != Some(true) || Instant::now() >= until {
            return Ok(info.exit_code);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
