//! A provider targeting paperclip-2026-09 hosts.
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::HostProfile;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme", profile = "paperclip-2026-09")]
#[driver(key = "acme", display_name = "Acme", capabilities(independentControlCommands))]
enum P {
    Only,
}

#[provider]
impl SandboxProvider for P {
    async fn execute(&self, _: ExecuteParams, _: Context) -> HookResult<ExecuteResult> {
        Ok(ExecuteResult::exited(0))
    }
}

fn main() {
    let _ = P::Only;
    assert_eq!(<P as paperclip_sandbox_sdk::PluginManifest>::PROFILE, HostProfile::Paperclip2026_09);
    let report = P::manifest(HostProfile::Paperclip2026_09).validate(HostProfile::Paperclip2026_09);
    assert!(report.valid, "{:?}", report.errors);
}
