//! Fixtures shared by the protocol crate's integration tests (each test crate uses a part).
#![allow(dead_code)]

use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Value};

/// A minimal valid manifest: one sandbox-provider driver, valid in every profile.
pub fn base_manifest() -> Value {
    json!({"id":"acme.rust-sandbox","apiVersion":1,"version":"0.1.0","displayName":"Rust Sandbox",
        "description":"test","author":"Acme","categories":["automation"],
        "capabilities":["environment.drivers.register"],"entrypoints":{"worker":"./dist/worker.js"},
        "environmentDrivers":[{"driverKey":"rust-sbx","kind":"sandbox_provider","displayName":"Rust SBX",
            "configSchema":{"type":"object","properties":{}}}]})
}

/// The vector file `tests/vectors/<name>`, parsed.
pub fn vector_file(name: &str) -> Value {
    let path = format!("{}/tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The cases of `kind` in the vector file `name`.
pub fn cases_of_kind(name: &str, kind: &str) -> Vec<Value> {
    let file = vector_file(name);
    file["cases"].as_array().expect("cases").iter().filter(|c| c["kind"] == kind).cloned().collect()
}

/// The profiles a vector case names.
pub fn profiles(case: &Value) -> Vec<HostProfile> {
    let names = case["profiles"].as_array().expect("profiles");
    names.iter().map(|p| p.as_str().expect("a profile name").parse().expect("a profile")).collect()
}
