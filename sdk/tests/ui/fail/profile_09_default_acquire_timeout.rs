use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme", profile = "paperclip-2026-09")]
#[driver(key = "acme", display_name = "Acme", default_acquire_timeout_ms = 60_000)]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {}
