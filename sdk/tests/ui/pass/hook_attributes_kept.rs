//! A hook's attributes stay on it when `#[provider]` completes its signature, the
//! notification hook's (`on_event`) too: without its `#[allow]`, the unused variables below
//! fail this crate's `deny`.
#![deny(unused_variables)]

use paperclip_sandbox_sdk::prelude::*;

struct P;

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;

    /// Answers healthy.
    #[allow(unused_variables)]
    async fn health(&self, params: HealthParams, cx: Context) -> HookResult<HealthResult> {
        Ok(HealthResult::default())
    }

    /// Traced without its params or context: the generated arguments keep the names written
    /// here, so `skip` can name them.
    #[tracing::instrument(skip(self, params, cx))]
    async fn probe(&self, params: ProbeParams, cx: Context) -> HookResult<ProbeResult> {
        let _ = (params, cx);
        Ok(ProbeResult::ok())
    }

    /// Ignores every event.
    #[allow(unused_variables)]
    async fn on_event(&self, event: Value, cx: Context) {
        let ignored = 1;
    }
}

fn main() {
    assert_eq!(P.implemented_methods(), ["health", "environmentProbe"]);
}
