//! The derived manifest of the container provider: pinned by a snapshot for both host profiles
//! (`UPDATE_SNAPSHOTS=1` rewrites it) and valid under the protocol's validator. The conformance
//! crate runs the published host validator over the same snapshot.

use container_provider::ContainerProvider;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::assert_manifest;
use paperclip_sandbox_sdk::PluginManifest;
use serde_json::json;

/// The committed manifests (`UPDATE_SNAPSHOTS=1` rewrites them).
const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/manifest.json");

#[test]
fn manifest_matches_the_snapshot_and_is_valid_for_each_profile_and_declares_what_the_provider_does()
{
    assert_manifest::<ContainerProvider>(SNAPSHOT);
    for profile in HostProfile::ALL {
        let m = ContainerProvider::manifest(profile).to_value();
        assert_eq!(m["id"], json!("paperclip-sandbox.container-provider"));
        let d = &m["environmentDrivers"][0];
        assert_eq!(d["driverKey"], json!("container"));
        assert_eq!(
            d["sandboxCapabilities"],
            json!({
                "reusableLeases": true, "nativeSyncIn": true, "nativeSyncOut": true,
                "independentControlCommands": true, "incrementalSessionOutput": true
            }),
            "{profile}"
        );
        let props = &d["configSchema"]["properties"];
        for key in ["image", "dockerHost", "user", "network", "memoryMb", "pidsLimit"] {
            assert!(props.get(key).is_some(), "{profile}: configSchema lacks {key}");
        }
    }
    let new = ContainerProvider::manifest(HostProfile::Paperclip2026_11).to_value();
    let old = ContainerProvider::manifest(HostProfile::Paperclip2026_09).to_value();
    assert_eq!(new["environmentDrivers"][0]["defaultAcquireTimeoutMs"], json!(180_000));
    assert!(old["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
}
