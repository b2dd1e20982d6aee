//! Fixtures shared by the manifest tests.

use serde_json::{json, Value};

/// A minimal valid manifest: one sandbox-provider driver, valid in every profile.
pub fn base_manifest() -> Value {
    json!({"id":"acme.rust-sandbox","apiVersion":1,"version":"0.1.0","displayName":"Rust Sandbox",
        "description":"test","author":"Acme","categories":["automation"],
        "capabilities":["environment.drivers.register"],"entrypoints":{"worker":"./dist/worker.js"},
        "environmentDrivers":[{"driverKey":"rust-sbx","kind":"sandbox_provider","displayName":"Rust SBX",
            "configSchema":{"type":"object","properties":{}}}]})
}
