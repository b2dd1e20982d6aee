use paperclip_sandbox_sdk::prelude::*;

struct P;

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;

    async fn probe(&self, _: Context) -> HookResult<ProbeResult> {
        Ok(ProbeResult::new(true))
    }

    async fn health(&self, _: HealthParams, _: Context, _: Context) -> HookResult<HealthResult> {
        Ok(HealthResult::default())
    }

    async fn connect(&self, _: &JsonObject) -> HookResult<()> {
        Ok(())
    }
}

fn main() {}
