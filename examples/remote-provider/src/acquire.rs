//! Fresh acquisition with a cap and a lookup by creation name (seed 001, PR #20828).
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

use std::time::Duration;

use paperclip_sandbox_sdk::prelude::{AcquireLeaseParams, JsonObject, Lease};
use paperclip_sandbox_sdk::protocol::envelope::{AcquisitionDiagnostic, AcquisitionPhase};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

use crate::api::{ApiClient, ApiError, CreateSandbox, Sandbox, SandboxState};
use crate::config::RemoteConfig;
use crate::lifecycle::delete_confirmed;
use crate::owner::Attempt;

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

/// Why an attempt ended without a lease.
enum End {
    /// A deadline (the lookup delay or the cap) expired; `budget` is that deadline.
    Deadline { budget: Duration, what: String },
    /// An early failure, before any deadline.
    Early { what: String },
}

/// Runs one fresh acquisition.
pub async fn acquire(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &AcquireLeaseParams<RemoteConfig>,
) -> Result<Lease, ProviderError> {
    let started = Instant::now();
    let attempt = Attempt::for_acquire(params, config.account_fingerprint());
    let request = CreateSandbox {
        name: attempt.creation_name.clone(),
        labels: attempt.label_map(),
        auto_delete_interval: config.ttl_minutes.map(|m| m.get() as i64),
        snapshot: config.snapshot.clone(),
    };
    tracing::info!(creation_name = %attempt.creation_name, "creating sandbox");
    let mut create: JoinHandle<Result<Sandbox, ApiError>> = tokio::spawn({
        let client = client.clone();
        // Longer than the cap: the cap, not a transport timeout, ends a hanging create (a
        // timed-out create would otherwise count as a failed one and be compensated).
        let timeout = config.acquire_cap() + config.request_timeout();
        async move { client.create(&request, timeout).await }
    });
    let lookup_at = started + config.create_lookup_delay();
    let cap_at = started + config.acquire_cap();
    let mut create_pending = true;
    let mut sandbox_id: Option<String> = None;

    let end = loop {
        let now = Instant::now();
        let observed = match &sandbox_id {
            Some(id) => Some(client.get(id).await),
            None if now >= lookup_at => {
                tracing::info!(creation_name = %attempt.creation_name, "create not answered; looking the name up");
                Some(client.find_by_name(&attempt.creation_name).await)
            }
            None => None,
        };
        match observed {
            Some(Ok(Some(sandbox))) if !attempt.owns(&sandbox) => {
                break End::Early {
                    what: "the sandbox under the creation name lacks this attempt's ownership \
                           labels"
                        .to_owned(),
                };
            }
            Some(Ok(Some(sandbox))) => {
                sandbox_id = Some(sandbox.id.clone());
                match sandbox.state {
                    SandboxState::Started => {
                        detach_create(create, create_pending, &sandbox.id);
                        tracing::info!(sandbox_id = %sandbox.id, elapsed_ms = started.elapsed().as_millis() as u64, "sandbox adopted");
                        let metadata =
                            lease_metadata(&sandbox, &attempt.creation_name, attempt.reusable);
                        return Ok(Lease::new(sandbox.id).with_metadata(metadata));
                    }
                    s if s.is_preparing_snapshot() => {}
                    SandboxState::Creating | SandboxState::Starting if now >= lookup_at => {
                        break End::Deadline {
                            budget: config.create_lookup_delay(),
                            what: format!(
                                "the sandbox was still {} at the lookup delay",
                                sandbox.state
                            ),
                        };
                    }
                    SandboxState::Creating | SandboxState::Starting => {}
                    other => {
                        break End::Early {
                            what: format!("the sandbox reached state {other} while being created"),
                        }
                    }
                }
            }
            Some(Ok(None)) if sandbox_id.is_some() => {
                break End::Early {
                    what: "the sandbox disappeared while being created".to_owned(),
                };
            }
            Some(Ok(None)) => {
                break End::Deadline {
                    budget: config.create_lookup_delay(),
                    what: "no sandbox carried the creation name at the lookup delay".to_owned(),
                };
            }
            Some(Err(e)) => tracing::warn!(error = %e, "reading the sandbox failed; retrying"),
            None => {}
        }
        if Instant::now() >= cap_at {
            break End::Deadline {
                budget: config.acquire_cap(),
                what: "the sandbox did not start within the acquisition cap".to_owned(),
            };
        }
        // Nothing to read before the lookup delay while the id is unknown: wait for the create
        // answer or the lookup; otherwise poll.
        let now = Instant::now();
        let wake = if sandbox_id.is_some() || now >= lookup_at {
            now + config.poll_interval()
        } else {
            lookup_at
        };
        let wake = wake.min(cap_at);
        if create_pending {
            tokio::select! {
                answer = &mut create => {
                    create_pending = false;
                    match answer {
                        Ok(Ok(sandbox)) => {
                            tracing::debug!(sandbox_id = %sandbox.id, state = %sandbox.state, "create answered");
                            sandbox_id = Some(sandbox.id);
                        }
                        Ok(Err(e)) => {
                            return Err(create_failed(client, config, &attempt, started, e).await);
                        }
                        Err(join) => {
                            let e = ApiError::Transport {
                                operation: "POST /sandbox".to_owned(),
                                reason: format!("the create task ended: {join}"),
                            };
                            return Err(create_failed(client, config, &attempt, started, e).await);
                        }
                    }
                }
                _ = sleep_until(wake) => {}
            }
        } else {
            sleep_until(wake).await;
        }
    };

    create.abort();
    let elapsed = started.elapsed();
    let (budget, message) = match end {
        End::Deadline { budget, what } => {
            // Deadlines are checked against the clock before this point: elapsed >= budget.
            (
                budget,
                format!("Sandbox acquisition timed out: {what}; allocation cleanup is pending"),
            )
        }
        End::Early { what } => (
            config.acquire_cap(),
            format!("Sandbox creation failed: {what}; allocation cleanup is pending"),
        ),
    };
    tracing::warn!(creation_name = %attempt.creation_name, elapsed_ms = elapsed.as_millis() as u64, budget_ms = budget.as_millis() as u64, "{message}");
    Err(cleanup_error(&attempt, sandbox_id.as_deref(), message, elapsed, budget))
}

/// After an adoption, the create call may still be running: let it finish in the background
/// and only log a late failure. It never triggers a compensating delete.
fn detach_create(create: JoinHandle<Result<Sandbox, ApiError>>, pending: bool, adopted: &str) {
    if !pending {
        return;
    }
    let adopted = adopted.to_owned();
    tokio::spawn(async move {
        match create.await {
            Ok(Ok(_)) => {
                tracing::debug!(sandbox_id = %adopted, "late create answer for an adopted sandbox")
            }
            Ok(Err(e)) => {
                tracing::warn!(sandbox_id = %adopted, error = %e, "create call failed after the sandbox was adopted; keeping the sandbox")
            }
            Err(_) => {}
        }
    });
}

/// The create call failed before any adoption.
async fn create_failed(
    client: &ApiClient,
    config: &RemoteConfig,
    attempt: &Attempt,
    started: Instant,
    error: ApiError,
) -> ProviderError {
    if error.is_refusal() {
        tracing::warn!(error = %error, "the API refused the create request");
        return ProviderError::worker(format!("Sandbox creation refused: {error}"));
    }
    let elapsed = started.elapsed();
    let (observed, outcome) = match client.find_by_name(&attempt.creation_name).await {
        Ok(Some(sandbox)) if attempt.owns(&sandbox) => {
            let confirmed = delete_confirmed(client, config, &sandbox.id).await;
            let outcome = match confirmed {
                Ok(()) => "allocated sandbox cleanup was confirmed".to_owned(),
                Err(e) => format!("allocated sandbox cleanup is pending ({})", e.message()),
            };
            (Some(sandbox.id), outcome)
        }
        Ok(Some(_)) => (
            None,
            "the creation name is held by a sandbox without this attempt's labels; cleanup is \
             pending"
                .to_owned(),
        ),
        Ok(None) => {
            (None, "no sandbox carries the creation name yet; cleanup is pending".to_owned())
        }
        Err(e) => (None, format!("looking the creation name up failed ({e}); cleanup is pending")),
    };
    let message = format!("Sandbox creation failed: {error}; {outcome}");
    tracing::warn!(creation_name = %attempt.creation_name, "{message}");
    cleanup_error(attempt, observed.as_deref(), message, elapsed, config.acquire_cap())
}

/// The cleanup envelope with its diagnostic, or a plain error when the ownership cannot be
/// expressed (a host value that is not an identifier).
fn cleanup_error(
    attempt: &Attempt,
    observed: Option<&str>,
    message: String,
    elapsed: Duration,
    budget: Duration,
) -> ProviderError {
    let ownership = match attempt.ownership(observed) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "the ownership envelope cannot be built; sending a plain error");
            return ProviderError::worker(message);
        }
    };
    let diagnostic = AcquisitionDiagnostic::new(
        AcquisitionPhase::Create,
        (elapsed.as_millis() as u64).min(604_800_000),
        (budget.as_millis() as u64).clamp(1, 86_400_000),
    )
    .ok();
    ProviderError::creation_cleanup(message, ownership, diagnostic)
}
