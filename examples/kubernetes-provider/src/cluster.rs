//! The API server: the client connection of a config (held by its backend, [`crate::Kube`]),
//! typed errors, and the Pod and Job calls the provider makes. Nothing else in the crate talks
//! to the cluster directly, except the exec subresource in [`crate::exec`].

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

/// How long a connection attempt to the API server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the removal of a Pod deleted with no grace may take to show.
const FORCED_WAIT: Duration = Duration::from_secs(10);

/// A failed cluster call: what was attempted, the HTTP status when the server answered, and
/// why. Never carries a credential (kube's errors do not).
#[derive(Debug, Clone)]
pub struct ClusterError {
    /// The operation (`create pod`, `exec`…).
    pub operation: &'static str,
    /// The API status code, when the server answered.
    pub status: Option<u16>,
    /// The server's reason or the transport error.
    pub reason: String,
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "{} failed (HTTP {s}): {}", self.operation, self.reason),
            None => write!(f, "{} failed: {}", self.operation, self.reason),
        }
    }
}

impl std::error::Error for ClusterError {}

impl ClusterError {
    /// Wraps a kube error.
    pub fn from_kube(operation: &'static str, e: kube::Error) -> Self {
        match e {
            kube::Error::Api(status) => ClusterError {
                operation,
                status: Some(status.code),
                reason: if status.message.is_empty() {
                    status.reason.clone()
                } else {
                    status.message.clone()
                },
            },
            other => ClusterError { operation, status: None, reason: other.to_string() },
        }
    }

    /// The server answered 404.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
    }

    /// The server refused the request (4xx other than 404/409/429): nothing was allocated.
    pub fn is_refusal(&self) -> bool {
        self.status.is_some_and(|s| (400..500).contains(&s) && ![404, 409, 429].contains(&s))
    }
}

/// The result of a cluster call.
pub type ClusterResult<T> = Result<T, ClusterError>;

/// One API server connection and its identity.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    /// The API server URL (not a secret): part of the account fingerprint.
    pub server: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("server", &self.server).finish_non_exhaustive()
    }
}

impl Cluster {
    /// Connects with the kubeconfig at `path`, or (`None`) as kube infers: `KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account.
    pub async fn connect(path: Option<&str>) -> ClusterResult<Cluster> {
        let fail =
            |reason: String| ClusterError { operation: "load kubeconfig", status: None, reason };
        let mut config = match path {
            Some(p) => {
                let kc = Kubeconfig::read_from(p)
                    .map_err(|e| fail(format!("the kubeconfig file cannot be read: {e}")))?;
                Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| fail(format!("the kubeconfig is unusable: {e}")))?
            }
            None => {
                Config::infer().await.map_err(|e| fail(format!("no cluster configuration: {e}")))?
            }
        };
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        let server = config.cluster_url.to_string();
        let client = Client::try_from(config)
            .map_err(|e| ClusterError::from_kube("build the API client", e))?;
        Ok(Cluster { client, server })
    }

    /// The client.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The Pods of `namespace`.
    pub fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The Jobs of `namespace`.
    pub fn jobs(&self, namespace: &str) -> Api<Job> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The server's version (`v1.20.2`): a liveness probe.
    pub async fn version(&self) -> ClusterResult<String> {
        let info = self
            .client
            .apiserver_version()
            .await
            .map_err(|e| ClusterError::from_kube("read the server version", e))?;
        Ok(info.git_version)
    }

    /// True when `namespace` exists.
    pub async fn namespace_exists(&self, namespace: &str) -> ClusterResult<bool> {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        api.get_opt(namespace)
            .await
            .map(|n| n.is_some())
            .map_err(|e| ClusterError::from_kube("read the namespace", e))
    }

    /// Creates a Pod.
    pub async fn create_pod(&self, namespace: &str, pod: &Pod) -> ClusterResult<Pod> {
        self.pods(namespace)
            .create(&PostParams::default(), pod)
            .await
            .map_err(|e| ClusterError::from_kube("create pod", e))
    }

    /// Creates a Job.
    pub async fn create_job(&self, namespace: &str, job: &Job) -> ClusterResult<Job> {
        self.jobs(namespace)
            .create(&PostParams::default(), job)
            .await
            .map_err(|e| ClusterError::from_kube("create job", e))
    }

    /// The Pod `name`, if it exists.
    pub async fn pod(&self, namespace: &str, name: &str) -> ClusterResult<Option<Pod>> {
        self.pods(namespace).get_opt(name).await.map_err(|e| ClusterError::from_kube("read pod", e))
    }

    /// The Job `name`, if it exists.
    pub async fn job(&self, namespace: &str, name: &str) -> ClusterResult<Option<Job>> {
        self.jobs(namespace).get_opt(name).await.map_err(|e| ClusterError::from_kube("read job", e))
    }

    /// Pods matching the label selector `selector`.
    pub async fn pods_labelled(&self, namespace: &str, selector: &str) -> ClusterResult<Vec<Pod>> {
        let list = self
            .pods(namespace)
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| ClusterError::from_kube("list pods", e))?;
        Ok(list.items)
    }

    /// Jobs matching the label selector `selector`.
    pub async fn jobs_labelled(&self, namespace: &str, selector: &str) -> ClusterResult<Vec<Job>> {
        let list = self
            .jobs(namespace)
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| ClusterError::from_kube("list jobs", e))?;
        Ok(list.items)
    }

    /// Deletes the Pod `name` (grace `grace_secs`) and waits until it is gone; `Ok(false)` when
    /// there was none. Only the Pod with `uid` is deleted, when given. A Pod still there after
    /// `wait` (a slow node) is deleted again with no grace: the API server then removes the
    /// object at once and the node's kubelet kills what is left of it; that removal is
    /// confirmed too.
    pub async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
        grace_secs: u32,
        wait: Duration,
    ) -> ClusterResult<bool> {
        let mut dp =
            DeleteParams { grace_period_seconds: Some(grace_secs), ..DeleteParams::default() };
        if let Some(uid) = uid {
            dp = dp.preconditions(kube::api::Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            });
        }
        match self.pods(namespace).delete(name, &dp).await {
            Ok(_) => {}
            Err(e) => {
                let e = ClusterError::from_kube("delete pod", e);
                if e.is_not_found() {
                    return Ok(false);
                }
                return Err(e);
            }
        }
        let mut until = Instant::now() + wait;
        let mut forced = false;
        loop {
            match self.pod(namespace, name).await? {
                None => return Ok(true),
                Some(p) if uid.is_some() && p.metadata.uid.as_deref() != uid => return Ok(true),
                Some(_) if Instant::now() >= until && !forced => {
                    tracing::info!(pod = name, "the pod is slow to go; deleting it with no grace");
                    forced = true;
                    until = Instant::now() + FORCED_WAIT;
                    let dp =
                        DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::default() };
                    if let Err(e) = self.pods(namespace).delete(name, &dp).await {
                        let e = ClusterError::from_kube("delete pod", e);
                        if !e.is_not_found() {
                            return Err(e);
                        }
                    }
                }
                Some(_) if Instant::now() >= until => {
                    return Err(ClusterError {
                        operation: "delete pod",
                        status: None,
                        reason: "the pod is still there after a delete with no grace".to_owned(),
                    })
                }
                Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Deletes the Job `name` with its Pods (foreground) and waits until both are gone, up to
    /// `wait`; `Ok(false)` when there was none.
    pub async fn delete_job(
        &self,
        namespace: &str,
        name: &str,
        wait: Duration,
    ) -> ClusterResult<bool> {
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            grace_period_seconds: Some(1),
            ..DeleteParams::default()
        };
        let existed = match self.jobs(namespace).delete(name, &dp).await {
            Ok(_) => true,
            Err(e) => {
                let e = ClusterError::from_kube("delete job", e);
                if !e.is_not_found() {
                    return Err(e);
                }
                false
            }
        };
        // Its Pods too (a Job deleted earlier may have left them terminating).
        let selector = format!("job-name={name}");
        let until = Instant::now() + wait;
        let hard_until = until + FORCED_WAIT;
        loop {
            let job_gone = self.job(namespace, name).await?.is_none();
            let pods = self.pods_labelled(namespace, &selector).await?;
            let force = Instant::now() >= until;
            for p in &pods {
                if force {
                    if let Some(n) = p.metadata.name.as_deref() {
                        let dp = DeleteParams {
                            grace_period_seconds: Some(0),
                            ..DeleteParams::default()
                        };
                        let _ = self.pods(namespace).delete(n, &dp).await;
                    }
                } else if p.metadata.deletion_timestamp.is_none() {
                    if let Some(n) = p.metadata.name.as_deref() {
                        let dp = DeleteParams {
                            grace_period_seconds: Some(1),
                            ..DeleteParams::default()
                        };
                        let _ = self.pods(namespace).delete(n, &dp).await;
                    }
                }
            }
            if job_gone && pods.is_empty() {
                return Ok(existed);
            }
            if Instant::now() >= hard_until {
                return Err(ClusterError {
                    operation: "delete job",
                    status: None,
                    reason: format!("the job or its pod is still there after {} s", wait.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The fingerprint of a cluster account (SHA-256 hex of the API server URL and namespace):
/// which cluster and namespace a cleanup record names.
pub fn account_fingerprint(server: &str, namespace: &str) -> String {
    let digest = Sha256::new()
        .chain_update(server.as_bytes())
        .chain_update([0])
        .chain_update(namespace.as_bytes())
        .finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
