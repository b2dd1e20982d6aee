//! The JSON-RPC face of the bwrap provider: [`SandboxProvider`] for [`BwrapProvider`].
//!
//! Every lifecycle and sync hook is the local provider's own [`SandboxProvider`] hook,
//! delegated as is (`#[provider(delegate = LocalProvider)]`: same wire errors and envelopes).
//! `environmentValidateConfig`, `environmentProbe` and `environmentExecute` go through
//! [`BwrapProvider`]; their errors map as the local provider's do (`-32602` for invalid params,
//! else `-32002` with the message).

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

impl AsRef<LocalProvider> for BwrapProvider {
    fn as_ref(&self) -> &LocalProvider {
        self.local()
    }
}

/// The hooks bwrap changes; every other hook (leases, workspace, sync, shutdown) is the local
/// provider's, through `delegate`.
#[paperclip_sandbox_sdk::provider(delegate = LocalProvider)]
impl SandboxProvider for BwrapProvider {
    // The raw config object, as the local provider it delegates to takes it.
    type Config = JsonObject;

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

    async fn execute(&self, params: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> {
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        BwrapProvider::execute(self, &params, &mut sink, async move { cancel.cancelled().await })
            .await
            .map_err(wire_error)
    }
}
