use paperclip_sandbox_sdk::prelude::*;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme")]
#[driver(key = "acme", display_name = "Acme", config = NotASchema)]
struct P;

struct NotASchema;

#[provider]
impl SandboxProvider for P {}

fn main() {}
