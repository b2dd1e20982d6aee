use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme")]
#[driver(key = "acme", display_name = "Acme", supports_tasks)]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {}
