//! Acquire, resume, release and destroy: a lease is one Pod, or one Job and its Pod.
//!
//! * **Acquire** creates the object under the attempt's creation name with its ownership
//!   labels and annotations ([`crate::owner`]) and the least-privilege manifest of
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
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use local_provider::timeutil::{format_rfc3339_ms, now_ms, parse_rfc3339_ms};
use paperclip_sandbox_sdk::prelude::{
    AcquireLeaseParams, CreationOperation, JsonObject, Lease, ReleaseLeaseParams,
    ResourceDisposition, ResumeLeaseParams, TerminationReceipt,
};
use paperclip_sandbox_sdk::protocol::envelope::{
    AcquisitionDiagnostic, AcquisitionPhase, Ownership,
};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::cluster::{account_fingerprint, Cluster, ClusterError};
use crate::config::{Backend, KubernetesConfig, Settings};
use crate::owner::{
    annotation, belongs, label_value, ownership_matches, Attempt, LeaseRef, ANNOTATION_EXPIRES_AT,
    LABEL_COMPANY, LABEL_ENVIRONMENT, LABEL_PROVIDER, LABEL_REUSE, PROVIDER_LABEL_VALUE,
};
use crate::spec::{self, Manifest, GRACE_SECS};

/// The lease-metadata key under which the host hands a creation-cleanup record back.
pub const FAILED_CREATE_CLEANUP: &str = "failedCreateCleanup";

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

/// Why an attempt ended without a lease, after an object may exist.
struct Failure {
    what: String,
    deadline: bool,
}

enum Step {
    /// The server refused the create: nothing was allocated.
    Refused(ClusterError),
    /// An object may exist.
    Failed(String),
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
    let Some(attempt) = Attempt::for_acquire(params, settings.backend, fingerprint) else {
        return Err(ProviderError::invalid_params(
            "creationOperation.id must consist of lowercase letters, digits and '-' (at most 46) to name a Pod",
        ));
    };
    let expires_ms = match params.requested_expires_at.as_deref() {
        None => None,
        Some(s) => match parse_rfc3339_ms(s) {
            None => {
                return Err(ProviderError::invalid_params(
                    "requestedExpiresAt must be an RFC 3339 timestamp",
                ))
            }
            Some(ms) if ms <= now_ms() => {
                return Err(ProviderError::invalid_params("requestedExpiresAt is in the past"))
            }
            Some(ms) => Some(ms),
        },
    };
    let mut budget = settings.acquire_timeout;
    if let Some(d) = call_deadline {
        let left = d.saturating_duration_since(started).saturating_sub(Duration::from_millis(500));
        budget = budget.min(left.max(Duration::from_millis(100)));
    }
    let deadline = started + budget;
    let mut annotations = attempt.annotations();
    let mut deadline_secs = settings.active_deadline_seconds;
    if let Some(ms) = expires_ms {
        annotations.insert(ANNOTATION_EXPIRES_AT.to_owned(), format_rfc3339_ms(ms));
        deadline_secs = deadline_secs.min((((ms - now_ms()).max(1000) + 999) / 1000) as u64);
    }
    let manifest = Manifest {
        settings,
        name: &attempt.creation_name,
        labels: attempt.labels(),
        annotations,
        deadline_secs,
    };
    tracing::info!(creation_name = %attempt.creation_name, backend = settings.backend.as_str(), "creating the lease");
    let result =
        tokio::time::timeout_at(deadline, create_and_wait(cluster, settings, &attempt, &manifest))
            .await;
    let failure = match result {
        Ok(Ok(pod)) => {
            tracing::info!(pod = %pod, elapsed_ms = started.elapsed().as_millis() as u64, "lease Pod running");
            let lease = &attempt.lease;
            let mut out = Lease::new(lease.id()).with_metadata(lease_metadata(
                settings,
                lease,
                Some(&pod),
                attempt.reusable,
            ));
            if let Some(ms) = expires_ms {
                out = out.with_expires_at(format_rfc3339_ms(ms));
            }
            return Ok(out);
        }
        Ok(Err(Step::Refused(e))) => {
            return Err(ProviderError::worker(format!("The lease creation was refused: {e}")))
        }
        Ok(Err(Step::Failed(what))) => Failure { what, deadline: false },
        Err(_) => Failure {
            what: "the Pod was not running within the acquisition budget".to_owned(),
            deadline: true,
        },
    };
    Err(cleanup_after_failure(cluster, settings, &attempt, started, budget, failure).await)
}

async fn create_and_wait(
    cluster: &Cluster,
    settings: &Settings,
    attempt: &Attempt,
    manifest: &Manifest<'_>,
) -> Result<String, Step> {
    let ns = settings.namespace.as_str();
    let created = match settings.backend {
        Backend::Pod => cluster.create_pod(ns, &spec::pod(manifest)).await.map(|_| ()),
        Backend::Job => cluster.create_job(ns, &spec::job(manifest)).await.map(|_| ()),
    };
    match created {
        Ok(()) => {}
        Err(e) if e.status == Some(409) => {
            // The name is taken: a retry of this very attempt is adopted, anything else refused.
            match lease_object(cluster, ns, &attempt.lease).await {
                Ok(Some(meta)) if attempt.owns(&meta) => {}
                _ => return Err(Step::Refused(e)),
            }
        }
        Err(e) if e.is_refusal() => return Err(Step::Refused(e)),
        Err(e) => return Err(Step::Failed(e.to_string())),
    }
    let mut pause = Duration::from_millis(100);
    loop {
        match lease_pod(cluster, ns, &attempt.lease).await {
            Ok(Some(p)) if running(&p) => return Ok(p.metadata.name.unwrap_or_default()),
            Ok(Some(p)) => {
                if let Some(why) = stuck(&p) {
                    return Err(Step::Failed(why));
                }
            }
            Ok(None) if settings.backend == Backend::Pod => {
                return Err(Step::Failed("the Pod disappeared while it started".to_owned()))
            }
            Ok(None) => {}
            Err(e) => tracing::debug!(error = %e, "reading the starting Pod failed"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// Looks the creation name up, deletes an object carrying the attempt's annotations, and
/// builds the cleanup envelope.
async fn cleanup_after_failure(
    cluster: &Cluster,
    settings: &Settings,
    attempt: &Attempt,
    started: Instant,
    budget: Duration,
    failure: Failure,
) -> ProviderError {
    let ns = settings.namespace.as_str();
    let lease = &attempt.lease;
    let (observed, outcome) = match lease_object(cluster, ns, lease).await {
        Ok(Some(meta)) if attempt.owns(&meta) => {
            let outcome = match delete_object(cluster, ns, lease, DELETE_WAIT).await {
                Ok(_) => "the allocated object was deleted".to_owned(),
                Err(e) => format!("deleting the allocated object failed ({e}); cleanup is pending"),
            };
            (Some(lease.id()), outcome)
        }
        Ok(Some(_)) => (None, "the creation name is held by an object without this attempt's annotations; cleanup is pending".to_owned()),
        Ok(None) => (None, "no object carries the creation name; cleanup is pending".to_owned()),
        Err(e) => (None, format!("looking the creation name up failed ({e}); cleanup is pending")),
    };
    let elapsed = started.elapsed();
    let kind = if failure.deadline { "timed out" } else { "failed" };
    let message = format!("Pod acquisition {kind}: {}; {outcome}", failure.what);
    tracing::warn!(creation_name = %attempt.creation_name, elapsed_ms = elapsed.as_millis() as u64, "{message}");
    let ownership = match attempt.ownership(observed.as_deref()) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "the ownership envelope cannot be built; sending a plain error");
            return ProviderError::worker(message);
        }
    };
    // An expired deadline reports elapsed >= budget (the host classifies it transient); an
    // early failure reports its real, shorter elapsed time.
    let elapsed_ms = elapsed.as_millis() as u64;
    let budget_ms = (budget.as_millis() as u64).clamp(1, 86_400_000);
    let elapsed_ms = if failure.deadline {
        elapsed_ms.max(budget_ms)
    } else {
        elapsed_ms.min(budget_ms.saturating_sub(1))
    };
    let diagnostic = AcquisitionDiagnostic::new(
        AcquisitionPhase::Create,
        elapsed_ms.min(604_800_000),
        budget_ms,
    )
    .ok();
    ProviderError::creation_cleanup(message, ownership, diagnostic)
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
    if let Some(record) = params.lease_metadata.as_ref().and_then(|m| m.get(FAILED_CREATE_CLEANUP))
    {
        let ownership = Ownership::parse(record).map_err(|e| {
            ProviderError::worker(format!("leaseMetadata.failedCreateCleanup is invalid: {e}"))
        })?;
        return destroy_failed_create(cluster, settings, id, ownership).await;
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

async fn destroy_failed_create(
    cluster: &Cluster,
    settings: &Settings,
    lease_id: &str,
    ownership: Ownership,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let ns = settings.namespace.as_str();
    if ownership.account_fingerprint() != account_fingerprint(&cluster.server, ns) {
        return Err(ProviderError::worker(
            "The creation-cleanup record names another cluster or namespace; nothing was deleted",
        ));
    }
    let lookup = |e| cluster_err("Looking the creation up failed", e);
    if let Some(observed) = ownership.observed_provider_lease_id() {
        let Some(lease) = LeaseRef::parse(observed) else {
            return Err(ProviderError::worker(
                "The observed lease id is not one of this provider's",
            ));
        };
        if let Some(meta) = lease_object(cluster, ns, &lease).await.map_err(lookup)? {
            if !ownership_matches(&ownership, &meta) {
                return Err(ProviderError::worker(
                    "The observed object does not carry the creation's ownership annotations; nothing was deleted",
                ));
            }
            delete_object(cluster, ns, &lease, DELETE_WAIT)
                .await
                .map_err(|e| cluster_err("Deleting the lease failed", e))?;
        }
        return Ok(Some(TerminationReceipt::destroyed(lease_id)));
    }
    // Only the creation name: look under it (a Pod, else a Job); delete nothing.
    let attempt = ownership.attempt_id().to_owned();
    let mut found = None;
    for backend in [Backend::Pod, Backend::Job] {
        let lease = LeaseRef { backend, attempt: attempt.clone() };
        match lease_object(cluster, ns, &lease).await {
            Ok(Some(meta)) => {
                found = Some((lease, meta));
                break;
            }
            Ok(None) => {}
            Err(e) => {
                return Err(ProviderError::creation_cleanup(
                    format!("Looking the creation name up failed: {e}"),
                    ownership,
                    None,
                ))
            }
        }
    }
    match found {
        Some((lease, meta)) if ownership_matches(&ownership, &meta) => {
            tracing::info!(creation_name = %ownership.provider_lease_id(), "creation observed; not deleting");
            let observed = ownership
                .with_observed_provider_lease_id(lease.id())
                .map_err(|e| ProviderError::worker(format!("The observed id is unusable: {e}")))?;
            Err(ProviderError::creation_cleanup(
                "Creation observed: an object carries the creation name; destroy it by its observed id",
                observed,
                None,
            ))
        }
        Some(_) => Err(ProviderError::worker(
            "The creation name is held by an object without matching ownership annotations; nothing was deleted",
        )),
        None => Err(ProviderError::creation_cleanup(
            "No object carries the creation name; that is no proof of removal, cleanup stays unresolved",
            ownership,
            None,
        )),
    }
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
