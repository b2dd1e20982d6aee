//! Acquire, resume, release, stop and destroy: a lease is one container.
//!
//! * **Acquire** creates the container under the attempt's creation name with its ownership
//!   labels ([`crate::owner`]) and the least-privilege host config of [`container_body`], starts
//!   it, and checks that the workspace, home and temp directories are writable by the lease
//!   user. The whole attempt is bounded by `acquireTimeoutMs` and by the call's own deadline.
//!   When an attempt fails after a container may exist (the engine did not answer the create,
//!   or a later step failed), the creation name is looked up: a container carrying every
//!   ownership label is removed (compensation), and the answer is the creation-cleanup
//!   envelope with an acquisition diagnostic either way, naming the container observed — a
//!   name not found is no proof that nothing was created. A refusal (4xx) allocated nothing and
//!   is a plain error.
//! * **Resume** starts a stopped container; a missing, expired or foreign one is
//!   `{providerLeaseId: null, metadata: {expired: true, reason}}`.
//! * **Release** by `resourceDisposition`: `keep_running` leaves it, `stop_and_retain` stops it
//!   and keeps it, `destroy` removes it; without one a reusable lease is stopped (stop/start
//!   reuse) and any other is removed. `cancelActiveWork` kills the lease's running commands
//!   first.
//! * **Stop** (`environmentStopLease`) stops and never deletes.
//! * **Destroy** removes the container and its volumes; a missing one is `destroyed`
//!   (idempotent). With a `failedCreateCleanup` record naming only the creation name, the name
//!   is looked up and nothing is deleted: a container carrying the record's labels is answered
//!   as a cleanup envelope with its `observedProviderLeaseId`, no container is an unresolved
//!   envelope. With an observed id the container is removed once its labels match.
//! * **Orphan sweep**: [`sweep`] removes the environment's containers of this provider whose
//!   lease expired or whose main process died (never one stopped on purpose).

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use paperclip_sandbox_sdk::prelude::{
    AcquireLeaseParams, CreationOperation, JsonObject, Lease, ReleaseLeaseParams,
    ResourceDisposition, ResumeLeaseParams, TerminationReceipt,
};
use paperclip_sandbox_sdk::protocol::envelope::{
    AcquisitionDiagnostic, AcquisitionPhase, Ownership,
};
use paperclip_sandbox_sdk::protocol::wire_time::{format_rfc3339_ms, now_ms, parse_rfc3339_ms};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::config::{ContainerConfig, Settings};
use crate::engine::{
    is_running, labels_of, name_of, Engine, EngineError, LABEL_COMPANY, LABEL_ENVIRONMENT,
    LABEL_EXPIRES_AT, LABEL_PROVIDER, LABEL_REUSE, PROVIDER_LABEL_VALUE,
};
use crate::exec::{self, ActiveExecs};
use crate::owner::{engine_fingerprint, ownership_matches, valid_container_name, Attempt};

/// The lease-metadata key under which the host hands a creation-cleanup record back.
pub const FAILED_CREATE_CLEANUP: &str = "failedCreateCleanup";

/// Grace period of a container stop before the engine kills the main process.
const STOP_GRACE_SECS: i32 = 5;

/// The container's main process: waits until the lease expires (`$1` seconds, or forever),
/// exits promptly on `SIGTERM`. When it exits, the engine stops the container: an expiry the
/// host asked for is enforced by the engine itself.
const MAIN: &str = "trap 'exit 0' TERM INT; sleep \"$1\" & wait $!";

/// The readiness check run after start: the lease user can write its directories.
const READY: &str =
    "for d; do [ -d \"$d\" ] && [ -w \"$d\" ] || { echo \"$d\" >&2; exit 3; }; done";

/// The container's `/run`, an anonymous volume (see [`container_body`]).
pub const RUN_DIR: &str = "/run";

/// The lease metadata (no key named like a config key).
pub fn lease_metadata(settings: &Settings, id: &str, name: &str, reusable: bool) -> JsonObject {
    let value = json!({
        "remoteCwd": settings.workspace,
        "containerId": id,
        "creationName": name,
        "reusable": reusable,
        "home": settings.home,
        "tmpDir": "/tmp",
    });
    value.as_object().cloned().unwrap_or_default()
}

/// The create request of a lease container.
pub fn container_body(
    settings: &Settings,
    labels: HashMap<String, String>,
    sleep_arg: String,
) -> ContainerCreateBody {
    let volume = |target: &str| Mount {
        target: Some(target.to_owned()),
        typ: Some(MountType::VOLUME),
        ..Mount::default()
    };
    let tmpfs = HashMap::from([(
        "/tmp".to_owned(),
        format!("rw,nosuid,nodev,size={},mode=1777", settings.tmp_size_bytes),
    )]);
    ContainerCreateBody {
        image: Some(settings.image.clone()),
        user: Some(settings.user()),
        working_dir: Some(settings.workspace.clone()),
        entrypoint: Some(vec!["sh".to_owned(), "-c".to_owned(), MAIN.to_owned(), "sh".to_owned()]),
        cmd: Some(vec![sleep_arg]),
        env: Some(base_env(settings)),
        labels: Some(labels),
        attach_stdin: Some(false),
        attach_stdout: Some(false),
        attach_stderr: Some(false),
        tty: Some(false),
        host_config: Some(HostConfig {
            cap_drop: Some(vec!["ALL".to_owned()]),
            security_opt: Some(vec!["no-new-privileges".to_owned()]),
            privileged: Some(false),
            readonly_rootfs: Some(true),
            network_mode: Some(settings.network.clone()),
            memory: Some(settings.memory_bytes),
            memory_swap: Some(settings.memory_bytes),
            nano_cpus: Some(settings.nano_cpus),
            pids_limit: Some(settings.pids_limit),
            tmpfs: Some(tmpfs),
            // `/run` is an anonymous volume too: podman 4.3 mounts its own tmpfs over `/run`
            // of a read-only root, hiding the `/run/.containerenv` marker it writes; on a
            // volume the marker stays visible (Docker writes `/.dockerenv` either way).
            mounts: Some(vec![
                volume(&settings.workspace),
                volume(&settings.home),
                volume(RUN_DIR),
            ]),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

/// The environment every command of a lease starts from.
pub fn base_env(settings: &Settings) -> Vec<String> {
    vec![
        format!("HOME={}", settings.home),
        "TMPDIR=/tmp".to_owned(),
        format!("XDG_CACHE_HOME={}", settings.cache()),
    ]
}

fn engine_err(context: &str, e: EngineError) -> ProviderError {
    ProviderError::worker(format!("{context}: {e}"))
}

/// Why an attempt ended without a lease, after a container may exist.
struct Failure {
    what: String,
    deadline: bool,
}

/// `environmentAcquireLease`.
pub async fn acquire(
    engine: &Engine,
    settings: &Settings,
    params: &AcquireLeaseParams<ContainerConfig>,
    call_deadline: Option<Instant>,
) -> Result<Lease, ProviderError> {
    let started = Instant::now();
    let attempt = Attempt::for_acquire(params, engine_fingerprint(&settings.docker_host));
    if !valid_container_name(&attempt.creation_name) {
        return Err(ProviderError::invalid_params(
            "creationOperation.id must consist of letters, digits, '_', '.' and '-'",
        ));
    }
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
    // The budget: the configured one, inside the call's own deadline (less a margin to answer).
    let mut budget = settings.acquire_timeout;
    if let Some(d) = call_deadline {
        let left = d.saturating_duration_since(started).saturating_sub(Duration::from_millis(500));
        budget = budget.min(left.max(Duration::from_millis(100)));
    }
    let deadline = started + budget;

    if !engine
        .image_present(&settings.image)
        .await
        .map_err(|e| engine_err("Checking the image failed", e))?
    {
        return Err(ProviderError::worker(
            "The configured image is not present in the engine; build or pull it first \
             (see the provider README)",
        ));
    }
    let mut labels: HashMap<String, String> = attempt.labels().into_iter().collect();
    let sleep_arg = match expires_ms {
        Some(ms) => {
            labels.insert(LABEL_EXPIRES_AT.to_owned(), format_rfc3339_ms(ms));
            (((ms - now_ms()).max(1000) + 999) / 1000).to_string()
        }
        None => "infinity".to_owned(),
    };
    let body = container_body(settings, labels, sleep_arg);
    tracing::info!(creation_name = %attempt.creation_name, "creating container");

    let result =
        tokio::time::timeout_at(deadline, create_and_start(engine, settings, &attempt, body)).await;
    let failure = match result {
        Ok(Ok(id)) => {
            tracing::info!(container = %id, elapsed_ms = started.elapsed().as_millis() as u64, "container ready");
            let mut lease = Lease::new(id.clone()).with_metadata(lease_metadata(
                settings,
                &id,
                &attempt.creation_name,
                attempt.reusable,
            ));
            if let Some(ms) = expires_ms {
                lease = lease.with_expires_at(format_rfc3339_ms(ms));
            }
            return Ok(lease);
        }
        Ok(Err(Step::Refused(e))) => {
            return Err(ProviderError::worker(format!("Container creation refused: {e}")))
        }
        Ok(Err(Step::Failed(what))) => Failure { what, deadline: false },
        Err(_) => Failure {
            what: "the container was not ready within the acquisition budget".to_owned(),
            deadline: true,
        },
    };
    Err(cleanup_after_failure(engine, &attempt, started, budget, failure).await)
}

enum Step {
    /// The engine refused the create: nothing was allocated.
    Refused(EngineError),
    /// A container may exist.
    Failed(String),
}

async fn create_and_start(
    engine: &Engine,
    settings: &Settings,
    attempt: &Attempt,
    body: ContainerCreateBody,
) -> Result<String, Step> {
    let id = match engine.create(&attempt.creation_name, body).await {
        Ok(id) => id,
        Err(e) if e.status == Some(409) => {
            // The name is taken: a retry of this very attempt is adopted, anything else refused.
            match engine.inspect(&attempt.creation_name).await {
                Ok(Some(c)) if attempt.owns(&name_of(&c), &labels_of(&c)) => {
                    c.id.clone()
                        .ok_or_else(|| Step::Failed("the engine gave no container id".into()))?
                }
                _ => return Err(Step::Refused(e)),
            }
        }
        Err(e) if e.is_refusal() => return Err(Step::Refused(e)),
        Err(e) => return Err(Step::Failed(e.to_string())),
    };
    engine.start(&id).await.map_err(|e| Step::Failed(e.to_string()))?;
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), READY.to_owned(), "sh".to_owned()];
    argv.extend([
        settings.workspace.clone(),
        settings.home.clone(),
        settings.cache(),
        "/tmp".to_owned(),
    ]);
    let ready = exec::run_simple(engine, &id, &settings.user(), argv)
        .await
        .map_err(|e| Step::Failed(e.to_string()))?;
    if ready.exit_code != Some(0) {
        return Err(Step::Failed(
            "the image's workspace, home, cache or temp directory is not writable by the lease user"
                .to_owned(),
        ));
    }
    Ok(id)
}

/// Looks the creation name up, removes a container carrying the attempt's labels, and builds
/// the cleanup envelope.
async fn cleanup_after_failure(
    engine: &Engine,
    attempt: &Attempt,
    started: Instant,
    budget: Duration,
    failure: Failure,
) -> ProviderError {
    let (observed, outcome) = match engine.inspect(&attempt.creation_name).await {
        Ok(Some(c)) if attempt.owns(&name_of(&c), &labels_of(&c)) => {
            let id = c.id.clone().unwrap_or_default();
            let outcome = match engine.remove(&id).await {
                Ok(_) => "the allocated container was removed".to_owned(),
                Err(e) => {
                    format!("removing the allocated container failed ({e}); cleanup is pending")
                }
            };
            (Some(id), outcome)
        }
        Ok(Some(_)) => (
            None,
            "the creation name is held by a container without this attempt's labels; cleanup is \
             pending"
                .to_owned(),
        ),
        Ok(None) => (None, "no container carries the creation name; cleanup is pending".to_owned()),
        Err(e) => (None, format!("looking the creation name up failed ({e}); cleanup is pending")),
    };
    let elapsed = started.elapsed();
    let kind = if failure.deadline { "timed out" } else { "failed" };
    let message = format!("Container acquisition {kind}: {}; {outcome}", failure.what);
    tracing::warn!(creation_name = %attempt.creation_name, elapsed_ms = elapsed.as_millis() as u64, "{message}");
    let ownership = match attempt.ownership(observed.as_deref().filter(|s| !s.is_empty())) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "the ownership envelope cannot be built; sending a plain error");
            return ProviderError::worker(message);
        }
    };
    // A deadline that expired reports elapsed >= budget (the host classifies it transient); an
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

fn lease_expired(labels: &HashMap<String, String>) -> bool {
    labels.get(LABEL_EXPIRES_AT).and_then(|s| parse_rfc3339_ms(s)).is_some_and(|ms| ms <= now_ms())
}

/// True when the container's labels say it is this provider's and this company's and
/// environment's.
pub fn belongs(labels: &HashMap<String, String>, company: &str, environment: &str) -> bool {
    labels.get(LABEL_PROVIDER).map(String::as_str) == Some(PROVIDER_LABEL_VALUE)
        && labels.get(LABEL_COMPANY).map(String::as_str) == Some(company)
        && labels.get(LABEL_ENVIRONMENT).map(String::as_str) == Some(environment)
}

/// `environmentResumeLease`.
pub async fn resume(
    engine: &Engine,
    settings: &Settings,
    params: &ResumeLeaseParams<ContainerConfig>,
) -> Result<Lease, ProviderError> {
    let id = params.provider_lease_id.as_str();
    let fail = |e| engine_err("Resuming the container failed", e);
    let Some(c) = engine.inspect(id).await.map_err(fail)? else {
        return Ok(expired("not_found"));
    };
    let labels = labels_of(&c);
    if !belongs(&labels, &params.base.company_id, &params.base.environment_id) {
        tracing::warn!(container = %id, "resume of a container of another company or environment refused");
        return Ok(expired("not_owned"));
    }
    if lease_expired(&labels) {
        engine.remove(id).await.map_err(fail)?;
        return Ok(expired("expired"));
    }
    if !is_running(&c) {
        engine.start(id).await.map_err(fail)?;
    }
    let reusable = labels.get(LABEL_REUSE).map(String::as_str) == Some("true");
    let mut lease =
        Lease::new(id).with_metadata(lease_metadata(settings, id, &name_of(&c), reusable));
    if let Some(at) = labels.get(LABEL_EXPIRES_AT) {
        lease = lease.with_expires_at(at.clone());
    }
    tracing::info!(container = %id, "lease resumed");
    Ok(lease)
}

fn is_reusable(metadata: Option<&JsonObject>) -> bool {
    metadata.and_then(|m| m.get("reusable")).and_then(Value::as_bool).unwrap_or(false)
}

/// `environmentReleaseLease`.
pub async fn release(
    engine: &Engine,
    settings: &Settings,
    active: &ActiveExecs,
    params: &ReleaseLeaseParams<ContainerConfig>,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let Some(id) = params.provider_lease_id.as_deref() else {
        return Ok(None);
    };
    if params.cancel_active_work.unwrap_or(false) {
        let killed = active.kill_all(engine, id, &settings.user()).await;
        tracing::info!(container = %id, killed, "active work cancelled before release");
    }
    let stop = match &params.resource_disposition {
        Some(ResourceDisposition::KeepRunning) => return Ok(None),
        Some(ResourceDisposition::StopAndRetain) => true,
        Some(ResourceDisposition::Destroy) => false,
        _ => is_reusable(params.lease_metadata.as_ref()),
    };
    if stop {
        return stop_container(engine, id).await.map(Some);
    }
    destroy(engine, settings, params).await
}

/// Stops `id` and keeps it; a missing container is `destroyed`.
pub async fn stop_container(
    engine: &Engine,
    id: &str,
) -> Result<TerminationReceipt, ProviderError> {
    let present = engine
        .stop(id, STOP_GRACE_SECS)
        .await
        .map_err(|e| ProviderError::worker(format!("Stopping the container failed: {e}")))?;
    if !present {
        return Ok(TerminationReceipt::destroyed(id));
    }
    // Confirm: the engine answered, but a receipt says what is true now.
    match engine.inspect(id).await {
        Ok(Some(c)) if !is_running(&c) => Ok(TerminationReceipt::stopped(id)),
        Ok(Some(_)) => Err(ProviderError::worker("The container is still running after the stop")),
        Ok(None) => Ok(TerminationReceipt::destroyed(id)),
        Err(e) => Err(engine_err("Confirming the stop failed", e)),
    }
}

/// `environmentDestroyLease`.
pub async fn destroy(
    engine: &Engine,
    settings: &Settings,
    params: &ReleaseLeaseParams<ContainerConfig>,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let Some(id) = params.provider_lease_id.as_deref() else {
        return Ok(None);
    };
    if let Some(record) = params.lease_metadata.as_ref().and_then(|m| m.get(FAILED_CREATE_CLEANUP))
    {
        let ownership = Ownership::parse(record).map_err(|e| {
            ProviderError::worker(format!("leaseMetadata.failedCreateCleanup is invalid: {e}"))
        })?;
        return destroy_failed_create(engine, settings, id, ownership).await;
    }
    if id.starts_with(CreationOperation::NAME_PREFIX) {
        return Err(ProviderError::worker(
            "The lease id is a creation name but no failedCreateCleanup record came with it; \
             nothing was looked up or removed",
        ));
    }
    match engine.inspect(id).await.map_err(|e| engine_err("Destroying the container failed", e))? {
        None => {}
        Some(c) => {
            if labels_of(&c).get(LABEL_PROVIDER).map(String::as_str) != Some(PROVIDER_LABEL_VALUE) {
                return Err(ProviderError::worker(
                    "The container does not carry this provider's label; nothing was removed",
                ));
            }
            engine
                .remove(id)
                .await
                .map_err(|e| engine_err("Destroying the container failed", e))?;
            tracing::info!(container = %id, "container removed");
        }
    }
    Ok(Some(TerminationReceipt::destroyed(id)))
}

async fn destroy_failed_create(
    engine: &Engine,
    settings: &Settings,
    lease_id: &str,
    ownership: Ownership,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    if ownership.account_fingerprint() != engine_fingerprint(&settings.docker_host) {
        return Err(ProviderError::worker(
            "The creation-cleanup record names another engine; nothing was removed",
        ));
    }
    let lookup = |e| engine_err("Looking the creation up failed", e);
    if let Some(observed) = ownership.observed_provider_lease_id() {
        if let Some(c) = engine.inspect(observed).await.map_err(lookup)? {
            if !ownership_matches(&ownership, &name_of(&c), &labels_of(&c)) {
                return Err(ProviderError::worker(
                    "The observed container does not carry the creation's ownership labels; \
                     nothing was removed",
                ));
            }
            engine
                .remove(observed)
                .await
                .map_err(|e| engine_err("Removing the container failed", e))?;
        }
        return Ok(Some(TerminationReceipt::destroyed(lease_id)));
    }
    let name = ownership.provider_lease_id().to_owned();
    match engine.inspect(&name).await {
        Ok(Some(c)) if ownership_matches(&ownership, &name_of(&c), &labels_of(&c)) => {
            let id = c.id.clone().unwrap_or_default();
            tracing::info!(creation_name = %name, container = %id, "creation observed; not removing");
            let observed = ownership
                .with_observed_provider_lease_id(id)
                .map_err(|e| ProviderError::worker(format!("The observed id is unusable: {e}")))?;
            Err(ProviderError::creation_cleanup(
                "Creation observed: a container carries the creation name; destroy it by its \
                 observed id",
                observed,
                None,
            ))
        }
        Ok(Some(_)) => Err(ProviderError::worker(
            "The creation name is held by a container without matching ownership labels; \
             nothing was removed",
        )),
        Ok(None) => Err(ProviderError::creation_cleanup(
            "No container carries the creation name; that is no proof of removal, cleanup stays \
             unresolved",
            ownership,
            None,
        )),
        Err(e) => Err(ProviderError::creation_cleanup(
            format!("Looking the creation name up failed: {e}"),
            ownership,
            None,
        )),
    }
}

/// Removes the environment's orphaned containers (see the module docs); the number removed.
///
/// An orphan is a container whose lease expired, or a non-reusable one whose main process died
/// (a non-zero exit: killed, out of memory). A deliberate stop (release with
/// `stop_and_retain`, `environmentStopLease`) ends the main process cleanly with status 0, so
/// such a container is kept, reusable or not.
pub async fn sweep(
    engine: &Engine,
    company: &str,
    environment: &str,
) -> Result<usize, EngineError> {
    let list = engine
        .list_labelled(&[
            (LABEL_PROVIDER, PROVIDER_LABEL_VALUE),
            (LABEL_COMPANY, company),
            (LABEL_ENVIRONMENT, environment),
        ])
        .await?;
    let mut removed = 0;
    for c in list {
        let Some(id) = c.id.as_deref() else { continue };
        let labels = c.labels.clone().unwrap_or_default();
        let reusable = labels.get(LABEL_REUSE).map(String::as_str) == Some("true");
        let exited = c.state.as_ref().map(|s| s.to_string()).as_deref() == Some("exited");
        let orphan = if lease_expired(&labels) {
            true
        } else if exited && !reusable {
            let state = engine.inspect(id).await?.and_then(|c| c.state);
            state.and_then(|s| s.exit_code).is_some_and(|code| code != 0)
        } else {
            false
        };
        if orphan && engine.remove(id).await? {
            tracing::info!(container = %id, "orphaned container removed");
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_body_is_least_privilege() {
        let settings = Settings::new(&ContainerConfig::default());
        let body = container_body(&settings, HashMap::new(), "infinity".into());
        let host = body.host_config.unwrap();
        assert_eq!(host.cap_drop, Some(vec!["ALL".to_owned()]));
        assert_eq!(host.security_opt, Some(vec!["no-new-privileges".to_owned()]));
        assert_eq!((host.readonly_rootfs, host.privileged), (Some(true), Some(false)));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert!(host.binds.is_none(), "no host paths are mounted");
        let mounts = host.mounts.unwrap();
        assert_eq!(mounts.iter().filter(|m| m.source.is_some()).count(), 0);
        let targets: Vec<_> = mounts.iter().filter_map(|m| m.target.as_deref()).collect();
        assert_eq!(targets, ["/workspace", "/home/sandbox", "/run"], "anonymous volumes only");
        assert_eq!(body.user.as_deref(), Some("1000:1000"));
        assert!(host.pids_limit.is_some() && host.memory.is_some());
    }
}
