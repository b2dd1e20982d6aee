//! Acquire, resume, release and destroy: a lease is one Pod, or one Job and its Pod.
//!
//! * **Acquire** creates the object under the attempt's creation name with its ownership
//!   labels and annotations ([`crate::names`], the SDK kit's creation attempt over [`KubeBackend`]) and the least-privilege manifest of
//!   [`crate::spec`], then waits until its Pod runs. The attempt is bounded by
//!   `acquireTimeoutMs` and by the call's own deadline. When it fails after the object may
//!   exist (the server did not answer the create, the Pod could not start, the budget ran
//!   out), the creation name is looked up: an object carrying every ownership annotation is
//!   deleted (compensation) and the answer is the creation-cleanup envelope with an
//!   acquisition diagnostic either way, naming the lease observed. A refusal (4xx) allocated
//!   nothing and is a plain error. A retry of the same attempt (the name taken by an object
//!   with this attempt's annotations) adopts it.
//! * **Resume** returns a running Pod of this company and environment; a missing, expired,
//!   ended or foreign one is `{providerLeaseId: null, metadata: {expired: true, reason}}`
//!   (an ended one is deleted first).
//! * **Release** by `resourceDisposition`: `keep_running` leaves it, `destroy` deletes it;
//!   without one a reusable lease keeps running (a Pod cannot be stopped and started again)
//!   and any other is deleted. `stop_and_retain` is refused: a Pod has no stopped state that
//!   keeps its files. `cancelActiveWork` kills the lease's running commands first.
//! * **Destroy** deletes the Pod (or the Job and its Pod) and waits until it is gone (after
//!   [`DELETE_WAIT`] with no grace); a missing one is `destroyed` (idempotent). A `failedCreateCleanup` record naming only the
//!   creation name is looked up and nothing is deleted (the observed lease id is answered);
//!   with an observed id the object is deleted once its annotations match.
//! * **Orphan sweep**: [`sweep`] deletes this environment's Pods and Jobs that ended or whose
//!   lease expired.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use paperclip_sandbox_sdk::async_trait;
use paperclip_sandbox_sdk::kit::acquire::{acquire_budget, RequestedExpiry};
use paperclip_sandbox_sdk::kit::creation::{
    create_bounded, destroy_failed_create, failed_create_cleanup, CreationAttempt, CreationBackend,
    CreationPlan, Progress,
};
use paperclip_sandbox_sdk::prelude::{
    AcquireLeaseParams, CreationOperation, JsonObject, Lease, ReleaseLeaseParams,
    ResourceDisposition, ResumeLeaseParams, TerminationReceipt,
};
use paperclip_sandbox_sdk::protocol::wire_time::{now_ms, parse_rfc3339_ms};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::cluster::{account_fingerprint, Cluster, ClusterError};
use crate::config::{Backend, KubernetesConfig, Settings};
use crate::names::{
    annotation, annotations_of, belongs, label_value, labels_of, valid_attempt, LeaseRef,
    ANNOTATION_EXPIRES_AT, LABEL_COMPANY, LABEL_ENVIRONMENT, LABEL_PROVIDER, LABEL_REUSE,
    PROVIDER_LABEL_VALUE,
};
use crate::spec::{self, Manifest, GRACE_SECS};

pub use paperclip_sandbox_sdk::kit::creation::FAILED_CREATE_CLEANUP;

/// How long a graceful delete may take before the Pod is deleted with no grace: short enough
/// that the delete, a forced one after it and the answer fit a host's 30 s call timeout.
pub const DELETE_WAIT: Duration = Duration::from_secs(12);

/// Waiting reasons after which a Pod will not start without a change.
const NEVER_STARTS: &[&str] = &[
    "ErrImageNeverPull",
    "InvalidImageName",
    "ErrImagePull",
    "ImagePullBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

fn cluster_err(context: &str, e: ClusterError) -> ProviderError {
    ProviderError::worker(format!("{context}: {e}"))
}

/// The lease metadata (no key named like a config key except the narrowing `backend`).
pub fn lease_metadata(
    settings: &Settings,
    lease: &LeaseRef,
    pod: Option<&str>,
    reusable: bool,
) -> JsonObject {
    let mut value = json!({
        "remoteCwd": settings.workspace,
        "backend": lease.backend.as_str(),
        "namespace": settings.namespace,
        "creationName": lease.object_name(),
        "reusable": reusable,
        "home": settings.home,
        "tmpDir": "/tmp",
    });
    if let Some(pod) = pod {
        value["podName"] = json!(pod);
    }
    value.as_object().cloned().unwrap_or_default()
}

/// The Pod that runs the commands of `lease`, if it exists.
pub async fn lease_pod(
    cluster: &Cluster,
    namespace: &str,
    lease: &LeaseRef,
) -> Result<Option<Pod>, ClusterError> {
    match lease.backend {
        Backend::Pod => cluster.pod(namespace, &lease.object_name()).await,
        Backend::Job => {
            let selector = format!("job-name={}", lease.object_name());
            let mut pods = cluster.pods_labelled(namespace, &selector).await?;
            pods.retain(|p| p.metadata.deletion_timestamp.is_none());
            Ok(pods.into_iter().next())
        }
    }
}

/// The metadata of the lease's own object (the Pod, or the Job).
async fn lease_object(
    cluster: &Cluster,
    namespace: &str,
    lease: &LeaseRef,
) -> Result<Option<ObjectMeta>, ClusterError> {
    let name = lease.object_name();
    Ok(match lease.backend {
        Backend::Pod => cluster.pod(namespace, &name).await?.map(|p| p.metadata),
        Backend::Job => cluster.job(namespace, &name).await?.map(|j| j.metadata),
    })
}

/// Deletes the lease's object and waits until it (and a Job's Pod) is gone: gracefully for up to
/// `wait`, then with no grace.
async fn delete_object(
    cluster: &Cluster,
    namespace: &str,
    lease: &LeaseRef,
    wait: Duration,
) -> Result<bool, ClusterError> {
    let name = lease.object_name();
    match lease.backend {
        Backend::Pod => cluster.delete_pod(namespace, &name, None, GRACE_SECS, wait).await,
        Backend::Job => cluster.delete_job(namespace, &name, wait).await,
    }
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("Pending")
}

fn running(p: &Pod) -> bool {
    phase(p) == "Running"
        && p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .is_some_and(|c| c.ready || c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// Why a Pod will not become ready, or `None` while it may.
fn stuck(p: &Pod) -> Option<String> {
    match phase(p) {
        "Failed" | "Succeeded" => {
            let reason = p.status.as_ref().and_then(|s| s.reason.clone()).unwrap_or_default();
            return Some(format!("the Pod ended before it was ready ({} {reason})", phase(p)));
        }
        _ => {}
    }
    let waiting = p
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()?;
    NEVER_STARTS
        .contains(&waiting.as_str())
        .then(|| format!("the Pod's container cannot start ({waiting})"))
}

/// `environmentAcquireLease`.
pub async fn acquire(
    cluster: &Cluster,
    settings: &Settings,
    params: &AcquireLeaseParams<KubernetesConfig>,
    call_deadline: Option<Instant>,
) -> Result<Lease, ProviderError> {
    let started = Instant::now();
    let fingerprint = account_fingerprint(&cluster.server, &settings.namespace);
    let attempt = CreationAttempt::for_acquire(params, PROVIDER_LABEL_VALUE, fingerprint);
    if !valid_attempt(&attempt.id) {
        return Err(ProviderError::invalid_params(
            "creationOperation.id must consist of lowercase letters, digits and '-' (at most 46) to name a Pod",
        ));
    }
    let lease = LeaseRef { backend: settings.backend, attempt: attempt.id.clone() };
    let expiry = RequestedExpiry::parse(params.requested_expires_at.as_deref())?;
    let budget = acquire_budget(settings.acquire_timeout, call_deadline, started);
    let mut annotations = annotations_of(&attempt);
    let mut deadline_secs = settings.active_deadline_seconds;
    if let Some(x) = expiry {
        annotations.insert(ANNOTATION_EXPIRES_AT.to_owned(), x.to_rfc3339());
        deadline_secs = deadline_secs.min(x.seconds_left());
    }
    let manifest = Manifest {
        settings,
        name: &attempt.creation_name,
        labels: labels_of(&attempt),
        annotations,
        deadline_secs,
    };
    let object = match settings.backend {
        Backend::Pod => Spec::Pod(Box::new(spec::pod(&manifest))),
        Backend::Job => Spec::Job(Box::new(spec::job(&manifest))),
    };
    tracing::info!(backend = settings.backend.as_str(), "creating the lease");
    let backend = KubeBackend {
        cluster: cluster.clone(),
        namespace: settings.namespace.clone(),
        backend: Some(settings.backend),
        spec: Some(Arc::new(object)),
    };
    let plan = CreationPlan::new(budget, "Pod")
        .with_poll_interval(Duration::from_millis(250))
        .started_at(started);
    let created = create_bounded(&backend, &attempt, &plan).await?;
    tracing::info!(pod = ?created.pod, elapsed_ms = started.elapsed().as_millis() as u64, "lease Pod running");
    let mut out = Lease::new(lease.id()).with_metadata(lease_metadata(
        settings,
        &lease,
        created.pod.as_deref(),
        attempt.reusable,
    ));
    if let Some(x) = expiry {
        out = out.with_expires_at(x.to_rfc3339());
    }
    Ok(out)
}

/// The object a creation attempt sends.
#[derive(Debug)]
pub enum Spec {
    /// A Pod.
    Pod(Box<Pod>),
    /// A Job.
    Job(Box<Job>),
}

/// A lease object as a creation attempt sees it.
#[derive(Debug, Clone)]
pub struct LeaseObject {
    /// Its lease id.
    pub lease: LeaseRef,
    /// The object's metadata.
    pub meta: ObjectMeta,
    /// The name of its running Pod, once known.
    pub pod: Option<String>,
}

/// The cluster as the kit's creation backend, in one namespace.
#[derive(Clone)]
pub struct KubeBackend {
    /// The cluster.
    pub cluster: Cluster,
    /// The namespace.
    pub namespace: String,
    /// The backend of the lease; `None` looks under both (a cleanup record names no backend).
    pub backend: Option<Backend>,
    /// The object to create; `None` for a backend that only looks up and deletes.
    pub spec: Option<Arc<Spec>>,
}

/// A cluster error, or an observed id that is not one of this provider's lease ids.
#[derive(Debug)]
pub enum KubeFailure {
    /// A cluster call failed.
    Cluster(ClusterError),
    /// The id names no lease of this provider.
    NotALeaseId,
}

impl std::fmt::Display for KubeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KubeFailure::Cluster(e) => e.fmt(f),
            KubeFailure::NotALeaseId => {
                f.write_str("the observed lease id is not one of this provider's")
            }
        }
    }
}

impl From<ClusterError> for KubeFailure {
    fn from(e: ClusterError) -> Self {
        KubeFailure::Cluster(e)
    }
}

impl KubeBackend {
    async fn object(&self, lease: LeaseRef) -> Result<Option<LeaseObject>, KubeFailure> {
        let meta = lease_object(&self.cluster, &self.namespace, &lease).await?;
        Ok(meta.map(|meta| LeaseObject { lease, meta, pod: None }))
    }
}

#[async_trait]
impl CreationBackend for KubeBackend {
    type Resource = LeaseObject;
    type Error = KubeFailure;

    async fn create(&self, attempt: &CreationAttempt) -> Result<LeaseObject, KubeFailure> {
        let ns = self.namespace.as_str();
        let (meta, backend) = match self.spec.as_deref() {
            Some(Spec::Pod(pod)) => {
                (self.cluster.create_pod(ns, pod).await?.metadata, Backend::Pod)
            }
            Some(Spec::Job(job)) => {
                (self.cluster.create_job(ns, job).await?.metadata, Backend::Job)
            }
            None => return Err(KubeFailure::NotALeaseId),
        };
        Ok(LeaseObject {
            lease: LeaseRef { backend, attempt: attempt.id.clone() },
            meta,
            pod: None,
        })
    }

    async fn inspect_by_name(&self, name: &str) -> Result<Option<LeaseObject>, KubeFailure> {
        let Some(attempt) = name.strip_prefix(CreationOperation::NAME_PREFIX) else {
            return Ok(None);
        };
        let backends = match self.backend {
            Some(b) => vec![b],
            None => vec![Backend::Pod, Backend::Job],
        };
        for backend in backends {
            let found = self.object(LeaseRef { backend, attempt: attempt.to_owned() }).await?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    async fn inspect_by_id(&self, id: &str) -> Result<Option<LeaseObject>, KubeFailure> {
        let lease = LeaseRef::parse(id).ok_or(KubeFailure::NotALeaseId)?;
        self.object(lease).await
    }

    async fn remove(&self, object: &LeaseObject) -> Result<(), KubeFailure> {
        delete_object(&self.cluster, &self.namespace, &object.lease, DELETE_WAIT).await?;
        Ok(())
    }

    async fn progress(&self, object: &LeaseObject) -> Result<Progress<LeaseObject>, KubeFailure> {
        Ok(match lease_pod(&self.cluster, &self.namespace, &object.lease).await? {
            Some(p) if running(&p) => {
                Progress::Ready(LeaseObject { pod: p.metadata.name.clone(), ..object.clone() })
            }
            Some(p) => match stuck(&p) {
                Some(why) => Progress::Failed(why),
                None => Progress::Pending,
            },
            None if object.lease.backend == Backend::Pod => {
                Progress::Failed("the Pod disappeared while it started".to_owned())
            }
            None => Progress::Pending,
        })
    }

    fn resource_id(&self, object: &LeaseObject) -> String {
        object.lease.id()
    }

    fn resource_name<'a>(&self, object: &'a LeaseObject) -> Option<&'a str> {
        object.meta.name.as_deref()
    }

    fn resource_label<'a>(&self, object: &'a LeaseObject, key: &str) -> Option<&'a str> {
        annotation(&object.meta, key)
    }

    fn is_refusal(&self, error: &KubeFailure) -> bool {
        matches!(error, KubeFailure::Cluster(e) if e.is_refusal())
    }

    fn is_conflict(&self, error: &KubeFailure) -> bool {
        matches!(error, KubeFailure::Cluster(e) if e.status == Some(409))
    }
}

fn expired(reason: &str) -> Lease {
    let metadata = json!({"expired": true, "reason": reason});
    Lease::not_resumable(metadata.as_object().cloned().unwrap_or_default())
}

fn lease_expired(meta: &ObjectMeta) -> bool {
    annotation(meta, ANNOTATION_EXPIRES_AT)
        .and_then(parse_rfc3339_ms)
        .is_some_and(|ms| ms <= now_ms())
}

/// `environmentResumeLease`.
pub async fn resume(
    cluster: &Cluster,
    settings: &Settings,
    params: &ResumeLeaseParams<KubernetesConfig>,
) -> Result<Lease, ProviderError> {
    let ns = settings.namespace.as_str();
    let Some(lease) = LeaseRef::parse(&params.provider_lease_id) else {
        return Ok(expired("not_found"));
    };
    let fail = |e| cluster_err("Resuming the lease failed", e);
    let Some(meta) = lease_object(cluster, ns, &lease).await.map_err(fail)? else {
        return Ok(expired("not_found"));
    };
    if !belongs(&meta, &params.base.company_id, &params.base.environment_id) {
        tracing::warn!(lease = %lease.id(), "resume of a lease of another company or environment refused");
        return Ok(expired("not_owned"));
    }
    if lease_expired(&meta) {
        delete_object(cluster, ns, &lease, DELETE_WAIT).await.map_err(fail)?;
        return Ok(expired("expired"));
    }
    let pod = lease_pod(cluster, ns, &lease).await.map_err(fail)?;
    let Some(pod) = pod.filter(running) else {
        delete_object(cluster, ns, &lease, DELETE_WAIT).await.map_err(fail)?;
        return Ok(expired("not_running"));
    };
    let reusable = annotation(&meta, LABEL_REUSE) == Some("true");
    let mut out = Lease::new(lease.id()).with_metadata(lease_metadata(
        settings,
        &lease,
        pod.metadata.name.as_deref(),
        reusable,
    ));
    if let Some(at) = annotation(&meta, ANNOTATION_EXPIRES_AT) {
        out = out.with_expires_at(at);
    }
    tracing::info!(lease = %lease.id(), "lease resumed");
    Ok(out)
}

fn is_reusable(metadata: Option<&JsonObject>) -> bool {
    metadata.and_then(|m| m.get("reusable")).and_then(Value::as_bool).unwrap_or(false)
}

/// What `environmentReleaseLease` does with the lease, after its commands were handled.
pub fn release_keeps(params: &ReleaseLeaseParams<KubernetesConfig>) -> Result<bool, ProviderError> {
    match &params.resource_disposition {
        Some(ResourceDisposition::KeepRunning) => Ok(true),
        Some(ResourceDisposition::StopAndRetain) => Err(ProviderError::worker(
            "A Pod cannot be stopped and kept (Kubernetes has no stopped Pod); nothing was changed. \
             Release with keep_running or destroy.",
        )),
        Some(ResourceDisposition::Destroy) => Ok(false),
        _ => Ok(is_reusable(params.lease_metadata.as_ref())),
    }
}

/// `environmentDestroyLease` (and a release that deletes).
pub async fn destroy(
    cluster: &Cluster,
    settings: &Settings,
    params: &ReleaseLeaseParams<KubernetesConfig>,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let Some(id) = params.provider_lease_id.as_deref() else {
        return Ok(None);
    };
    let ns = settings.namespace.as_str();
    if let Some(ownership) = failed_create_cleanup(params.lease_metadata.as_ref())? {
        let backend = KubeBackend {
            cluster: cluster.clone(),
            namespace: ns.to_owned(),
            backend: None,
            spec: None,
        };
        let fingerprint = account_fingerprint(&cluster.server, ns);
        return destroy_failed_create(&backend, id, ownership, &fingerprint, "object").await;
    }
    if id.starts_with(CreationOperation::NAME_PREFIX) {
        return Err(ProviderError::worker(
            "The lease id is a creation name but no failedCreateCleanup record came with it; \
             nothing was looked up or deleted",
        ));
    }
    let Some(lease) = LeaseRef::parse(id) else {
        return Err(ProviderError::invalid_params(
            "providerLeaseId is not a lease id of this provider",
        ));
    };
    let fail = |e| cluster_err("Destroying the lease failed", e);
    if let Some(meta) = lease_object(cluster, ns, &lease).await.map_err(fail)? {
        if annotation(&meta, LABEL_PROVIDER) != Some(PROVIDER_LABEL_VALUE) {
            return Err(ProviderError::worker(
                "The object does not carry this provider's annotation; nothing was deleted",
            ));
        }
        delete_object(cluster, ns, &lease, DELETE_WAIT).await.map_err(fail)?;
        tracing::info!(lease = %id, "lease deleted");
    }
    Ok(Some(TerminationReceipt::destroyed(id)))
}

/// The label selector of this provider's objects of `company` and `environment`.
pub fn selector(company: &str, environment: &str) -> String {
    let pairs: BTreeMap<&str, String> = [
        (LABEL_PROVIDER, PROVIDER_LABEL_VALUE.to_owned()),
        (LABEL_COMPANY, label_value(company)),
        (LABEL_ENVIRONMENT, label_value(environment)),
    ]
    .into_iter()
    .collect();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// Deletes the environment's ended or expired Pods and Jobs; the number deleted.
pub async fn sweep(
    cluster: &Cluster,
    namespace: &str,
    company: &str,
    environment: &str,
) -> Result<usize, ClusterError> {
    let selector = selector(company, environment);
    let mut removed = 0;
    for job in cluster.jobs_labelled(namespace, &selector).await? {
        let status = job.status.clone().unwrap_or_default();
        let ended = status.failed.unwrap_or(0) > 0 || status.succeeded.unwrap_or(0) > 0;
        if !belongs(&job.metadata, company, environment) || !(ended || lease_expired(&job.metadata))
        {
            continue;
        }
        let Some(name) = job.metadata.name.as_deref() else { continue };
        if cluster.delete_job(namespace, name, DELETE_WAIT).await? {
            tracing::info!(job = name, "ended Job deleted");
            removed += 1;
        }
    }
    for pod in cluster.pods_labelled(namespace, &selector).await? {
        let owned_by_job = pod
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|r| r.kind == "Job"));
        let ended = matches!(phase(&pod), "Failed" | "Succeeded");
        if owned_by_job
            || !belongs(&pod.metadata, company, environment)
            || !(ended || lease_expired(&pod.metadata))
        {
            continue;
        }
        let Some(name) = pod.metadata.name.as_deref() else { continue };
        if cluster
            .delete_pod(namespace, name, pod.metadata.uid.as_deref(), GRACE_SECS, DELETE_WAIT)
            .await?
        {
            tracing::info!(pod = name, "ended Pod deleted");
            removed += 1;
        }
    }
    Ok(removed)
}
