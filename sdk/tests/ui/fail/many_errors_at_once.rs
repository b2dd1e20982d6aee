use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "Acme", display_name = "Acme", description = "Acme sandboxes", author = "Acme", version = 2)]
#[driver(
    key = "acme",
    display_name = "Acme",
    capabilities(reusableLease, concurrentSyncOperations, nativeSyncIn = yes),
    default_acquire_timeout_ms = 0,
    creation_operation_version = 3,
)]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {}
