//! The JSON-RPC face of the bwrap provider: [`SandboxProvider`] for [`BwrapProvider`].
//!
//! Every lifecycle and sync hook, and `environmentValidateConfig`, is the local provider's own
//! [`SandboxProvider`] hook, delegated as is (`#[provider(delegate = LocalDriver<BwrapConfig>)]`:
//! same wire errors and envelopes, the typed [`BwrapConfig`]). `environmentProbe` and
//! `environmentExecute` go through [`BwrapProvider`] and return its [`LocalError`], which the SDK
//! kit converts as it converts the local provider's (`-32602` for invalid params, else `-32002`
//! with the message).

use local_provider::error::LocalError;
use local_provider::provider::LocalDriver;
use paperclip_sandbox_sdk::prelude::*;

use crate::config::BwrapConfig;
use crate::provider::BwrapProvider;

impl AsRef<LocalDriver<BwrapConfig>> for BwrapProvider {
    fn as_ref(&self) -> &LocalDriver<BwrapConfig> {
        self.local()
    }
}

/// The hooks bwrap changes; every other hook (validation, leases, workspace, sync, shutdown)
/// is the local provider's, through `delegate`. The config type is the manifest's
/// [`BwrapConfig`].
#[paperclip_sandbox_sdk::provider(delegate = LocalDriver<BwrapConfig>)]
impl SandboxProvider for BwrapProvider {
    async fn probe(&self, params: ProbeParams<BwrapConfig>) -> Result<ProbeResult, LocalError> {
        BwrapProvider::probe(self, &params).await
    }

    async fn execute(
        &self,
        params: ExecuteParams<BwrapConfig>,
        cx: Context,
    ) -> Result<ExecuteResult, LocalError> {
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        BwrapProvider::execute(self, &params, &mut sink, async move { cancel.cancelled().await })
            .await
    }
}
