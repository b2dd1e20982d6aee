//! Helpers of the wire tests: spawn the real `bwrap-provider` binary and talk raw NDJSON.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};
use tokio::process::Command;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_bwrap-provider");

/// A hang guard for anything the worker must answer: generous (5 minutes), so that the suite
/// passes on a machine under heavy load; a test that reaches it has hung.
pub const LIVENESS: Duration = Duration::from_secs(300);

/// A spawned, initialized worker with a private lease root.
pub struct Wire {
    /// The process.
    pub worker: WorkerProcess,
    /// The lease root.
    pub root: tempfile::TempDir,
    /// Extra config keys sent with every call.
    pub config: Value,
    next_id: i64,
}

impl Wire {
    /// Spawns the worker with extra environment and initializes it.
    pub async fn start(env: &[(&str, &str)], config: Value) -> Wire {
        let root = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(BIN);
        cmd.env("RUST_LOG", "debug");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let worker = WorkerProcess::from_command(cmd).unwrap();
        let mut w = Wire { worker, root, config, next_id: 0 };
        w.ok("initialize", json!({"manifest": {}, "config": {}, "databaseNamespace": null})).await;
        w
    }

    /// Sends a request and returns (notifications before it, its response).
    pub async fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        self.next_id += 1;
        let request = self.worker.request(json!(self.next_id), method, params);
        let (before, response) = tokio::time::timeout(LIVENESS, request).await.unwrap().unwrap();
        for v in before.iter().chain([&response]) {
            assert_eq!(v["jsonrpc"], json!("2.0"), "not JSON-RPC 2.0: {v}");
        }
        (before, response)
    }

    /// Sends a request and returns its `result`, failing on an error answer.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let (_, resp) = self.call(method, params).await;
        assert!(resp.get("error").is_none(), "{method} failed: {resp}");
        resp["result"].clone()
    }

    /// Base params with this worker's root (and extra config) in `config`, plus `extra`.
    pub fn params(&self, extra: Value) -> Value {
        let mut config = json!({"root": self.root.path()});
        config.as_object_mut().unwrap().extend(self.config.as_object().unwrap().clone());
        let mut v = json!({
            "driverKey": "bwrap", "companyId": "company-1", "environmentId": "env-1",
            "config": config
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    /// `environmentProbe`'s result.
    pub async fn probe(&mut self) -> Value {
        let p = self.params(json!({}));
        self.ok("environmentProbe", p).await
    }

    /// Acquires a lease; returns its id and directory.
    pub async fn acquire(&mut self) -> (String, PathBuf) {
        let p = self.params(json!({"runId": "run-1"}));
        let lease = self.ok("environmentAcquireLease", p).await;
        let id = lease["providerLeaseId"].as_str().unwrap().to_string();
        let dir = self.root.path().join(&id);
        assert!(dir.is_dir(), "{lease}");
        (id, dir)
    }

    /// Executes `sh -c script` in the lease, with `extra` params; returns (log chunks, result).
    pub async fn sh(&mut self, id: &str, script: &str, extra: Value) -> (String, Value) {
        let mut p = self.params(json!({
            "lease": {"providerLeaseId": id}, "command": "sh", "args": ["-c", script]
        }));
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (before, resp) = self.call("environmentExecute", p).await;
        assert!(resp.get("error").is_none(), "execute failed: {resp}");
        let logged = before
            .iter()
            .filter(|n| n["method"] == json!("execute.log"))
            .map(|n| n["params"]["chunk"].as_str().unwrap().to_string())
            .collect();
        (logged, resp["result"].clone())
    }

    /// Releases (default: destroy) and destroys the lease; the directory is gone.
    pub async fn release_and_destroy(&mut self, id: &str, dir: &Path) {
        let p = self.params(json!({"providerLeaseId": id}));
        let released = self.ok("environmentReleaseLease", p.clone()).await;
        assert_eq!(released["state"], json!("destroyed"), "{released}");
        let destroyed = self.ok("environmentDestroyLease", p).await;
        assert_eq!(destroyed["state"], json!("destroyed"), "{destroyed}");
        assert!(!dir.exists());
    }

    /// Ends the worker with `shutdown`; it exits 0.
    pub async fn shutdown(mut self) {
        self.ok("shutdown", Value::Null).await;
        let st = tokio::time::timeout(LIVENESS, self.worker.wait()).await.unwrap().unwrap();
        assert_eq!(st.code(), Some(0));
    }
}

/// The `bwrap` binary on this test's `PATH`, if any.
pub fn bwrap_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("bwrap")).find(|p| p.is_file())
}

/// The independent check: can bwrap build a sandbox of this shape here, right now?
pub fn bwrap_works_here() -> bool {
    let Some(bwrap) = bwrap_on_path() else { return false };
    std::process::Command::new(bwrap)
        .args(["--unshare-all", "--share-net", "--ro-bind", "/", "/"])
        .args(["--dev", "/dev", "--proc", "/proc", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A directory of symlinks to every program on this test's `PATH` except `bwrap`: a `PATH`
/// with bwrap hidden.
pub fn path_without_bwrap() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var_os("PATH").unwrap();
    for d in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let name = e.file_name();
            let link = dir.path().join(&name);
            if name == "bwrap" || link.symlink_metadata().is_ok() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), link);
        }
    }
    dir
}

/// This process's namespace link for `kind` (`pid`, `mnt`, …).
pub fn own_ns(kind: &str) -> String {
    std::fs::read_link(format!("/proc/self/ns/{kind}")).unwrap().display().to_string()
}
