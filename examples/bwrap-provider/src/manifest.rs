//! The plugin manifest of the bwrap provider, built by hand (not yet converted to the SDK's
//! `#[derive(PluginManifest)]`, which the local provider uses).
//!
//! `bwrap-provider --manifest` prints it; `--profile paperclip-2026-09` prints the variant a
//! September host accepts. The capabilities are the local provider's; the config schema adds
//! `bwrap`.

use local_provider::config::{DEFAULT_SYNC_TIMEOUT_MS, MAX_SYNC_TIMEOUT_MS};
use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::manifest::{DriverDeclaration, Manifest};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

/// The plugin id.
pub const PLUGIN_ID: &str = "paperclip-sandbox.bwrap-provider";

/// The driver key.
pub const DRIVER_KEY: &str = "bwrap";

/// The acquire budget declared to November hosts (`defaultAcquireTimeoutMs`), as the local
/// provider's: acquiring is creating a directory.
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
            },
            "bwrap": {
                "type": "string",
                "enum": ["auto", "off"],
                "default": "auto",
                "title": "bubblewrap wrapper",
                "description": "auto: wrap commands with bubblewrap when its prerequisites hold (advisory, best-effort, no security claim); off: never."
            }
        }
    });
    let mut driver = DriverDeclaration::sandbox_provider(DRIVER_KEY, "Local directory + bubblewrap")
        .with_description(
            "Each lease is a private directory on the worker's machine; commands run under an advisory bubblewrap wrapper when its prerequisites hold.",
        )
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
        "bwrap provider",
        "./dist/worker.cjs",
    )
    .with_description(
        "Example Paperclip sandbox provider: local lease directories, commands wrapped by bubblewrap when available.",
    )
    .with_author("paperclip-sandbox developers")
    .with_driver(driver)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::PluginManifest;

    #[test]
    fn manifest_is_valid_and_matches_local_capabilities() {
        for profile in [HostProfile::Paperclip2026_11, HostProfile::Paperclip2026_09] {
            let m = manifest(profile);
            let report = m.validate(profile);
            assert!(report.valid, "{profile:?}: {:?}", report.errors);
            let v = m.to_value();
            let local =
                <local_provider::provider::LocalProvider as PluginManifest>::manifest(profile)
                    .to_value();
            let d = &v["environmentDrivers"][0];
            let ld = &local["environmentDrivers"][0];
            assert_eq!(d["driverKey"], json!("bwrap"));
            assert_eq!(d["kind"], ld["kind"]);
            assert_eq!(d["sandboxCapabilities"], ld["sandboxCapabilities"]);
            assert_eq!(d.get("defaultAcquireTimeoutMs"), ld.get("defaultAcquireTimeoutMs"));
            assert_eq!(d["configSchema"]["properties"]["bwrap"]["enum"], json!(["auto", "off"]));
            assert_eq!(v["id"], json!(PLUGIN_ID));
        }
    }
}
