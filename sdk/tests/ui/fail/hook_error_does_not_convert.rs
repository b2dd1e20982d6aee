use paperclip_sandbox_sdk::prelude::*;

struct P;

struct Plain;

#[provider]
impl SandboxProvider for P {
    type Config = JsonObject;

    async fn probe(&self, _: ProbeParams) -> Result<ProbeResult, Plain> {
        Err(Plain)
    }
}

fn main() {}
