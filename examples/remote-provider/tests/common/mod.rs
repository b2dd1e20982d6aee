//! Shared test helpers: the fake API, provider configs and params, envelope readers.
#![allow(dead_code, unused_imports)]

pub mod fake;

use paperclip_sandbox_sdk::protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_sdk::testing::TestClient;
use remote_provider::RemoteProvider;
use serde_json::{json, Value};

pub use fake::{now, then, FakeApi, FakeSandbox, Faults, API_KEY};

/// The creation-operation id the tests send.
pub const OP_ID: &str = "0b5e6c1e-6a55-4f4c-9d0e-3f1c2a7b8e90";
/// Its creation name.
pub const CREATION_NAME: &str = "paperclip-create-0b5e6c1e-6a55-4f4c-9d0e-3f1c2a7b8e90";
/// Lookup delay the tests use.
pub const LOOKUP_MS: u64 = 300;
/// Acquisition cap the tests use.
pub const CAP_MS: u64 = 1000;

/// A config for `fake` with durations shrunk to milliseconds.
pub fn config(fake: &FakeApi) -> Value {
    json!({
        "apiKey": API_KEY,
        "baseUrl": fake.base_url,
        "acquireCapMs": CAP_MS,
        "createLookupDelayMs": LOOKUP_MS,
        "pollIntervalMs": 20,
        "requestTimeoutMs": 2000,
        "stateTimeoutMs": 400,
    })
}

/// Base params with `config`.
pub fn base(config: &Value) -> Value {
    json!({"driverKey": "remote", "companyId": "company-1", "environmentId": "env-1",
           "config": config})
}

/// `environmentAcquireLease` params with the test's creation operation.
pub fn acquire_params(config: &Value) -> Value {
    let mut p = base(config);
    p["runId"] = json!("run-1");
    p["creationOperation"] = json!({"version": 1, "id": OP_ID});
    p
}

/// Params of a lease call (`providerLeaseId` plus extra keys).
pub fn lease_params(config: &Value, lease_id: &str, extra: Value) -> Value {
    let mut p = base(config);
    p["providerLeaseId"] = json!(lease_id);
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            p[k] = v;
        }
    }
    p
}

/// An in-process host over a fresh provider.
pub fn client() -> TestClient {
    TestClient::new(RemoteProvider::new())
}

/// The `cleanup` object of an error's creation-cleanup envelope.
pub fn cleanup(error: &ErrorObject) -> Value {
    let data = error.data.as_ref().unwrap_or_else(|| panic!("no data in {error:?}"));
    assert_eq!(data["schema"], "paperclip/environment-creation-cleanup/v1", "{data}");
    data["cleanup"].clone()
}

/// Whether `DELETE` was ever sent.
pub fn deletes(fake: &FakeApi) -> usize {
    fake.count("DELETE", "/sandbox")
}
