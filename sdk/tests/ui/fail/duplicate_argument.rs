use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", id = "acme.other", display_name = "Acme", description = "Acme sandboxes", author = "Acme")]
#[driver(key = "acme", display_name = "Acme")]
#[driver(key = "acme2", display_name = "Acme 2")]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {}
