//! Helpers of the wire tests: spawn the real `local-provider` binary and talk raw NDJSON.

#![allow(dead_code)]

use std::time::Duration;

use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};
use tokio::process::Command;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_local-provider");

/// A hang guard for anything the worker must answer: generous (5 minutes), so that the suite
/// passes on a machine under heavy load; a test that reaches it has hung.
pub const LIVENESS: Duration = Duration::from_secs(300);

/// A spawned worker with a private lease root.
pub struct Wire {
    /// The process.
    pub worker: WorkerProcess,
    /// The lease root (removed on drop).
    pub root: tempfile::TempDir,
    /// Every stdout line seen, raw.
    pub lines: Vec<String>,
}

impl Wire {
    /// Spawns the worker with `args` and extra environment, without initializing it.
    pub fn spawn_with(args: &[&str], env: &[(&str, &str)]) -> Wire {
        let root = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(args).env("LOCAL_PROVIDER_ROOT", root.path()).env("RUST_LOG", "debug");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Wire { worker: WorkerProcess::from_command(cmd).unwrap(), root, lines: Vec::new() }
    }

    /// Spawns and initializes the worker; returns it with the initialize result.
    pub async fn start() -> (Wire, Value) {
        let mut w = Wire::spawn_with(&[], &[]);
        let init = w
            .call(
                json!(1),
                "initialize",
                json!({"manifest": {}, "config": {}, "databaseNamespace": null}),
            )
            .await;
        (w, init)
    }

    /// Sends one raw line (a `\n` is appended).
    pub async fn send(&mut self, line: &str) {
        self.worker.send_line(line).await.unwrap();
    }

    /// The next stdout line, checked to be a JSON-RPC 2.0 object; `None` at EOF.
    pub async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LIVENESS, self.worker.next_line())
            .await
            .expect("the worker answers within the liveness bound")
            .unwrap()?;
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("non-protocol stdout line {line:?}: {e}"));
        assert_eq!(v["jsonrpc"], json!("2.0"), "not JSON-RPC 2.0: {line}");
        self.lines.push(line);
        Some(v)
    }

    /// Reads messages until the response with `id`; returns (everything before, response).
    pub async fn until_response(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let v = self.next().await.expect("stdout closed before the response");
            if v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some()) {
                return (before, v);
            }
            before.push(v);
        }
    }

    /// Sends a request and returns its whole response message.
    pub async fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&line.to_string()).await;
        self.until_response(&id).await.1
    }

    /// Sends a request and returns its `result`, failing on an error answer.
    pub async fn ok(&mut self, id: Value, method: &str, params: Value) -> Value {
        let resp = self.call(id, method, params).await;
        assert!(resp.get("error").is_none(), "{method} failed: {resp}");
        resp["result"].clone()
    }

    /// Base params with this worker's root in `config`, plus `extra`.
    pub fn params(&self, extra: Value) -> Value {
        let mut v = json!({
            "driverKey": "local", "companyId": "company-1", "environmentId": "env-1",
            "config": {"root": self.root.path()}
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    /// Waits for the process to exit; panics past the liveness bound.
    pub async fn exit_code(&mut self, bound: Duration) -> Option<i32> {
        tokio::time::timeout(bound, self.worker.wait())
            .await
            .expect("the worker exits in time")
            .unwrap()
            .code()
    }
}
