//! The JSON-RPC face of the local provider: [`SandboxProvider`] for [`LocalDriver`], for any
//! config type holding the local keys ([`LocalSettings`]), and for [`LocalProvider`], which
//! delegates every hook to its `LocalDriver<LocalConfig>`.
//!
//! Each hook forwards to [`LocalDriver`] and maps a [`LocalError`] to the wire:
//!
//! | Error kind | Answer |
//! |---|---|
//! | [`ErrorKind::InvalidParams`](crate::error::ErrorKind::InvalidParams) | `-32602 Invalid params: …` |
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

use paperclip_sandbox_sdk::prelude::*;

use crate::config::{LocalConfig, LocalSettings};
use crate::duplex::DuplexChannels;
use crate::error::LocalError;
use crate::provider::{LocalDriver, LocalProvider};
use crate::sync::Direction;

pub use paperclip_sandbox_sdk::kit::{sync_diagnostic, sync_error};

/// Every hook is the driver's: the config type is [`LocalConfig`] (the manifest's).
#[paperclip_sandbox_sdk::provider(delegate = LocalDriver<LocalConfig>)]
impl SandboxProvider for LocalProvider {}

// The hooks return `LocalError`, which the SDK kit converts by itself per method (the table
// in the module docs); they name a `Context` only where they use it.
#[paperclip_sandbox_sdk::provider]
impl<C: LocalSettings> SandboxProvider for LocalDriver<C> {
    // Generic, so a wrapping provider with a larger config can delegate here.
    type Config = C;

    async fn shutdown(&self, _: ShutdownParams) -> HookResult<()> {
        let killed = LocalDriver::shutdown(self);
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<C>,
    ) -> HookResult<ValidateConfigResult> {
        Ok(LocalDriver::validate_config(self, &params))
    }

    async fn probe(&self, params: ProbeParams<C>) -> Result<ProbeResult, LocalError> {
        // A deliberate stray `println!`: it demonstrates the SDK's stdout guard. The runtime
        // points fd 1 at stderr, so this line reaches the host's stderr log, never the
        // protocol stream (the wire tests check that stdout stays pure).
        println!("local-provider: probe called (stdout guard demonstration: this goes to stderr)");
        LocalDriver::probe(self, &params).await
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<C>,
    ) -> Result<AcquireLeaseResult, LocalError> {
        self.acquire(&params).await
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<C>,
    ) -> Result<ResumeLeaseResult, LocalError> {
        self.resume(&params).await
    }

    async fn release_lease(&self, params: ReleaseLeaseParams<C>) -> Result<Released, LocalError> {
        self.release(&params).await.map(Released::from)
    }

    async fn destroy_lease(&self, params: DestroyLeaseParams<C>) -> Result<Destroyed, LocalError> {
        if let Some(id) = params.lease_id() {
            self.channels().close_lease(id);
        }
        self.destroy(&params).await.map(Destroyed::from)
    }

    async fn stop_lease(&self, params: StopLeaseParams<C>) -> Result<StopLeaseResult, LocalError> {
        if let Some(id) = params.lease_id() {
            self.channels().close_lease(id);
        }
        self.stop(&params).await
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<C>,
    ) -> Result<RealizeWorkspaceResult, LocalError> {
        self.realize(&params).await
    }

    async fn execute(
        &self,
        params: ExecuteParams<C>,
        cx: Context,
    ) -> Result<ExecuteResult, LocalError> {
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        LocalDriver::execute(self, &params, &mut sink, async move { cancel.cancelled().await })
            .await
    }

    async fn sync_in(
        &self,
        params: SyncInParams<C>,
        cx: Context,
    ) -> Result<SyncResult, LocalError> {
        self.sync(Direction::In, &params, cx.profile()).await
    }

    async fn sync_out(
        &self,
        params: SyncOutParams<C>,
        cx: Context,
    ) -> Result<SyncResult, LocalError> {
        self.sync(Direction::Out, &params, cx.profile()).await
    }

    async fn idle_drain(&self, _: PrepareIdleSleepParams) -> HookResult<BackgroundWork> {
        Ok(self.background_work())
    }

    async fn duplex_channel_open(
        &self,
        params: DuplexChannelOpenParams,
        cx: Context,
    ) -> Result<DuplexChannelOpenResult, LocalError> {
        let session = DuplexChannels::new_session_id();
        let sender = cx.duplex_channel_sender(&params.host_route_id, &session);
        self.channels().open(&params, session, self.groups(), sender).await
    }

    async fn duplex_channel_write(
        &self,
        params: DuplexChannelWriteParams,
    ) -> Result<(), LocalError> {
        self.channels().write(&params).await
    }

    async fn duplex_channel_stop(&self, params: DuplexChannelStopParams) -> Result<(), LocalError> {
        self.channels().stop(&params)
    }

    async fn duplex_channel_close(
        &self,
        params: DuplexChannelCloseParams,
    ) -> HookResult<DuplexChannelCloseResult> {
        Ok(self.channels().close(&params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
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
