use paperclip_sandbox_sdk::prelude::*;

struct P;

struct Api;

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;

    async fn probe(&self, _: ProbeParams, _api: &Api) -> HookResult<ProbeResult> {
        Ok(ProbeResult::new(true))
    }
}

fn main() {}
