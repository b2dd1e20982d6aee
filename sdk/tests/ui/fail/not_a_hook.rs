use paperclip_sandbox_sdk::prelude::*;

struct P;

#[provider]
impl SandboxProvider for P {
    async fn exec(&self, _params: ExecuteParams, _cx: Context) -> HookResult<ExecuteResult> {
        Ok(ExecuteResult::exited(0))
    }

    fn implemented_methods(&self) -> &'static [&'static str] {
        &[]
    }

    type Config = JsonObject;
}

fn main() {}
