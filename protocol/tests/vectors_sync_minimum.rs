//! The `sync-minimum-timeout` cases of
//! `tests/vectors/framing-and-timeouts.json`, run for every profile each case names, both on
//! the raw params and through the typed `SyncParams`.

use paperclip_sandbox_protocol::methods::{
    effective_sync_timeout_ms, name, sync_minimum_timeout_ms, SyncParams,
};
use serde_json::{json, Value};

mod common;
use common::{cases_of_kind, profiles};

const KIND: &str = "sync-minimum-timeout";

/// Complete sync params around the case's partial params, so the typed path is exercised too.
fn full_params(partial: &Value) -> Value {
    let mut v = json!({
        "driverKey": "rust-sbx", "companyId": "company-1", "environmentId": "environment-1",
        "config": {}, "lease": {"providerLeaseId": "sbx1", "metadata": {}, "expiresAt": null},
        "operations": []
    });
    v.as_object_mut().unwrap().extend(partial.as_object().unwrap().clone());
    v
}

#[test]
fn sync_minimum_timeout_vectors() {
    let cases = cases_of_kind("framing-and-timeouts.json", KIND);
    assert_eq!(cases.len(), 11, "expected the D7.1–D7.11 cases");
    let mut runs = 0;
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let input = &case["input"];
        let method = input["method"].as_str().unwrap();
        assert!([name::ENVIRONMENT_SYNC_IN, name::ENVIRONMENT_SYNC_OUT].contains(&method), "{id}");
        let configured = input["configuredTimeoutMs"].as_u64().unwrap();
        let expected = &case["expected"];
        for profile in profiles(case) {
            let raw = sync_minimum_timeout_ms(&input["params"], profile)
                .map(|min| effective_sync_timeout_ms(min, configured));
            let typed: SyncParams = serde_json::from_value(full_params(&input["params"]))
                .unwrap_or_else(|e| {
                    panic!("{id}: params must deserialize whatever the value: {e}")
                });
            let typed_out = typed.effective_timeout_ms(profile, configured);
            match (expected.get("effectiveTimeoutMs"), expected.get("errorCode")) {
                (Some(ms), None) => {
                    let ms = ms.as_u64().unwrap();
                    assert_eq!(raw, Ok(ms), "{id} under {profile}");
                    assert_eq!(typed_out, Ok(ms), "{id} under {profile} (typed)");
                }
                (None, Some(code)) => {
                    let err = raw.expect_err(id);
                    assert_eq!(err.to_error_object().code, code.as_i64().unwrap(), "{id}");
                    assert_eq!(typed_out.expect_err(id), err, "{id} (typed)");
                }
                _ => panic!("{id}: unexpected expected shape {expected}"),
            }
            runs += 1;
        }
    }
    assert_eq!(runs, 11);
}
