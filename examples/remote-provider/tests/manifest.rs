//! The derived manifest of the remote provider: pinned by a snapshot for both host profiles
//! (`UPDATE_SNAPSHOTS=1` rewrites it) and valid under the protocol's validator. The conformance
//! crate runs the published host validator over the same snapshot.

use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::assert_manifest;
use paperclip_sandbox_sdk::PluginManifest;
use remote_provider::RemoteProvider;
use serde_json::json;

/// The committed manifests (`UPDATE_SNAPSHOTS=1` rewrites them).
const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/manifest.json");

#[test]
fn manifest_matches_the_snapshot_and_is_valid_for_each_profile() {
    assert_manifest::<RemoteProvider>(SNAPSHOT);
    assert_eq!(<RemoteProvider as PluginManifest>::PROFILE, HostProfile::Paperclip2026_11);
    let new = RemoteProvider::manifest(HostProfile::Paperclip2026_11).to_value();
    let old = RemoteProvider::manifest(HostProfile::Paperclip2026_09).to_value();
    for m in [&new, &old] {
        assert_eq!(m["id"], json!("paperclip-remote-provider"));
        assert_eq!(m["version"], json!(env!("CARGO_PKG_VERSION")));
        assert_eq!(m["entrypoints"]["worker"], json!("./dist/worker.cjs"));
        let d = &m["environmentDrivers"][0];
        assert_eq!(d["driverKey"], json!("remote"));
        assert_eq!(d["sandboxCapabilities"], json!({"reusableLeases": true}));
        assert_eq!(d["configSchema"]["properties"]["apiKey"]["format"], json!("secret-ref"));
    }
    let d = &new["environmentDrivers"][0];
    assert_eq!(d["defaultAcquireTimeoutMs"], json!(300_000));
    assert_eq!(d["creationOperationVersion"], json!(1));
    let d = &old["environmentDrivers"][0];
    assert!(
        d.get("defaultAcquireTimeoutMs").is_none() && d.get("creationOperationVersion").is_none()
    );
    // The November manifest is rejected by a September host: the variant matters.
    let report = RemoteProvider::manifest(HostProfile::Paperclip2026_11)
        .validate(HostProfile::Paperclip2026_09);
    assert!(!report.valid);
}
