//! The derived manifest of the bwrap provider: pinned by a snapshot for both host profiles
//! (`UPDATE_SNAPSHOTS=1` rewrites it) and valid under the protocol's validator. The conformance
//! crate runs the published host validator over the same snapshot.

use bwrap_provider::BwrapProvider;
use local_provider::provider::LocalProvider;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::assert_manifest;
use paperclip_sandbox_sdk::PluginManifest;
use serde_json::json;

/// The committed manifests (`UPDATE_SNAPSHOTS=1` rewrites them).
const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/manifest.json");

#[test]
fn manifest_matches_the_snapshot_and_is_valid_for_each_profile_and_declares_the_local_capabilities()
{
    assert_manifest::<BwrapProvider>(SNAPSHOT);
    assert_eq!(<BwrapProvider as PluginManifest>::PROFILE, HostProfile::Paperclip2026_11);
    for profile in HostProfile::ALL {
        let m = BwrapProvider::manifest(profile).to_value();
        let local = LocalProvider::manifest(profile).to_value();
        assert_eq!(m["id"], json!("paperclip-sandbox.bwrap-provider"));
        assert_eq!(m["version"], json!(env!("CARGO_PKG_VERSION")));
        assert_eq!(m["entrypoints"]["worker"], json!("./dist/worker.cjs"));
        let (d, ld) = (&m["environmentDrivers"][0], &local["environmentDrivers"][0]);
        assert_eq!(d["driverKey"], json!("bwrap"));
        assert_eq!(d["kind"], ld["kind"]);
        // The local provider's capabilities, less its duplex channels: those would run their
        // command outside bubblewrap, so this provider does not offer them.
        let mut local_caps = ld["sandboxCapabilities"].clone();
        local_caps.as_object_mut().unwrap().remove("duplexCommandStream");
        assert_eq!(d["sandboxCapabilities"], local_caps, "{profile}");
        assert_eq!(d.get("defaultAcquireTimeoutMs"), ld.get("defaultAcquireTimeoutMs"));
        assert_eq!(d["configSchema"]["properties"]["bwrap"]["enum"], json!(["auto", "off"]));
    }
    let new = BwrapProvider::manifest(HostProfile::Paperclip2026_11).to_value();
    let old = BwrapProvider::manifest(HostProfile::Paperclip2026_09).to_value();
    assert_eq!(new["environmentDrivers"][0]["defaultAcquireTimeoutMs"], json!(60_000));
    assert!(old["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
    // The November manifest is rejected by a September host: the variant matters.
    let report = BwrapProvider::manifest(HostProfile::Paperclip2026_11)
        .validate(HostProfile::Paperclip2026_09);
    assert!(!report.valid);
}
