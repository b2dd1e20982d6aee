//! The derived manifest of the local provider: pinned by a snapshot for both host profiles
//! (`UPDATE_SNAPSHOTS=1` rewrites it) and valid under the protocol's validator. The conformance
//! crate runs the published host validator over the same snapshot.

use local_provider::provider::LocalProvider;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::assert_manifest;
use paperclip_sandbox_sdk::PluginManifest;
use serde_json::json;

/// The committed manifests (`UPDATE_SNAPSHOTS=1` rewrites them).
const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/manifest.json");

#[test]
fn manifest_matches_the_snapshot_and_is_valid_for_each_profile() {
    assert_manifest::<LocalProvider>(SNAPSHOT);
    assert_eq!(<LocalProvider as PluginManifest>::PROFILE, HostProfile::Paperclip2026_11);
    let new = LocalProvider::manifest(HostProfile::Paperclip2026_11).to_value();
    let old = LocalProvider::manifest(HostProfile::Paperclip2026_09).to_value();
    assert_eq!(new["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(new["environmentDrivers"][0]["defaultAcquireTimeoutMs"], json!(60_000));
    assert!(old["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
    // The November manifest is rejected by a September host: the variant matters.
    let report = LocalProvider::manifest(HostProfile::Paperclip2026_11)
        .validate(HostProfile::Paperclip2026_09);
    assert!(!report.valid);
}
