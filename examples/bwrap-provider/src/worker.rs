//! The JSON-RPC face of the bwrap provider: [`SandboxProvider`] for [`BwrapProvider`].
//!
//! Every lifecycle and sync hook is the local provider's own [`SandboxProvider`] hook, called
//! as is (same wire errors and envelopes). `environmentValidateConfig`, `environmentProbe` and
//! `environmentExecute` go through [`BwrapProvider`]; their errors map as the local provider's
//! do (`-32602` for invalid params, else `-32002` with the message).

use local_provider::error::{ErrorKind, LocalError};
use local_provider::provider::LocalProvider;
use paperclip_sandbox_sdk::prelude::*;

use crate::provider::BwrapProvider;

fn wire_error(e: LocalError) -> ProviderError {
    match e.kind {
        ErrorKind::InvalidParams => ProviderError::invalid_params(e.message),
        _ => ProviderError::worker(e.message),
    }
}

#[paperclip_sandbox_sdk::provider]
impl SandboxProvider for BwrapProvider {
    async fn shutdown(&self, params: ShutdownParams, cx: Context) -> HookResult<()> {
        <LocalProvider as SandboxProvider>::shutdown(self.local(), params, cx).await
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams,
        _cx: Context,
    ) -> HookResult<ValidateConfigResult> {
        Ok(BwrapProvider::validate_config(self, &params))
    }

    async fn probe(&self, params: ProbeParams, _cx: Context) -> HookResult<ProbeResult> {
        BwrapProvider::probe(self, &params).await.map_err(wire_error)
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams,
        cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        <LocalProvider as SandboxProvider>::acquire_lease(self.local(), params, cx).await
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams,
        cx: Context,
    ) -> HookResult<ResumeLeaseResult> {
        <LocalProvider as SandboxProvider>::resume_lease(self.local(), params, cx).await
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams,
        cx: Context,
    ) -> HookResult<ReleaseLeaseResult> {
        <LocalProvider as SandboxProvider>::release_lease(self.local(), params, cx).await
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams,
        cx: Context,
    ) -> HookResult<DestroyLeaseResult> {
        <LocalProvider as SandboxProvider>::destroy_lease(self.local(), params, cx).await
    }

    async fn stop_lease(
        &self,
        params: StopLeaseParams,
        cx: Context,
    ) -> HookResult<StopLeaseResult> {
        <LocalProvider as SandboxProvider>::stop_lease(self.local(), params, cx).await
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams,
        cx: Context,
    ) -> HookResult<RealizeWorkspaceResult> {
        <LocalProvider as SandboxProvider>::realize_workspace(self.local(), params, cx).await
    }

    async fn execute(&self, params: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> {
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        BwrapProvider::execute(self, &params, &mut sink, async move { cancel.cancelled().await })
            .await
            .map_err(wire_error)
    }

    async fn sync_in(&self, params: SyncInParams, cx: Context) -> HookResult<SyncResult> {
        <LocalProvider as SandboxProvider>::sync_in(self.local(), params, cx).await
    }

    async fn sync_out(&self, params: SyncOutParams, cx: Context) -> HookResult<SyncResult> {
        <LocalProvider as SandboxProvider>::sync_out(self.local(), params, cx).await
    }
}
