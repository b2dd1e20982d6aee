//! The JSON-RPC face of the local provider: [`SandboxProvider`] for [`LocalDriver`], for any
//! config type holding the local keys ([`LocalSettings`]), and for [`LocalProvider`], which
//! delegates every hook to its `LocalDriver<LocalConfig>`.
//!
//! Each hook forwards to [`LocalDriver`] and maps a [`LocalError`] to the wire:
//!
//! | Error kind | Answer |
//! |---|---|
//! | [`ErrorKind::InvalidParams`] | `-32602 Invalid params: …` |
//! | any other kind, on `environmentSyncOut` (the SDK drops it on `environmentSyncIn`, as upstream) | `-32002` with the sync-error envelope (`errorCode` from the OS error, `ETIMEDOUT` for a timeout, `exitCode` and `transferFailureKind: command_failed` for a failed post-upload command, `transferStep: sandbox_guard` for a confinement refusal) |
//! | any other kind, on `environmentStopLease` | `-32002` with the stop-error envelope, reason `unrecoverable` |
//! | any other kind | `-32002` with the message |
//!
//! `shutdown` kills every command still running in any lease (and every duplex channel)
//! before the runtime exits. `prepareIdleSleep`'s drain check (`idle_drain`) reports
//! background work while a command still runs in any lease or a duplex channel's command runs.
//! Duplex channels run a command in a lease ([`crate::duplex`]).
//! `environmentExecute` streams output through [`Context::execute_log`] and kills the command's
//! process group when the call is cancelled (for example by `shutdown`).

use paperclip_sandbox_protocol::envelope::StopErrorReason;
use paperclip_sandbox_sdk::prelude::*;

use crate::config::{LocalConfig, LocalSettings};
use crate::duplex::DuplexChannels;
use crate::error::{ErrorKind, LocalError};
use crate::provider::{LocalDriver, LocalProvider};
use crate::sync::Direction;

fn wire_error(e: LocalError) -> ProviderError {
    match e.kind {
        ErrorKind::InvalidParams => ProviderError::invalid_params(e.message),
        _ => ProviderError::worker(e.message),
    }
}

pub use paperclip_sandbox_sdk::kit::{sync_diagnostic, sync_error};

/// Every hook is the driver's: the config type is [`LocalConfig`] (the manifest's).
#[paperclip_sandbox_sdk::provider(delegate = LocalDriver<LocalConfig>)]
impl SandboxProvider for LocalProvider {}

#[paperclip_sandbox_sdk::provider]
impl<C: LocalSettings> SandboxProvider for LocalDriver<C> {
    // Generic, so a wrapping provider with a larger config can delegate here.
    type Config = C;

    async fn shutdown(&self, _: ShutdownParams, _cx: Context) -> HookResult<()> {
        let killed = LocalDriver::shutdown(self);
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<C>,
        _cx: Context,
    ) -> HookResult<ValidateConfigResult> {
        Ok(LocalDriver::validate_config(self, &params))
    }

    async fn probe(&self, params: ProbeParams<C>, _cx: Context) -> HookResult<ProbeResult> {
        // A deliberate stray `println!`: it demonstrates the SDK's stdout guard. The runtime
        // points fd 1 at stderr, so this line reaches the host's stderr log, never the
        // protocol stream (the wire tests check that stdout stays pure).
        println!("local-provider: probe called (stdout guard demonstration: this goes to stderr)");
        LocalDriver::probe(self, &params).await.map_err(wire_error)
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<C>,
        _cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        self.acquire(&params).await.map_err(wire_error)
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<C>,
        _cx: Context,
    ) -> HookResult<ResumeLeaseResult> {
        self.resume(&params).await.map_err(wire_error)
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<C>,
        _cx: Context,
    ) -> HookResult<Released> {
        self.release(&params).await.map(Released::from).map_err(wire_error)
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<C>,
        _cx: Context,
    ) -> HookResult<Destroyed> {
        if let Some(id) = params.provider_lease_id.as_deref() {
            self.channels().close_lease(id);
        }
        self.destroy(&params).await.map(Destroyed::from).map_err(wire_error)
    }

    async fn stop_lease(
        &self,
        params: StopLeaseParams<C>,
        _cx: Context,
    ) -> HookResult<StopLeaseResult> {
        if let Some(id) = params.provider_lease_id.as_deref() {
            self.channels().close_lease(id);
        }
        self.stop(&params).await.map_err(|e| match e.kind {
            ErrorKind::InvalidParams => wire_error(e),
            _ => ProviderError::stop(e.message, StopErrorReason::Unrecoverable),
        })
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<C>,
        _cx: Context,
    ) -> HookResult<RealizeWorkspaceResult> {
        self.realize(&params).await.map_err(wire_error)
    }

    async fn execute(&self, params: ExecuteParams<C>, cx: Context) -> HookResult<ExecuteResult> {
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        LocalDriver::execute(self, &params, &mut sink, async move { cancel.cancelled().await })
            .await
            .map_err(wire_error)
    }

    async fn sync_in(&self, params: SyncInParams<C>, _cx: Context) -> HookResult<SyncResult> {
        self.sync(Direction::In, &params).await.map_err(sync_error)
    }

    async fn sync_out(&self, params: SyncOutParams<C>, _cx: Context) -> HookResult<SyncResult> {
        self.sync(Direction::Out, &params).await.map_err(sync_error)
    }

    async fn idle_drain(
        &self,
        _params: PrepareIdleSleepParams,
        _cx: Context,
    ) -> HookResult<BackgroundWork> {
        Ok(self.background_work())
    }

    async fn duplex_channel_open(
        &self,
        params: DuplexChannelOpenParams,
        cx: Context,
    ) -> HookResult<DuplexChannelOpenResult> {
        let session = DuplexChannels::new_session_id();
        let sender = cx.duplex_channel_sender(&params.host_route_id, &session);
        self.channels().open(&params, session, self.groups(), sender).await.map_err(wire_error)
    }

    async fn duplex_channel_write(
        &self,
        params: DuplexChannelWriteParams,
        _cx: Context,
    ) -> HookResult<()> {
        self.channels().write(&params).await.map_err(wire_error)
    }

    async fn duplex_channel_stop(
        &self,
        params: DuplexChannelStopParams,
        _cx: Context,
    ) -> HookResult<()> {
        self.channels().stop(&params).map_err(wire_error)
    }

    async fn duplex_channel_close(
        &self,
        params: DuplexChannelCloseParams,
        _cx: Context,
    ) -> HookResult<DuplexChannelCloseResult> {
        Ok(self.channels().close(&params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_protocol::envelope::sync_error::{
        SyncErrorCode, TransferFailureKind, TransferStep,
    };

    #[test]
    fn sync_errors_carry_allowlisted_diagnostics_only() {
        let timeout = LocalError::new(ErrorKind::Timeout, "slow /private/path");
        assert_eq!(sync_diagnostic(&timeout).error_code(), SyncErrorCode::Etimedout);
        let failed =
            LocalError { exit_code: Some(7), ..LocalError::new(ErrorKind::CommandFailed, "x") };
        let d = sync_diagnostic(&failed);
        assert_eq!(
            (d.exit_code(), d.transfer_failure_kind()),
            (Some(7), Some(TransferFailureKind::CommandFailed))
        );
        let io = LocalError::io("open", std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(sync_diagnostic(&io).error_code(), SyncErrorCode::Enospc);
        let guard = LocalError::new(ErrorKind::Confinement, "escape");
        assert_eq!(sync_diagnostic(&guard).transfer_step(), Some(TransferStep::SandboxGuard));
        let data = sync_diagnostic(&timeout).to_data().unwrap().to_string();
        assert!(!data.contains("private"), "{data}");
    }
}
