//! Reliability at the wire (the real binary): nothing a host or a neighbour does wedges the
//! worker. A host that closes stdout ends the worker and its commands; byte streams whose
//! command does not read never hold up other calls; oversized or malformed execute inputs are
//! refused without wedging the lease; a squatted lease root is refused.
//!
//! Hang guards are generous (the suite must pass at load 15); the figures asked for are
//! printed (`--nocapture`), and the assertions are about order and outcome, not wall time.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use paperclip_sandbox_protocol::methods::ChannelBytes;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_local-provider");

/// Anything the worker must answer, it answers within this (a hang guard, not a timing goal).
const LIVENESS: Duration = Duration::from_secs(120);

/// A worker spoken to over raw pipes, with a private lease root.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
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
        let stdin = child.stdin.take();
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
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).await.unwrap();
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
    drop(w.stdin.take());
}

/// Answers by request id: (arrival order, arrival time, the response).
type Answers = HashMap<String, (usize, Instant, Value)>;

/// Frames a request.
fn frame(id: Value, method: &str, params: Value) -> String {
    let mut line =
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    line.push('\n');
    line
}

/// `VmHWM` (peak resident set) of `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Item "flow control": 200 writes of 1 MiB pending on a channel whose command never reads
/// its stdin. The channel's close, and calls on another lease, are answered while the first
/// write still waits; every write is answered (queued within the channel's bound, or refused
/// at once past it, never dropped); the worker's memory stays bounded.
#[tokio::test]
async fn a_channel_that_does_not_read_holds_up_neither_its_close_nor_other_leases() {
    const WRITES: usize = 200;
    let mut w = Raw::start().await;
    let pid = w.child.id().unwrap();
    let lease_a = w.acquire(1).await;
    let lease_b = w.acquire(2).await;
    let open = json!({"hostRouteId": "route-1", "driverKey": "local", "companyId": "company-1",
        "environmentId": "env-1", "providerLeaseId": lease_a["providerLeaseId"],
        "command": ["sleep", "600"]});
    let opened = w.call(json!(3), "duplexChannelOpen", open).await;
    let session = opened["result"]["workerSessionId"].as_str().expect("opened").to_owned();

    // 1 MiB of input per write, as base64.
    let input = vec![0x5a_u8; 1 << 20];
    let data = serde_json::to_value(ChannelBytes::from(input.as_slice())).unwrap();
    let write = json!({"hostRouteId": "route-1", "workerSessionId": session, "data": data});
    let probe = w.params(json!({}));
    let exec_b = w.execute_params(&lease_b, "echo other-lease");

    // The writer runs beside the reader (the worker answers while it reads): the 200 writes,
    // then a probe and an execute on the other lease.
    let mut stdin = w.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        for i in 0..WRITES {
            let line = frame(json!(format!("w{i}")), "duplexChannelWrite", write.clone());
            stdin.write_all(line.as_bytes()).await.unwrap();
        }
        let calls = [
            frame(json!("probe"), "environmentProbe", probe),
            frame(json!("exec-b"), "environmentExecute", exec_b),
        ]
        .concat();
        stdin.write_all(calls.as_bytes()).await.unwrap();
        (stdin, Instant::now())
    });
    let mut answers = Answers::new();
    let mut seq = 0;
    let mut read_until =
        async |w: &mut Raw, answers: &mut HashMap<_, _>, done: &dyn Fn(&Answers) -> bool| {
            while !done(answers) {
                let v = w.next().await;
                let Some(id) = v.get("id").and_then(Value::as_str) else { continue };
                if v.get("method").is_none() {
                    seq += 1;
                    answers.insert(id.to_owned(), (seq, Instant::now(), v));
                }
            }
        };
    // The other lease is served while the channel's writes wait on its command.
    read_until(&mut w, &mut answers, &|a| a.contains_key("probe") && a.contains_key("exec-b"))
        .await;
    let (stdin, calls_sent) = writer.await.unwrap();
    w.stdin = Some(stdin);
    let unanswered = (0..WRITES).filter(|i| !answers.contains_key(&format!("w{i}"))).count();
    assert!(unanswered > 0, "writes still pending when the other lease's calls were answered");
    let (_, probe_at, probe_v) = &answers["probe"];
    assert!(probe_v.get("result").is_some(), "probe answered: {probe_v}");
    let (_, exec_at, exec_v) = &answers["exec-b"];
    assert_eq!(exec_v["result"]["exitCode"], json!(0), "the other lease serves: {exec_v}");
    let (probe_took, exec_took) = (
        probe_at.saturating_duration_since(calls_sent),
        exec_at.saturating_duration_since(calls_sent),
    );

    // The close is answered while writes still wait; they are answered after it, with errors.
    let close_sent = Instant::now();
    w.request(json!("close"), "duplexChannelClose", json!({"hostRouteId": "route-1"})).await;
    read_until(&mut w, &mut answers, &|a| a.len() == WRITES + 3).await;
    let peak_kib = peak_rss_kib(pid);
    let (close_seq, close_at, close_v) = &answers["close"];
    assert_eq!(close_v["result"]["hostRouteId"], json!("route-1"), "close acknowledged: {close_v}");
    let close_took = close_at.saturating_duration_since(close_sent);
    let after_close: Vec<&Value> =
        answers.values().filter(|(s, _, _)| s > close_seq).map(|(_, _, v)| v).collect();
    assert_eq!(after_close.len(), unanswered, "the pending writes are answered after the close");
    assert!(after_close.iter().all(|v| v.get("error").is_some()), "{after_close:?}");
    // Every write is answered: run in order, or refused at once past the channel's bound
    // (-32002, saying so); none is dropped.
    let refused = (0..WRITES)
        .filter(|i| {
            let v = &answers[&format!("w{i}")].2;
            v["error"]["code"] == json!(-32002)
                && v["error"]["message"].as_str().unwrap().contains("channel input are pending")
        })
        .count();
    assert!(refused > 0 && refused < WRITES, "some writes queued, the rest refused: {refused}");
    println!(
        "200 x 1 MiB writes on a channel that does not read: probe answered in {probe_took:?}, \
         execute on another lease in {exec_took:?} (after they were sent), close in \
         {close_took:?}, with {unanswered} writes pending; {refused} writes refused past the \
         channel bound; worker peak RSS {} MiB",
        peak_kib / 1024
    );
    // Generous (a debug build; the report gives the number): unbounded, it was 342 MiB.
    assert!(peak_kib < 160 * 1024, "peak RSS {peak_kib} KiB");
    // The lease still serves.
    let again = w.execute_params(&lease_a, "echo still-serving");
    let r = w.call(json!("again"), "environmentExecute", again).await;
    assert_eq!(r["result"]["exitCode"], json!(0), "{r}");
}

/// Item "bounded inputs": environment keys the host's builder never sends are refused with
/// `-32602` naming the path, never quoting the value; 100,000 variables are refused at once
/// and the lease serves on.
#[tokio::test]
async fn malformed_or_huge_execute_inputs_are_refused_and_the_lease_serves_on() {
    let mut w = Raw::start().await;
    let lease = w.acquire(1).await;
    let marker = w.root.path().join("ran");
    let script = format!("touch '{}'; echo ran", marker.display());
    for (i, key) in ["HOME=/etc", "A=B", "=x", ""].into_iter().enumerate() {
        let mut params = w.execute_params(&lease, &script);
        params["env"] = json!({ key: "secret-value-x" });
        let r = w.call(json!(format!("bad-{i}")), "environmentExecute", params).await;
        assert_eq!(r["error"]["code"], json!(-32602), "key #{i}: {r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains("params.env"), "names the path: {message}");
        assert!(!message.contains("secret-value") && !message.contains("/etc"), "{message}");
    }
    assert!(!marker.exists(), "no command ran with a bad environment");

    let many: serde_json::Map<String, Value> =
        (0..100_000).map(|i| (format!("VAR_{i:06}"), json!("value"))).collect();
    let mut params = w.execute_params(&lease, &script);
    params["env"] = Value::Object(many);
    let sent = Instant::now();
    let r = w.call(json!("many"), "environmentExecute", params).await;
    let took = sent.elapsed();
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("params.env: more than 10000"));
    println!("100,000 env vars refused in {took:?}");
    assert!(!marker.exists());

    // The lease still serves: the next execute and the destroy are answered.
    let ok = w.execute_params(&lease, &script);
    let r = w.call(json!("next"), "environmentExecute", ok).await;
    assert_eq!(r["result"]["exitCode"], json!(0), "{r}");
    assert!(marker.exists());
    let destroy = w.params(json!({"providerLeaseId": lease["providerLeaseId"]}));
    let r = w.call(json!("destroy"), "environmentDestroyLease", destroy).await;
    assert!(r.get("result").is_some(), "{r}");
}

/// Item "private lease roots": a root another user could read — made world-accessible first
/// (as a squatter in `/tmp` would), or a link to such a directory — is refused with an error
/// naming the path and the fix, and no lease lands there; a missing root is created `0700`.
#[tokio::test]
async fn a_squatted_lease_root_is_refused_and_a_missing_one_is_created_private() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mut w = Raw::start().await;
    let squat = tempfile::tempdir().unwrap();
    let shared = squat.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let link = squat.path().join("link");
    std::os::unix::fs::symlink(&shared, &link).unwrap();
    for (i, root) in [&shared, &link].into_iter().enumerate() {
        let mut params = w.params(json!({"runId": "r"}));
        params["config"]["root"] = json!(root);
        let r = w.call(json!(format!("squat-{i}")), "environmentAcquireLease", params).await;
        let message = r["error"]["message"].as_str().unwrap_or_else(|| panic!("refused: {r}"));
        assert!(message.contains(&root.display().to_string()), "names the path: {message}");
        assert!(message.contains("choose a root of your own"), "says the fix: {message}");
        assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0, "nothing landed there");
    }
    let fresh = squat.path().join("fresh/root");
    let mut params = w.params(json!({"runId": "r"}));
    params["config"]["root"] = json!(fresh);
    let r = w.call(json!("fresh"), "environmentAcquireLease", params).await;
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(std::fs::symlink_metadata(&fresh).unwrap().mode() & 0o777, 0o700);
}
