//! Destroy (with creation observation), release, resume and stop-only preservation.
//!
//! * **Destroy** (D.6, D.15, F.3). With `leaseMetadata.failedCreateCleanup` naming only a
//!   creation name, the name is looked up and nothing is deleted: a sandbox carrying every
//!   ownership label is answered as a cleanup envelope with `observedProviderLeaseId`; no
//!   sandbox under the name is an uncertain outcome, answered with the unchanged envelope
//!   (never a receipt). With an observed id, or for an ordinary lease, the sandbox is deleted
//!   and its removal awaited; a sandbox already gone is `destroyed` (idempotent).
//! * **Release**: a reusable lease is stopped (stop/start semantics), `stop_and_retain` gets
//!   stop-only preservation, `keep_running` does nothing, any other lease is destroyed.
//! * **Resume** starts a stopped sandbox; a missing one is `{providerLeaseId: null,
//!   metadata: {expired: true, reason: "not_found"}}`.
//! * **Stop**: one recover attempt for a recoverable `error` state, then
//!   auto-delete is disabled and the record re-read to confirm it, then the sandbox is
//!   stopped. Every failure is a typed stop error or a plain error; nothing is ever deleted.

use std::future::Future;

use paperclip_sandbox_sdk::prelude::{
    DestroyLeaseParams, JsonObject, Lease, ReleaseLeaseParams, ResourceDisposition,
    ResumeLeaseParams, StopErrorReason, StopLeaseParams, TerminationReceipt,
};
use paperclip_sandbox_sdk::ProviderError;
use serde_json::{json, Value};
use tokio::time::{sleep, Instant};

use crate::acquire::{lease_metadata, RemoteBackend};
use crate::api::{ApiClient, ApiError, Sandbox, SandboxState};
use crate::config::RemoteConfig;

pub use paperclip_sandbox_sdk::kit::creation::FAILED_CREATE_CLEANUP;
use paperclip_sandbox_sdk::kit::creation::{destroy_failed_create, failed_create_cleanup};

/// Reads `id` every poll interval until `check` decides or `stateTimeoutMs` passes. `Ok(None)`
/// on timeout; read failures are retried and the last one is returned on timeout.
pub(crate) async fn watch<T>(
    client: &ApiClient,
    config: &RemoteConfig,
    id: &str,
    mut check: impl FnMut(Option<&Sandbox>) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    let deadline = Instant::now() + config.state_timeout();
    loop {
        let error = match client.get(id).await {
            Ok(sandbox) => match check(sandbox.as_ref()) {
                Some(done) => return Ok(Some(done)),
                None => None,
            },
            Err(e) => Some(e),
        };
        if Instant::now() >= deadline {
            return match error {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        sleep(config.poll_interval()).await;
    }
}

/// Deletes `id` and waits until it is gone; already gone is success.
pub(crate) async fn delete_confirmed(
    client: &ApiClient,
    config: &RemoteConfig,
    id: &str,
) -> Result<(), ProviderError> {
    let api = |e: ApiError| ProviderError::worker(format!("Sandbox deletion failed: {e}"));
    if !client.delete(id).await.map_err(api)? {
        tracing::info!(sandbox_id = %id, "sandbox already gone");
        return Ok(());
    }
    let gone = watch(client, config, id, |s| {
        s.is_none_or(|s| s.state == SandboxState::Destroyed).then_some(())
    })
    .await
    .map_err(api)?;
    match gone {
        Some(()) => {
            tracing::info!(sandbox_id = %id, "sandbox deleted");
            Ok(())
        }
        None => {
            Err(ProviderError::worker("Sandbox deletion was accepted but not confirmed in time"))
        }
    }
}

/// `environmentDestroyLease`.
pub async fn destroy(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &DestroyLeaseParams<RemoteConfig>,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let Some(lease_id) = params.provider_lease_id.as_deref() else {
        return Ok(None);
    };
    if let Some(ownership) = failed_create_cleanup(params.lease_metadata.as_ref())? {
        let backend = RemoteBackend { client: client.clone(), config: config.clone() };
        let fingerprint = config.account_fingerprint();
        return destroy_failed_create(&backend, lease_id, ownership, &fingerprint, "sandbox").await;
    }
    if lease_id.starts_with(paperclip_sandbox_sdk::prelude::CreationOperation::NAME_PREFIX) {
        return Err(ProviderError::worker(
            "The lease id is a creation name but no failedCreateCleanup record came with it; \
             nothing was looked up or deleted",
        ));
    }
    delete_confirmed(client, config, lease_id).await?;
    Ok(Some(TerminationReceipt::destroyed(lease_id)))
}

fn is_reusable(metadata: Option<&JsonObject>) -> bool {
    let truthy = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(_)) => true,
        _ => false,
    };
    metadata.is_some_and(|m| truthy(m.get("reusable")) || truthy(m.get("reusableSandboxLease")))
}

/// `environmentReleaseLease`.
pub async fn release(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &ReleaseLeaseParams<RemoteConfig>,
) -> Result<Option<TerminationReceipt>, ProviderError> {
    let Some(lease_id) = params.provider_lease_id.as_deref() else {
        return Ok(None);
    };
    let stop = match &params.resource_disposition {
        Some(ResourceDisposition::KeepRunning) => return Ok(None),
        Some(ResourceDisposition::StopAndRetain) => {
            return stop_preserving(client, config, lease_id).await.map(Some)
        }
        Some(ResourceDisposition::Destroy) => false,
        _ => is_reusable(params.lease_metadata.as_ref()),
    };
    if !stop {
        return destroy(client, config, params).await;
    }
    let receipt = stop_sandbox(client, config, lease_id).await?;
    Ok(Some(receipt))
}

/// Stops `id` and waits for `stopped`; a missing sandbox is `destroyed`.
async fn stop_sandbox(
    client: &ApiClient,
    config: &RemoteConfig,
    id: &str,
) -> Result<TerminationReceipt, ProviderError> {
    let fail = |e: ApiError| ProviderError::worker(format!("Stopping the sandbox failed: {e}"));
    match client.action(id, "stop").await {
        Err(e) if e.is_not_found() => return Ok(TerminationReceipt::destroyed(id)),
        Err(e) if e.status() != Some(409) => return Err(fail(e)),
        _ => {}
    }
    let seen = watch(client, config, id, |s| match s.map(|s| s.state) {
        None | Some(SandboxState::Destroyed) => Some(TerminationReceipt::destroyed(id)),
        Some(SandboxState::Stopped) => Some(TerminationReceipt::stopped(id)),
        _ => None,
    })
    .await
    .map_err(fail)?;
    seen.ok_or_else(|| ProviderError::worker("The stop was accepted but not confirmed in time"))
}

/// `environmentResumeLease`.
pub async fn resume(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &ResumeLeaseParams<RemoteConfig>,
) -> Result<Lease, ProviderError> {
    let id = params.provider_lease_id.as_str();
    let read = |e: ApiError| ProviderError::worker(format!("Resuming the sandbox failed: {e}"));
    let not_found = || {
        let metadata = json!({"expired": true, "reason": "not_found"});
        Lease::not_resumable(metadata.as_object().cloned().unwrap_or_default())
    };
    let Some(sandbox) = client.get(id).await.map_err(read)? else {
        return Ok(not_found());
    };
    match sandbox.state {
        SandboxState::Destroyed => return Ok(not_found()),
        SandboxState::Started => {}
        SandboxState::Stopped | SandboxState::Stopping | SandboxState::Starting => {
            if sandbox.state == SandboxState::Stopping {
                let stopped = watch(client, config, id, |s| {
                    s.is_none_or(|s| s.state == SandboxState::Stopped).then_some(s.is_some())
                })
                .await
                .map_err(read)?;
                match stopped {
                    Some(true) => {}
                    Some(false) => return Ok(not_found()),
                    None => return Err(ProviderError::worker("The sandbox is still stopping")),
                }
            }
            if sandbox.state != SandboxState::Starting {
                client.action(id, "start").await.map_err(read)?;
            }
            let outcome = watch(client, config, id, |s| match s.map(|s| s.state) {
                None => Some(Err(())),
                Some(SandboxState::Started) => Some(Ok(())),
                Some(SandboxState::Error | SandboxState::BuildFailed) => Some(Err(())),
                _ => None,
            })
            .await
            .map_err(read)?;
            match outcome {
                Some(Ok(())) => {}
                Some(Err(())) => {
                    return Err(ProviderError::worker(
                        "The sandbox failed to start; the lease is preserved",
                    ))
                }
                None => return Err(ProviderError::worker("The sandbox did not start in time")),
            }
        }
        other => {
            return Err(ProviderError::worker(format!(
                "The sandbox is {other} and cannot be resumed; the lease is preserved"
            )))
        }
    }
    tracing::info!(sandbox_id = %id, "sandbox resumed");
    Ok(Lease::new(id).with_metadata(lease_metadata(&sandbox, &sandbox.name, true)))
}

/// `environmentStopLease`: stop-only preservation.
pub async fn stop_lease(
    client: &ApiClient,
    config: &RemoteConfig,
    params: &StopLeaseParams<RemoteConfig>,
) -> Result<TerminationReceipt, ProviderError> {
    // Stop takes the release params, whose lease id may be null: there is nothing to stop and
    // no receipt could name it.
    stop_preserving(client, config, params.required_lease_id()?).await
}

/// Stop-only preservation of sandbox `id`: recover once if needed, disable auto-delete and
/// confirm it, then stop. Never deletes.
pub async fn stop_preserving(
    client: &ApiClient,
    config: &RemoteConfig,
    id: &str,
) -> Result<TerminationReceipt, ProviderError> {
    let unconfirmed =
        |e: ApiError| ProviderError::worker(format!("The stop could not be confirmed: {e}"));
    let Some(sandbox) = client.get(id).await.map_err(unconfirmed)? else {
        return Ok(TerminationReceipt::destroyed(id));
    };
    match sandbox.state {
        SandboxState::Destroyed => return Ok(TerminationReceipt::destroyed(id)),
        SandboxState::Destroying => {
            return Err(ProviderError::stop(
                "The sandbox is being deleted; retry later",
                StopErrorReason::Busy,
            ))
        }
        SandboxState::BuildFailed => {
            return Err(ProviderError::stop(
                "The sandbox build failed; it cannot be stopped and kept",
                StopErrorReason::Unrecoverable,
            ))
        }
        SandboxState::Error if !sandbox.recoverable => {
            return Err(ProviderError::stop(
                "The sandbox is in an unrecoverable error state",
                StopErrorReason::Unrecoverable,
            ))
        }
        SandboxState::Error => recover_once(client, config, id).await?,
        _ => {}
    }
    guarded(
        client.disable_auto_delete(id),
        "Disabling auto-delete failed",
        StopErrorReason::PolicyUnconfirmed,
    )
    .await?;
    let reread = guarded(
        client.get(id),
        "Re-reading the retention policy failed",
        StopErrorReason::PolicyUnconfirmed,
    )
    .await?;
    match reread {
        Some(s) if s.auto_delete_disabled() => {
            tracing::info!(sandbox_id = %id, "auto-delete disabled and confirmed")
        }
        Some(_) => {
            return Err(ProviderError::stop(
                "The provider did not confirm that auto-delete is disabled; not stopping",
                StopErrorReason::PolicyUnconfirmed,
            ))
        }
        None => return Ok(TerminationReceipt::destroyed(id)),
    }
    let receipt = stop_sandbox(client, config, id).await?;
    tracing::info!(sandbox_id = %id, state = %receipt.state, "stop-only preservation done");
    Ok(receipt)
}

async fn guarded<T>(
    call: impl Future<Output = Result<T, ApiError>>,
    what: &str,
    reason: StopErrorReason,
) -> Result<T, ProviderError> {
    call.await.map_err(|e| ProviderError::stop(format!("{what}: {e}"), reason))
}

/// One recover attempt: `started` or `stopped` afterwards is success.
async fn recover_once(
    client: &ApiClient,
    config: &RemoteConfig,
    id: &str,
) -> Result<(), ProviderError> {
    tracing::info!(sandbox_id = %id, "sandbox in a recoverable error state; recovering once");
    guarded(
        client.action(id, "recover"),
        "The recover request failed",
        StopErrorReason::RecoveryFailed,
    )
    .await?;
    // A first read may still show the old `error`: only an error after the state moved on,
    // or an error still there at the timeout, means recovery failed.
    let mut left_error = false;
    let mut last = None;
    let outcome = watch(client, config, id, |s| {
        last = s.map(|s| s.state);
        match last {
            Some(SandboxState::Started | SandboxState::Stopped) => Some(true),
            Some(SandboxState::Error | SandboxState::BuildFailed) if left_error => Some(false),
            Some(SandboxState::Error) => None,
            None | Some(SandboxState::BuildFailed) => Some(false),
            _ => {
                left_error = true;
                None
            }
        }
    })
    .await;
    match outcome {
        Ok(Some(true)) => Ok(()),
        Ok(None) if last != Some(SandboxState::Error) => Err(ProviderError::stop(
            "Recovery did not finish in time",
            StopErrorReason::RecoveryIncomplete,
        )),
        Err(_) => Err(ProviderError::stop(
            "Recovery could not be observed",
            StopErrorReason::RecoveryIncomplete,
        )),
        Ok(_) => Err(ProviderError::stop(
            "The sandbox is back in an error state after recovery",
            StopErrorReason::RecoveryFailed,
        )),
    }
}
