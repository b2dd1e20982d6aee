//! Helpers of the container-provider tests: find the engine, spawn the real binary, talk raw
//! NDJSON, and look at the engine directly to judge effects.
//!
//! The tests need a Docker-API engine and the base image. `.ci/container-engine up` provides
//! both and prints `DOCKER_HOST` and `PAPERCLIP_CONTAINER_IMAGE`; without them each test says
//! why it cannot run and returns, unless `PAPERCLIP_CONTAINER_TESTS=require` (set by `.ci/run`),
//! which turns the absence into a failure.

#![allow(dead_code)]

use std::time::Duration;

use container_provider::engine::{Engine, LABEL_COMPANY, LABEL_PROVIDER, PROVIDER_LABEL_VALUE};
use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};
use tokio::process::Command;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_container-provider");

/// A hang guard for anything the worker must answer: generous (5 minutes), so that the suite
/// passes on a machine under heavy load; a test that reaches it has hung.
pub const LIVENESS: Duration = Duration::from_secs(300);

/// The engine and image the tests use.
#[derive(Debug, Clone)]
pub struct Target {
    /// `DOCKER_HOST`.
    pub docker_host: String,
    /// `PAPERCLIP_CONTAINER_IMAGE`.
    pub image: String,
}

impl Target {
    /// The provider config naming this engine and image.
    pub fn config(&self) -> Value {
        json!({"dockerHost": self.docker_host, "image": self.image})
    }

    /// A direct engine connection, to judge effects.
    pub async fn engine(&self) -> Engine {
        Engine::connect(&self.docker_host).await.expect("the engine answers")
    }
}

/// The engine to test against, or `None` (with the reason printed) when there is none.
pub fn target() -> Option<Target> {
    let docker_host = std::env::var("DOCKER_HOST").ok().filter(|v| !v.is_empty());
    let image = std::env::var("PAPERCLIP_CONTAINER_IMAGE").ok().filter(|v| !v.is_empty());
    let socket_ok = docker_host.as_deref().is_some_and(|h| {
        h.strip_prefix("unix://").is_none_or(|p| std::path::Path::new(p).exists())
    });
    match (docker_host, image) {
        (Some(docker_host), Some(image)) if socket_ok => Some(Target { docker_host, image }),
        _ => {
            let why = "no Docker-API engine: set DOCKER_HOST and PAPERCLIP_CONTAINER_IMAGE \
                       (eval \"$(.ci/container-engine up)\" provides both)";
            if std::env::var("PAPERCLIP_CONTAINER_TESTS").as_deref() == Ok("require") {
                panic!("PAPERCLIP_CONTAINER_TESTS=require but {why}");
            }
            eprintln!("SKIPPED (cannot run here): {why}");
            None
        }
    }
}

/// Containers of this provider for `company`, by the engine's own listing.
pub async fn containers_of(engine: &Engine, company: &str) -> Vec<String> {
    engine
        .list_labelled(&[(LABEL_PROVIDER, PROVIDER_LABEL_VALUE), (LABEL_COMPANY, company)])
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.id)
        .collect()
}

/// A spawned, initialized worker.
pub struct Wire {
    /// The process.
    pub worker: WorkerProcess,
    /// The engine and image.
    pub target: Target,
    /// The company of every call (unique per test, so tests can count their containers).
    pub company: String,
    next_id: i64,
}

impl Wire {
    /// Spawns the worker (with the host-like, empty environment: config carries the engine).
    pub async fn start(target: &Target, company: &str) -> Wire {
        let mut cmd = Command::new(BIN);
        cmd.env_clear().env("RUST_LOG", "debug").env("PATH", std::env::var("PATH").unwrap());
        let worker = WorkerProcess::from_command(cmd).unwrap();
        let mut w =
            Wire { worker, target: target.clone(), company: company.to_owned(), next_id: 0 };
        w.ok("initialize", json!({"manifest": {}, "config": {}, "databaseNamespace": null})).await;
        w
    }

    /// Sends a request; returns (notifications before it, its response).
    pub async fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.send(method, params).await;
        self.answer(&id).await
    }

    /// Sends a request without waiting; returns its id.
    pub async fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.worker.send_line(&line.to_string()).await.unwrap();
        id
    }

    /// Reads until the response to `id`; returns (notifications before it, the response).
    pub async fn answer(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let read = self.worker.read_until_response(id);
        let mut seen = tokio::time::timeout(LIVENESS, read).await.unwrap().unwrap();
        let response = seen.pop().expect("the response");
        (seen, response)
    }

    /// Sends a request and returns its `result`, failing on an error answer.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let (_, resp) = self.call(method, params).await;
        assert!(resp.get("error").is_none(), "{method} failed: {resp}");
        resp["result"].clone()
    }

    /// Base params with the engine config, plus `extra`.
    pub fn params(&self, extra: Value) -> Value {
        let mut v = json!({
            "driverKey": "container", "companyId": self.company, "environmentId": "env-1",
            "config": self.target.config()
        });
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        v
    }

    /// Acquires a lease with `extra` params; returns the lease.
    pub async fn acquire_with(&mut self, extra: Value) -> Value {
        let mut p = self.params(json!({"runId": "run-1"}));
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.ok("environmentAcquireLease", p).await
    }

    /// Acquires a lease; returns its id.
    pub async fn acquire(&mut self) -> String {
        let lease = self.acquire_with(json!({})).await;
        lease["providerLeaseId"].as_str().unwrap().to_owned()
    }

    /// Executes `sh -c script` with `extra` params; returns (streamed chunks, result).
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
            .map(|n| n["params"]["chunk"].as_str().unwrap().to_owned())
            .collect();
        (logged, resp["result"].clone())
    }

    /// Destroys the lease: `destroyed`, and the engine no longer has the container.
    pub async fn destroy(&mut self, id: &str) {
        let p = self.params(json!({"providerLeaseId": id}));
        let destroyed = self.ok("environmentDestroyLease", p).await;
        assert_eq!(destroyed["state"], json!("destroyed"), "{destroyed}");
        let engine = self.target.engine().await;
        assert!(engine.inspect(id).await.unwrap().is_none(), "the container is gone");
    }

    /// Ends the worker with `shutdown`; it exits 0.
    pub async fn shutdown(mut self) {
        self.ok("shutdown", Value::Null).await;
        let st = tokio::time::timeout(LIVENESS, self.worker.wait()).await.unwrap().unwrap();
        assert_eq!(st.code(), Some(0));
    }
}
