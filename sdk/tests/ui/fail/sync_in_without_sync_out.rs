use paperclip_sandbox_sdk::prelude::*;

struct P;

#[provider]
impl SandboxProvider for P {
    async fn sync_in(&self, _params: SyncInParams, _cx: Context) -> HookResult<SyncResult> {
        Err(ProviderError::worker("not yet"))
    }
    type Config = JsonObject;
}

fn main() {}
