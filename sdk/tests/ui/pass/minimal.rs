//! The fewest arguments: defaults for version, categories, worker, profile and config.
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::HostProfile;

#[derive(PluginManifest)]
#[plugin(id = "acme.sbx", display_name = "Acme", description = "Acme sandboxes", author = "Acme")]
#[driver(key = "acme", display_name = "Acme")]
struct P;

#[provider]
impl SandboxProvider for P {}

fn main() {
    assert_eq!(<P as paperclip_sandbox_sdk::PluginManifest>::PROFILE, HostProfile::Paperclip2026_11);
    let m = P::manifest(HostProfile::Paperclip2026_11).to_value();
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(m["categories"], serde_json::json!(["automation"]));
    assert_eq!(m["capabilities"], serde_json::json!(["environment.drivers.register"]));
    assert_eq!(m["entrypoints"]["worker"], "./dist/worker.cjs");
    let driver = &m["environmentDrivers"][0];
    assert_eq!(driver["kind"], "sandbox_provider");
    assert_eq!(driver["configSchema"], serde_json::json!({"type": "object", "properties": {}}));
    assert!(driver.get("sandboxCapabilities").is_none());
    for profile in HostProfile::ALL {
        let report = P::manifest(profile).validate(profile);
        assert!(report.valid, "{profile}: {:?}", report.errors);
    }
}
