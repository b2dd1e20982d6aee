//! Helpers of the kubernetes-provider tests: find the cluster, spawn the real binary, talk raw
//! NDJSON, and look at the cluster directly to judge effects.
//!
//! The tests need a Kubernetes API server with a node that runs the sandbox image.
//! `.ci/kubernetes up` provides one and prints `KUBECONFIG`, `PAPERCLIP_KUBERNETES_NAMESPACE`
//! and `PAPERCLIP_KUBERNETES_IMAGE`; without them each test says why it cannot run and returns,
//! unless `PAPERCLIP_KUBERNETES_TESTS=require` (set by `.ci/run`), which turns the absence into
//! a failure.

#![allow(dead_code)]

use std::time::Duration;

use kubernetes_provider::cluster::Cluster;
use kubernetes_provider::names::{
    label_value, LABEL_COMPANY, LABEL_PROVIDER, PROVIDER_LABEL_VALUE,
};
use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};
use tokio::process::Command;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubernetes-provider");

/// A generous liveness bound for anything the worker must answer.
pub const LIVENESS: Duration = Duration::from_secs(180);

/// The cluster the tests use.
#[derive(Debug, Clone)]
pub struct Target {
    /// `KUBECONFIG`.
    pub kubeconfig: String,
    /// `PAPERCLIP_KUBERNETES_NAMESPACE`.
    pub namespace: String,
    /// `PAPERCLIP_KUBERNETES_IMAGE`.
    pub image: String,
}

impl Target {
    /// The provider config naming this cluster, namespace and image.
    pub fn config(&self) -> Value {
        json!({"kubeconfig": self.kubeconfig, "namespace": self.namespace, "image": self.image})
    }

    /// A direct connection, to judge effects.
    pub async fn cluster(&self) -> Cluster {
        Cluster::connect(Some(&self.kubeconfig)).await.expect("the kubeconfig loads")
    }
}

/// The cluster to test against, or `None` (with the reason printed) when there is none.
pub fn target() -> Option<Target> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let kubeconfig = var("KUBECONFIG").filter(|p| std::path::Path::new(p).is_file());
    match (kubeconfig, var("PAPERCLIP_KUBERNETES_NAMESPACE"), var("PAPERCLIP_KUBERNETES_IMAGE")) {
        (Some(kubeconfig), Some(namespace), Some(image)) => {
            Some(Target { kubeconfig, namespace, image })
        }
        _ => {
            let why = "no Kubernetes cluster: set KUBECONFIG (an existing file), \
                       PAPERCLIP_KUBERNETES_NAMESPACE and PAPERCLIP_KUBERNETES_IMAGE \
                       (eval \"$(.ci/kubernetes up)\" provides all three)";
            if std::env::var("PAPERCLIP_KUBERNETES_TESTS").as_deref() == Ok("require") {
                panic!("PAPERCLIP_KUBERNETES_TESTS=require but {why}");
            }
            eprintln!("SKIPPED (cannot run here): {why}");
            None
        }
    }
}

/// Names of this provider's Pods and Jobs for `company` in the namespace, by the API server's
/// own listing (`None` company: all of this provider's).
pub async fn objects_of(cluster: &Cluster, namespace: &str, company: Option<&str>) -> Vec<String> {
    let mut selector = format!("{LABEL_PROVIDER}={PROVIDER_LABEL_VALUE}");
    if let Some(c) = company {
        selector.push_str(&format!(",{LABEL_COMPANY}={}", label_value(c)));
    }
    let mut names: Vec<String> = Vec::new();
    for p in cluster.pods_labelled(namespace, &selector).await.unwrap() {
        names.push(format!("pod/{}", p.metadata.name.unwrap_or_default()));
    }
    for j in cluster.jobs_labelled(namespace, &selector).await.unwrap() {
        names.push(format!("job/{}", j.metadata.name.unwrap_or_default()));
    }
    names.sort();
    names
}

/// Every Pod in the namespace, by name.
pub async fn all_pods(cluster: &Cluster, namespace: &str) -> Vec<String> {
    let mut names: Vec<String> = cluster
        .pods_labelled(namespace, "")
        .await
        .unwrap()
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    names
}

/// A spawned, initialized worker.
pub struct Wire {
    /// The process.
    pub worker: WorkerProcess,
    /// The cluster.
    pub target: Target,
    /// The company of every call (unique per test, so tests can count their objects).
    pub company: String,
    /// Extra config keys merged into every call's config.
    pub extra_config: Value,
    next_id: i64,
}

impl Wire {
    /// Spawns the worker (with the host-like, empty environment: config carries the cluster).
    pub async fn start(target: &Target, company: &str) -> Wire {
        let mut cmd = Command::new(BIN);
        cmd.env_clear().env("RUST_LOG", "debug").env("PATH", std::env::var("PATH").unwrap());
        let worker = WorkerProcess::from_command(cmd).unwrap();
        let mut w = Wire {
            worker,
            target: target.clone(),
            company: company.to_owned(),
            extra_config: json!({}),
            next_id: 0,
        };
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
        let mut seen =
            tokio::time::timeout(LIVENESS, read).await.expect("an answer in time").unwrap();
        let response = seen.pop().expect("the response");
        (seen, response)
    }

    /// Sends a request and returns its `result`, failing on an error answer.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let (_, resp) = self.call(method, params).await;
        assert!(resp.get("error").is_none(), "{method} failed: {resp}");
        resp["result"].clone()
    }

    /// Base params with the cluster config, plus `extra`.
    pub fn params(&self, extra: Value) -> Value {
        let mut config = self.target.config();
        config.as_object_mut().unwrap().extend(self.extra_config.as_object().unwrap().clone());
        let mut v = json!({
            "driverKey": "kubernetes", "companyId": self.company, "environmentId": "env-1",
            "config": config
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

    /// The execute params of `sh -c script` on lease `id`, plus `extra`.
    pub fn sh_params(&self, id: &str, script: &str, extra: Value) -> Value {
        let mut p = self.params(json!({
            "lease": {"providerLeaseId": id}, "command": "sh", "args": ["-c", script]
        }));
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    }

    /// Executes `sh -c script` with `extra` params; returns (streamed chunks, result).
    pub async fn sh(&mut self, id: &str, script: &str, extra: Value) -> (String, Value) {
        let p = self.sh_params(id, script, extra);
        let (before, resp) = self.call("environmentExecute", p).await;
        assert!(resp.get("error").is_none(), "execute failed: {resp}");
        let logged = before
            .iter()
            .filter(|n| n["method"] == json!("execute.log"))
            .map(|n| n["params"]["chunk"].as_str().unwrap().to_owned())
            .collect();
        (logged, resp["result"].clone())
    }

    /// Destroys the lease: `destroyed`.
    pub async fn destroy(&mut self, id: &str) {
        let p = self.params(json!({"providerLeaseId": id}));
        let destroyed = self.ok("environmentDestroyLease", p).await;
        assert_eq!(destroyed["state"], json!("destroyed"), "{destroyed}");
    }

    /// Ends the worker with `shutdown`; it exits 0.
    pub async fn shutdown(mut self) {
        self.ok("shutdown", Value::Null).await;
        let st = tokio::time::timeout(LIVENESS, self.worker.wait()).await.unwrap().unwrap();
        assert_eq!(st.code(), Some(0));
    }
}
