//! Test drivers for providers.
//!
//! * [`TestClient`]: an in-process host. The provider runs on the same runtime as a real
//!   worker (the same codec and dispatch), over in-memory pipes instead of stdio.
//! * [`WorkerProcess`]: a spawned worker binary spoken to over NDJSON on its pipes, with its
//!   stderr captured; killed on drop.
//! * [`flood`]: output floods (escape-heavy, multi-byte split across writes) checked line by
//!   line against the host's line limit ([`flood::assert_output_floods_fit`]).
//! * [`fuzz`]: the bodies of the fuzz targets (arbitrary bytes into the runtime, arbitrary
//!   JSON into the manifest validator).
//! * [`assert_manifest`] ([`assert_manifest_valid`] and [`assert_manifest_snapshot`]): a derived manifest checked by
//!   the protocol's validator for every profile, and pinned by a committed JSON snapshot.

pub mod flood;
pub mod fuzz;
mod manifest;

pub use manifest::{
    assert_json_snapshot, assert_manifest, assert_manifest_snapshot, assert_manifest_valid,
    manifest_snapshot, UPDATE_SNAPSHOTS,
};

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use paperclip_sandbox_protocol::jsonrpc::{
    parse_line, ErrorObject, Id, Invocation, Message, Notification, Outcome, Request, Response,
};
use paperclip_sandbox_protocol::methods::RpcMethod;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::task::JoinHandle;

use crate::{ServeEnd, Worker};

type Waiters = Arc<StdMutex<HashMap<Id, oneshot::Sender<Response>>>>;

/// An in-process host driving a [`Worker`] through its real runtime over in-memory pipes.
///
/// Every line the worker writes is available raw ([`next_line`](Self::next_line)) and is also
/// routed: responses to the call that waits for them, notifications to
/// [`next_notification`](Self::next_notification), worker→host requests to
/// [`next_host_request`](Self::next_host_request).
pub struct TestClient {
    stdin: Mutex<Option<DuplexStream>>,
    lines: Mutex<mpsc::UnboundedReceiver<String>>,
    notifications: Mutex<mpsc::UnboundedReceiver<Notification>>,
    host_requests: Mutex<mpsc::UnboundedReceiver<Request>>,
    waiters: Waiters,
    next_id: AtomicU64,
    serve: JoinHandle<io::Result<ServeEnd>>,
}

impl TestClient {
    /// Starts `worker` (for example `Worker::new(provider).max_concurrency(4)`).
    pub fn start(worker: Worker) -> Self {
        let (client_in, worker_in) = tokio::io::duplex(1 << 20);
        let (worker_out, client_out) = tokio::io::duplex(1 << 20);
        let serve = tokio::spawn(worker.serve(worker_in, worker_out));
        let (line_tx, lines) = mpsc::unbounded_channel();
        let (note_tx, notifications) = mpsc::unbounded_channel();
        let (req_tx, host_requests) = mpsc::unbounded_channel();
        let waiters: Waiters = Arc::default();
        let routes = waiters.clone();
        tokio::spawn(async move {
            let mut out = BufReader::new(client_out).lines();
            while let Ok(Some(line)) = out.next_line().await {
                match parse_line(&line) {
                    Ok(Message::Response(r)) => {
                        let waiter = r.id.as_ref().and_then(|id| lock(&routes).remove(id));
                        if let Some(w) = waiter {
                            let _ = w.send(r);
                        }
                    }
                    Ok(Message::Notification(n)) => {
                        let _ = note_tx.send(n);
                    }
                    Ok(Message::Request(q)) => {
                        let _ = req_tx.send(q);
                    }
                    Err(_) => {}
                }
                let _ = line_tx.send(line);
            }
        });
        TestClient {
            stdin: Mutex::new(Some(client_in)),
            lines: Mutex::new(lines),
            notifications: Mutex::new(notifications),
            host_requests: Mutex::new(host_requests),
            waiters,
            next_id: AtomicU64::new(1),
            serve,
        }
    }

    /// Starts a worker over `provider` with the default tunables.
    pub fn new<P: crate::SandboxProvider>(provider: P) -> Self {
        Self::start(Worker::new(provider))
    }

    /// Writes raw bytes to the worker's input.
    pub async fn send_raw(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let pipe = stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        pipe.write_all(bytes).await
    }

    /// Writes one line (a `\n` is appended).
    pub async fn send_line(&self, line: &str) -> io::Result<()> {
        self.send_raw(format!("{line}\n").as_bytes()).await
    }

    /// Sends a message.
    pub async fn send(&self, message: impl Into<Message>) -> io::Result<()> {
        self.send_raw(message.into().to_line().as_bytes()).await
    }

    /// The next line the worker wrote, raw (every line, routed or not); `None` once the
    /// worker's output is closed.
    pub async fn next_line(&self) -> Option<String> {
        self.lines.lock().await.recv().await
    }

    /// The next notification the worker sent.
    pub async fn next_notification(&self) -> Option<Notification> {
        self.notifications.lock().await.recv().await
    }

    /// The next worker→host request; answer it with [`respond`](Self::respond).
    pub async fn next_host_request(&self) -> Option<Request> {
        self.host_requests.lock().await.recv().await
    }

    /// Answers a worker→host request.
    pub async fn respond(&self, response: Response) -> io::Result<()> {
        self.send(response).await
    }

    /// Sends a request and waits for its response.
    pub async fn request(&self, request: Request) -> io::Result<Response> {
        let (tx, rx) = oneshot::channel();
        lock(&self.waiters).insert(request.id.clone(), tx);
        self.send(request).await?;
        rx.await.map_err(|_| io::Error::other("worker output closed before the response"))
    }

    /// Calls the method `M` (a marker of the protocol crate, such as `EnvironmentProbe`) with a
    /// fresh numeric id: typed params in, the typed result out. A result that does not fit
    /// `M::Result` is an error `-32000` naming the method.
    ///
    /// ```no_run
    /// # use paperclip_sandbox_sdk::prelude::*;
    /// # use paperclip_sandbox_sdk::protocol::methods::EnvironmentProbe;
    /// # use paperclip_sandbox_sdk::testing::TestClient;
    /// # async fn demo(client: TestClient) {
    /// let base = EnvironmentBaseParams::new("my-sandbox", "company-1", "environment-1");
    /// let probe = client.call::<EnvironmentProbe>(&ProbeParams::new(base)).await.unwrap();
    /// assert!(probe.ok);
    /// # }
    /// ```
    pub async fn call<M: RpcMethod>(&self, params: &M::Params) -> Result<M::Result, ErrorObject> {
        let params = serde_json::to_value(params).map_err(|e| {
            ErrorObject::new(-32000, format!("test client: {} params: {e}", M::NAME))
        })?;
        let result = self.call_raw(M::NAME, params).await?;
        serde_json::from_value(result).map_err(|e| {
            ErrorObject::new(-32000, format!("test client: {} result does not fit: {e}", M::NAME))
        })
    }

    /// Calls any method by name with JSON params (a fresh numeric id, no invocation): for
    /// requests the typed [`call`](Self::call) cannot send (unknown methods, malformed params).
    pub async fn call_raw(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.call_in(method, params, None).await
    }

    /// Calls `method` with a fresh numeric id, carrying `invocation` as `paperclipInvocation`.
    pub async fn call_in(
        &self,
        method: &str,
        params: Value,
        invocation: Option<Invocation>,
    ) -> Result<Value, ErrorObject> {
        let id = Id::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let request = Request {
            id,
            method: method.to_owned(),
            params: Some(params),
            invocation,
            invocation_id: None,
        };
        let response = self
            .request(request)
            .await
            .map_err(|e| ErrorObject::new(-32000, format!("test client: {e}")))?;
        match response.outcome {
            Outcome::Result(v) => Ok(v),
            Outcome::Error(e) => Err(e),
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> io::Result<()> {
        self.send(Notification {
            method: method.to_owned(),
            params: Some(params),
            invocation: None,
            invocation_id: None,
        })
        .await
    }

    /// Closes the worker's input (EOF).
    pub async fn close_stdin(&self) {
        self.stdin.lock().await.take();
    }

    /// Closes the worker's input and waits for the serve loop to end.
    pub async fn finish(self) -> io::Result<ServeEnd> {
        self.close_stdin().await;
        self.serve.await.map_err(io::Error::other)?
    }

    /// Waits for the serve loop to end without closing the input (after `shutdown`).
    pub async fn join(self) -> io::Result<ServeEnd> {
        self.serve.await.map_err(io::Error::other)?
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A spawned worker binary: NDJSON on its stdin/stdout, stderr captured, killed on drop.
pub struct WorkerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Arc<StdMutex<String>>,
}

impl WorkerProcess {
    /// Spawns `program` with `args`, all three pipes captured.
    pub fn spawn<I, S>(program: impl AsRef<OsStr>, args: I) -> io::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(program);
        command.args(args);
        Self::from_command(command)
    }

    /// Spawns a prepared command (environment, working directory…); its three pipes are
    /// captured and it is killed on drop.
    pub fn from_command(mut command: Command) -> io::Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let stderr = Arc::new(StdMutex::new(String::new()));
        let mut err_pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = err_pipe.read(&mut buf).await {
                lock(&sink).push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Ok(WorkerProcess { child, stdin, stdout, stderr })
    }

    /// Writes raw bytes to the worker's stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| io::Error::other("stdin closed"))?;
        stdin.write_all(bytes).await?;
        stdin.flush().await
    }

    /// Writes one line (a `\n` is appended).
    pub async fn send_line(&mut self, line: &str) -> io::Result<()> {
        self.send_raw(format!("{line}\n").as_bytes()).await
    }

    /// The next stdout line, raw; `None` at EOF.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        self.stdout.next_line().await
    }

    /// Reads stdout lines until a response with `id`; every line read is returned, the
    /// response last. Fails on a stdout line that is not JSON, or at EOF.
    pub async fn read_until_response(&mut self, id: &Value) -> io::Result<Vec<Value>> {
        let mut seen = Vec::new();
        loop {
            let line = self.next_line().await?.ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "worker stdout closed")
            })?;
            let v: Value = serde_json::from_str(&line).map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidData, format!("non-JSON stdout {line:?}: {e}"))
            })?;
            let done =
                v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some());
            seen.push(v);
            if done {
                return Ok(seen);
            }
        }
    }

    /// Sends a request with `id`; returns the messages read before its response
    /// (notifications such as `execute.log`, other answers) and the response.
    pub async fn request(
        &mut self,
        id: Value,
        method: &str,
        params: Value,
    ) -> io::Result<(Vec<Value>, Value)> {
        let line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string()).await?;
        let mut seen = self.read_until_response(&id).await?;
        let response = seen.pop().expect("the response");
        Ok((seen, response))
    }

    /// Sends a request with `id` and returns its response (other lines are skipped).
    pub async fn call(&mut self, id: Value, method: &str, params: Value) -> io::Result<Value> {
        Ok(self.request(id, method, params).await?.1)
    }

    /// Closes the worker's stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the worker to exit (see [`wait_exit`]).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = wait_exit(&mut self.child, Duration::from_secs(3600)).await? {
                return Ok(status);
            }
        }
    }

    /// Everything the worker wrote to stderr so far.
    pub fn stderr(&self) -> String {
        lock(&self.stderr).clone()
    }

    /// The worker's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }
}

/// Waits up to `bound` for `child` to exit; `Ok(None)` when it is still running then.
///
/// It asks the kernel directly (`waitpid` with `WNOHANG`, every 10 ms) instead of awaiting
/// [`Child::wait`](tokio::process::Child::wait), whose wake-up depends on the runtime seeing
/// `SIGCHLD`: with several runtimes in one process (parallel `#[tokio::test]`s) that wake-up
/// can be lost, and a test waiting for a worker it has just killed would hang.
pub async fn wait_exit(
    child: &mut tokio::process::Child,
    bound: Duration,
) -> io::Result<Option<ExitStatus>> {
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
