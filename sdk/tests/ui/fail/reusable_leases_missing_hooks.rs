use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme")]
#[driver(key = "acme", display_name = "Acme", capabilities(reusableLeases))]
struct P;

#[provider]
impl SandboxProvider for P {
    async fn release_lease(&self, _: ReleaseLeaseParams, _: Context) -> HookResult<ReleaseLeaseResult> {
        Ok(Released::done())
    }
}

fn main() {}
