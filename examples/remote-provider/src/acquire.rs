//! Fresh acquisition with a cap and a lookup by creation name (seed 001, PR #20828), on the
//! SDK kit's creation attempt (`paperclip_sandbox_sdk::kit::creation`) over [`RemoteBackend`].
//!
//! 1. `POST /sandbox` with the creation name `paperclip-create-<id>` and the ownership labels.
//!    The call runs in its own task: it may hang, and its late answer must never undo an
//!    adoption.
//! 2. Until `createLookupDelayMs`, the sandbox is read by id once the create answered.
//! 3. At `createLookupDelayMs`, a sandbox not yet `started` is looked up by creation name (or
//!    read by id). `started` is adopted; a snapshot-preparation state keeps waiting inside the
//!    cap; any other state, or no sandbox under the name, ends the attempt with the cleanup
//!    envelope and an acquisition diagnostic whose `elapsedMs` reached `budgetMs` (the lookup
//!    delay), which the host classifies transient.
//! 4. At `acquireCapMs` the attempt ends the same way, with the cap as `budgetMs`.
//! 5. A failure state (`error`, `build_failed`, gone…) before a deadline ends the attempt
//!    early: the diagnostic's `elapsedMs` is below its budget, so the host does not retry.
//! 6. A create call that fails before adoption is compensated: the name is looked up, a
//!    sandbox carrying every ownership label is deleted and its removal awaited, and the
//!    envelope is returned either way (a missing name is not proof that nothing was created).
//!    A refusal (`4xx`) allocated nothing and is a plain error.
//!
//! Once adopted, a sandbox is never deleted by this attempt, whatever the create call answers
//! later.

use std::fmt;

use paperclip_sandbox_sdk::async_trait;
use paperclip_sandbox_sdk::kit::creation::{
    create_bounded, CreationAttempt, CreationBackend, CreationPlan, Progress,
};
use paperclip_sandbox_sdk::prelude::{AcquireLeaseParams, JsonObject, Lease};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::json;

use crate::api::{ApiClient, ApiError, CreateSandbox, Sandbox, SandboxState};
use crate::config::RemoteConfig;
use crate::lifecycle::delete_confirmed;

/// The value of the `paperclip-provider` label.
pub const PROVIDER_LABEL_VALUE: &str = "remote";

/// The lease metadata of a sandbox (no key is named like a config key): its id, creation
/// name, reusability and, when the API names one, its working directory as `remoteCwd`.
pub fn lease_metadata(sandbox: &Sandbox, creation_name: &str, reusable: bool) -> JsonObject {
    let mut value = json!({
        "sandboxId": sandbox.id,
        "creationName": creation_name,
        "reusable": reusable,
    });
    if let Some(dir) = sandbox.work_dir.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        value["remoteCwd"] = json!(dir);
    }
    value.as_object().cloned().unwrap_or_default()
}

/// The sandbox API as the kit's creation backend: one account (client and config).
#[derive(Clone)]
pub struct RemoteBackend {
    /// The API client.
    pub client: ApiClient,
    /// The account's config.
    pub config: RemoteConfig,
}

/// A failed API call, or a removal that was not confirmed.
#[derive(Debug)]
pub enum RemoteFailure {
    /// The API call failed.
    Api(ApiError),
    /// The deletion was not confirmed.
    Removal(String),
}

impl fmt::Display for RemoteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteFailure::Api(e) => e.fmt(f),
            RemoteFailure::Removal(m) => f.write_str(m),
        }
    }
}

#[async_trait]
impl CreationBackend for RemoteBackend {
    type Resource = Sandbox;
    type Error = RemoteFailure;

    async fn create(&self, attempt: &CreationAttempt) -> Result<Sandbox, RemoteFailure> {
        let request = CreateSandbox {
            name: attempt.creation_name.clone(),
            labels: attempt.labels().into_iter().collect(),
            auto_delete_interval: self.config.ttl_minutes.map(|m| m.get() as i64),
            snapshot: self.config.snapshot.clone(),
        };
        // Longer than the cap: the cap, not a transport timeout, ends a hanging create (a
        // timed-out create would otherwise count as a failed one and be compensated).
        let timeout = self.config.acquire_cap() + self.config.request_timeout();
        self.client.create(&request, timeout).await.map_err(RemoteFailure::Api)
    }

    async fn inspect_by_name(&self, name: &str) -> Result<Option<Sandbox>, RemoteFailure> {
        self.client.find_by_name(name).await.map_err(RemoteFailure::Api)
    }

    async fn inspect_by_id(&self, id: &str) -> Result<Option<Sandbox>, RemoteFailure> {
        self.client.get(id).await.map_err(RemoteFailure::Api)
    }

    async fn remove(&self, sandbox: &Sandbox) -> Result<(), RemoteFailure> {
        delete_confirmed(&self.client, &self.config, &sandbox.id)
            .await
            .map_err(|e| RemoteFailure::Removal(e.message().to_owned()))
    }

    async fn progress(&self, sandbox: &Sandbox) -> Result<Progress<Sandbox>, RemoteFailure> {
        let Some(current) = self.client.get(&sandbox.id).await.map_err(RemoteFailure::Api)? else {
            return Ok(Progress::Failed("the sandbox disappeared while being created".into()));
        };
        Ok(match current.state {
            SandboxState::Started => Progress::Ready(current),
            s if s.is_preparing_snapshot() => Progress::Preparing,
            SandboxState::Creating | SandboxState::Starting => Progress::Pending,
            other => {
                Progress::Failed(format!("the sandbox reached state {other} while being created"))
            }
        })
    }

    fn resource_id(&self, sandbox: &Sandbox) -> String {
        sandbox.id.clone()
    }

    fn resource_name<'a>(&self, sandbox: &'a Sandbox) -> Option<&'a str> {
        Some(&sandbox.name)
    }

    fn resource_label<'a>(&self, sandbox: &'a Sandbox, key: &str) -> Option<&'a str> {
        sandbox.labels.get(key).map(String::as_str)
    }

    fn is_refusal(&self, error: &RemoteFailure) -> bool {
        matches!(error, RemoteFailure::Api(e) if e.is_refusal())
    }
}

/// Runs one fresh acquisition.
pub async fn acquire(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &AcquireLeaseParams<RemoteConfig>,
) -> Result<Lease, ProviderError> {
    let attempt =
        CreationAttempt::for_acquire(params, PROVIDER_LABEL_VALUE, config.account_fingerprint());
    let plan = CreationPlan::new(config.acquire_cap(), "sandbox")
        .with_lookup_delay(config.create_lookup_delay())
        .with_poll_interval(config.poll_interval())
        .leaving_failures_to_the_host();
    let backend = RemoteBackend { client: client.clone(), config: config.clone() };
    let sandbox = create_bounded(&backend, &attempt, &plan).await?;
    let metadata = lease_metadata(&sandbox, &attempt.creation_name, attempt.reusable);
    Ok(Lease::new(sandbox.id).with_metadata(metadata))
}
