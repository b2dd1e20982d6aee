use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "", display_name = "", description = "Acme sandboxes", author = "")]
#[driver(key = "acme", display_name = "Acme")]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {}
