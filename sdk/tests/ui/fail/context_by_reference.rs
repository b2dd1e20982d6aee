use paperclip_sandbox_sdk::prelude::*;

struct P;

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;

    async fn probe(&self, _: ProbeParams, cx: &Context) -> HookResult<ProbeResult> {
        let _ = cx.profile();
        Ok(ProbeResult::new(true))
    }

    async fn on_event(&self, _: Value, _cx: &mut Context) {}
}

fn main() {}
