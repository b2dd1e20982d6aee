//! The plugin manifest of the local provider, built by hand.
//!
//! `local-provider --manifest` prints it; `--profile paperclip-2026-09` prints the variant a
//! September host accepts (no November-only driver fields). A later macros release derives the
//! manifest from the provider; until then [`manifest`] is the one place it is written.

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::manifest::{DriverDeclaration, Manifest};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

use crate::config::{DEFAULT_SYNC_TIMEOUT_MS, MAX_SYNC_TIMEOUT_MS};

/// The plugin id.
pub const PLUGIN_ID: &str = "paperclip-sandbox.local-provider";

/// The driver key.
pub const DRIVER_KEY: &str = "local";

/// The acquire budget declared to November hosts (`defaultAcquireTimeoutMs`): creating a
/// directory is quick, so 60 s is generous.
pub const DEFAULT_ACQUIRE_TIMEOUT_MS: u64 = 60_000;

/// The manifest for hosts of `profile`.
pub fn manifest(profile: HostProfile) -> Manifest {
    let config_schema = json!({
        "type": "object",
        "properties": {
            "root": {
                "type": "string",
                "title": "Lease root",
                "description": "Absolute directory holding the lease directories (default: $LOCAL_PROVIDER_ROOT, else $TMPDIR/paperclip-local-provider)."
            },
            "syncTimeoutMs": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SYNC_TIMEOUT_MS,
                "default": DEFAULT_SYNC_TIMEOUT_MS,
                "description": "Transfer timeout of a native sync call, in milliseconds."
            }
        }
    });
    let mut driver = DriverDeclaration::sandbox_provider(DRIVER_KEY, "Local directory")
        .with_description("Each lease is a private directory on the worker's machine.")
        .with_config_schema(config_schema)
        .with_capability(Capability::ReusableLeases, true)
        .with_capability(Capability::NativeSyncIn, true)
        .with_capability(Capability::NativeSyncOut, true)
        .with_capability(Capability::IncrementalSessionOutput, true);
    if profile.is_november() {
        driver = driver.with_default_acquire_timeout_ms(DEFAULT_ACQUIRE_TIMEOUT_MS);
    }
    Manifest::sandbox_provider(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Local provider",
        "./dist/worker.cjs",
    )
    .with_description(
        "Example Paperclip sandbox provider: private directories on the local machine.",
    )
    .with_author("paperclip-sandbox developers")
    .with_driver(driver)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_is_valid_for_both_profiles() {
        for profile in [HostProfile::Paperclip2026_11, HostProfile::Paperclip2026_09] {
            let m = manifest(profile);
            let report = m.validate(profile);
            assert!(report.valid, "{profile:?}: {:?}", report.errors);
            let v = m.to_value();
            assert_eq!(v["id"], json!(PLUGIN_ID));
            assert_eq!(v["categories"], json!(["automation"]));
            assert_eq!(v["capabilities"], json!(["environment.drivers.register"]));
            assert_eq!(v["entrypoints"]["worker"], json!("./dist/worker.cjs"));
            let d = &v["environmentDrivers"][0];
            assert_eq!(
                (&d["driverKey"], &d["kind"]),
                (&json!("local"), &json!("sandbox_provider"))
            );
            for cap in
                ["reusableLeases", "nativeSyncIn", "nativeSyncOut", "incrementalSessionOutput"]
            {
                assert_eq!(d["sandboxCapabilities"][cap], json!(true), "{cap}");
            }
            assert!(d["configSchema"]["properties"]["root"].is_object());
            assert!(d["configSchema"]["properties"]["syncTimeoutMs"].is_object());
        }
        let old = manifest(HostProfile::Paperclip2026_09).to_value();
        assert!(old["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
        let new = manifest(HostProfile::Paperclip2026_11).to_value();
        assert_eq!(new["environmentDrivers"][0]["defaultAcquireTimeoutMs"], json!(60_000));
        // The November manifest is rejected by a September host: the variant matters.
        assert!(
            !manifest(HostProfile::Paperclip2026_11).validate(HostProfile::Paperclip2026_09).valid
        );
    }
}
