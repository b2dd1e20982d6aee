//! Reliability at the wire (the real binary): nothing a host or a neighbour does wedges the
//! worker. A host that closes stdout ends the worker and its commands; byte streams whose
//! command does not read never hold up other calls; oversized or malformed execute inputs are
//! refused without wedging the lease; a squatted lease root is refused.
//!
//! Hang guards are generous (the suite must pass at load 15); the figures asked for are
//! printed (`--nocapture`), and the assertions are about order and outcome, not wall time.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_local-provider");

/// Anything the worker must answer, it answers within this (a hang guard, not a timing goal).
const LIVENESS: Duration = Duration::from_secs(120);

/// A worker spoken to over raw pipes, with a private lease root.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: Option<Lines<BufReader<ChildStdout>>>,
    root: tempfile::TempDir,
}

impl Raw {
    async fn start() -> Raw {
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .env("LOCAL_PROVIDER_ROOT", root.path())
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = Some(BufReader::new(child.stdout.take().unwrap()).lines());
        let mut w = Raw { child, stdin, stdout, root };
        let init = w
            .call(
                json!(0),
                "initialize",
                json!({"manifest": {}, "config": {}, "databaseNamespace": null}),
            )
            .await;
        assert!(init.get("result").is_some(), "initialize: {init}");
        w
    }

    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    }

    /// The next message; panics past the liveness bound or at EOF.
    async fn next(&mut self) -> Value {
        let lines = self.stdout.as_mut().expect("stdout is open");
        let line = tokio::time::timeout(LIVENESS, lines.next_line())
            .await
            .expect("the worker answers within the liveness bound")
            .unwrap()
            .expect("stdout open");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the response with `id`, skipping notifications and other answers.
    async fn response(&mut self, id: &Value) -> Value {
        loop {
            let v = self.next().await;
            if v.get("id") == Some(id) && v.get("method").is_none() {
                return v;
            }
        }
    }

    async fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.request(id.clone(), method, params).await;
        self.response(&id).await
    }

    fn params(&self, extra: Value) -> Value {
        let mut v = json!({
            "driverKey": "local", "companyId": "company-1", "environmentId": "env-1",
            "config": {"root": self.root.path()}
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    /// Acquires a lease; returns the acquire result.
    async fn acquire(&mut self, id: u64) -> Value {
        let params = self.params(json!({"runId": format!("run-{id}")}));
        let r = self.call(json!(id), "environmentAcquireLease", params).await;
        r.get("result").cloned().unwrap_or_else(|| panic!("acquire: {r}"))
    }

    fn execute_params(&self, lease: &Value, script: &str) -> Value {
        self.params(json!({"lease": lease, "command": "sh", "args": ["-c", script]}))
    }
}

/// True while `pid` names a live (not zombie) process.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Waits (bounded) for `path` to hold a pid.
async fn pid_in(path: &std::path::Path) -> i32 {
    let until = Instant::now() + LIVENESS;
    loop {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < until, "the command did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Item "host gone means shut down": the host closes the worker's stdout (it stopped
/// listening) and keeps stdin open. The worker must not wait for end of input: it shuts down
/// as on EOF, ending its commands with their process groups, and exits.
#[tokio::test]
async fn a_closed_stdout_ends_the_worker_and_its_commands_without_eof() {
    let mut w = Raw::start().await;
    let lease = w.acquire(1).await;
    let pid_file = w.root.path().join("cmd.pid");
    let script = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let params = w.execute_params(&lease, &script);
    w.request(json!(2), "environmentExecute", params).await;
    let pid = pid_in(&pid_file).await;
    assert!(alive(pid));

    // The host stops listening: its end of stdout closes; stdin stays open (no EOF).
    drop(w.stdout.take());
    let closed = Instant::now();
    let status = tokio::time::timeout(LIVENESS, w.child.wait())
        .await
        .expect("the worker exits once its stdout is closed, without waiting for stdin EOF")
        .unwrap();
    let took = closed.elapsed();
    println!("closed stdout -> worker exit in {took:?} (bound: the 2 s shutdown grace + 2 s)");
    assert!(status.success(), "exit: {status}");
    // Its command ended with it (the worker ends every process group it started).
    let until = Instant::now() + LIVENESS;
    while alive(pid) {
        assert!(Instant::now() < until, "the command outlived the worker");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(w.stdin);
}
