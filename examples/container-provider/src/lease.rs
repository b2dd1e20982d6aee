//! Acquire, resume, release, stop and destroy: a lease is one container.
//!
//! * **Acquire** creates the container under the attempt's creation name with its ownership
//!   labels (the SDK kit's creation attempt, over [`ContainerBackend`]) and the least-privilege host config of [`container_body`], starts
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
use std::sync::Arc;

use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, HostConfig, Mount, MountType,
};
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
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::config::{ContainerConfig, Settings};
use crate::engine::{
    is_running, labels_of, name_of, Engine, EngineError, LABEL_COMPANY, LABEL_ENVIRONMENT,
    LABEL_EXPIRES_AT, LABEL_PROVIDER, LABEL_REUSE, PROVIDER_LABEL_VALUE,
};
use crate::error::Error;
use crate::exec::{self, ActiveExecs};

pub use paperclip_sandbox_sdk::kit::creation::FAILED_CREATE_CLEANUP;

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

/// `environmentAcquireLease`.
pub async fn acquire(
    engine: &Engine,
    settings: &Settings,
    params: &AcquireLeaseParams<ContainerConfig>,
    call_deadline: Option<Instant>,
) -> Result<Lease, ProviderError> {
    let started = Instant::now();
    let attempt = CreationAttempt::for_acquire(
        params,
        PROVIDER_LABEL_VALUE,
        engine_fingerprint(&settings.docker_host),
    );
    if !valid_container_name(&attempt.creation_name) {
        return Err(ProviderError::invalid_params(
            "creationOperation.id must consist of letters, digits, '_', '.' and '-'",
        ));
    }
    let expiry = RequestedExpiry::parse(params.requested_expires_at.as_deref())?;
    let budget = acquire_budget(settings.acquire_timeout, call_deadline, started);

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
    let sleep_arg = match expiry {
        Some(x) => {
            labels.insert(LABEL_EXPIRES_AT.to_owned(), x.to_rfc3339());
            x.seconds_left().to_string()
        }
        None => "infinity".to_owned(),
    };
    let backend = ContainerBackend {
        engine: engine.clone(),
        settings: settings.clone(),
        body: Some(Arc::new(container_body(settings, labels, sleep_arg))),
    };
    let plan = CreationPlan::new(budget, "container").started_at(started);
    let container = create_bounded(&backend, &attempt, &plan).await?;
    let id = container.id;
    let mut lease = Lease::new(id.clone()).with_metadata(lease_metadata(
        settings,
        &id,
        &attempt.creation_name,
        attempt.reusable,
    ));
    if let Some(x) = expiry {
        lease = lease.with_expires_at(x.to_rfc3339());
    }
    Ok(lease)
}

/// The fingerprint of an engine address (SHA-256 hex): which engine a cleanup record names.
pub fn engine_fingerprint(docker_host: &str) -> String {
    let digest = Sha256::digest(docker_host.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// True when `name` is a container name every Docker-API engine accepts.
pub fn valid_container_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && name.len() <= 200
}

/// A container as a creation attempt sees it.
#[derive(Debug, Clone)]
pub struct Container {
    /// The engine's id.
    pub id: String,
    /// The name (without the leading `/`).
    pub name: String,
    /// The labels.
    pub labels: HashMap<String, String>,
}

impl Container {
    fn of(c: &ContainerInspectResponse) -> Option<Container> {
        Some(Container { id: c.id.clone()?, name: name_of(c), labels: labels_of(c) })
    }
}

/// The engine as the kit's creation backend: create (the prepared body), inspect, remove
/// (with its volumes), and readiness (start, then the lease user can write its directories).
#[derive(Clone)]
pub struct ContainerBackend {
    /// The engine.
    pub engine: Engine,
    /// The lease settings.
    pub settings: Settings,
    /// The create request; `None` for a backend that only looks up and removes.
    pub body: Option<Arc<ContainerCreateBody>>,
}

#[async_trait]
impl CreationBackend for ContainerBackend {
    type Resource = Container;
    type Error = EngineError;

    async fn create(&self, attempt: &CreationAttempt) -> Result<Container, EngineError> {
        let body = self.body.as_deref().cloned().unwrap_or_default();
        let id = self.engine.create(&attempt.creation_name, body).await?;
        let labels = attempt.labels().into_iter().collect();
        Ok(Container { id, name: attempt.creation_name.clone(), labels })
    }

    async fn inspect_by_name(&self, name: &str) -> Result<Option<Container>, EngineError> {
        Ok(self.engine.inspect(name).await?.as_ref().and_then(Container::of))
    }

    async fn remove(&self, container: &Container) -> Result<(), EngineError> {
        self.engine.remove(&container.id).await.map(|_| ())
    }

    async fn progress(&self, container: &Container) -> Result<Progress<Container>, EngineError> {
        let (engine, settings) = (&self.engine, &self.settings);
        if let Err(e) = engine.start(&container.id).await {
            return Ok(Progress::Failed(e.to_string()));
        }
        let mut argv = vec!["sh".to_owned(), "-c".to_owned(), READY.to_owned(), "sh".to_owned()];
        argv.extend([
            settings.workspace.clone(),
            settings.home.clone(),
            settings.cache(),
            "/tmp".to_owned(),
        ]);
        Ok(match exec::run_simple(engine, &container.id, &settings.user(), argv).await {
            Err(e) => Progress::Failed(e.to_string()),
            Ok(ready) if ready.exit_code != Some(0) => Progress::Failed(
                "the image's workspace, home, cache or temp directory is not writable by the \
                 lease user"
                    .to_owned(),
            ),
            Ok(_) => Progress::Ready(container.clone()),
        })
    }

    fn resource_id(&self, container: &Container) -> String {
        container.id.clone()
    }

    fn resource_name<'a>(&self, container: &'a Container) -> Option<&'a str> {
        Some(&container.name)
    }

    fn resource_label<'a>(&self, container: &'a Container, key: &str) -> Option<&'a str> {
        container.labels.get(key).map(String::as_str)
    }

    fn is_refusal(&self, error: &EngineError) -> bool {
        error.is_refusal()
    }

    fn is_conflict(&self, error: &EngineError) -> bool {
        error.status == Some(409)
    }
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
) -> Result<Option<TerminationReceipt>, Error> {
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
    Ok(destroy(engine, settings, params).await?)
}

/// Stops `id` and keeps it; a missing container is `destroyed`. Its failures are
/// [`Error::Backend`]: the stop-error envelope on `environmentStopLease`.
pub async fn stop_container(engine: &Engine, id: &str) -> Result<TerminationReceipt, Error> {
    let present = match engine.stop(id, STOP_GRACE_SECS).await {
        Ok(present) => present,
        Err(e) => return Err(Error::Backend(format!("Stopping the container failed: {e}"))),
    };
    if !present {
        return Ok(TerminationReceipt::destroyed(id));
    }
    // Confirm: the engine answered, but a receipt says what is true now.
    match engine.inspect(id).await {
        Ok(Some(c)) if !is_running(&c) => Ok(TerminationReceipt::stopped(id)),
        Ok(Some(_)) => {
            Err(Error::Backend("The container is still running after the stop".to_owned()))
        }
        Ok(None) => Ok(TerminationReceipt::destroyed(id)),
        Err(e) => Err(Error::Backend(format!("Confirming the stop failed: {e}"))),
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
    if let Some(ownership) = failed_create_cleanup(params.lease_metadata.as_ref())? {
        let backend =
            ContainerBackend { engine: engine.clone(), settings: settings.clone(), body: None };
        let fingerprint = engine_fingerprint(&settings.docker_host);
        return destroy_failed_create(&backend, id, ownership, &fingerprint, "container").await;
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

    #[test]
    fn creation_names_and_engine_fingerprints() {
        let name =
            format!("paperclip-create-{}", paperclip_sandbox_sdk::kit::creation::generate_uuid());
        assert!(valid_container_name(&name));
        assert!(!valid_container_name("paperclip-create-a/b"));
        assert!(!valid_container_name("-x"));
        let fp = engine_fingerprint("unix:///x");
        assert_eq!(fp.len(), 64);
        assert_ne!(fp, engine_fingerprint("unix:///y"));
    }
}
