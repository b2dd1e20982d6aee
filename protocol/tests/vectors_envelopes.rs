//! Runs every case of `vectors/creation-cleanup.json` and `vectors/sync-error.json` under every
//! profile each case names.
//!
//! The vectors describe a JavaScript worker; this harness decodes their markers into JSON:
//!
//! - `{"$nonFinite": …}` becomes `null`, its wire form (`JSON.stringify` turns a non-finite
//!   number into `null`), which every reader treats as invalid;
//! - `{"$inherited": obj}` and `{"$getters": obj}` become `{}`: an object with no own data
//!   properties, which is what the JavaScript reader is allowed to see (invalid);
//! - `{"$error": {"message": m}, …}` becomes a plain object with `message` and the other keys;
//! - `{"$undefined": true}` becomes `null` (nothing is thrown).
//!
//! Where a case expects a whole worker response, only its `error.data` part is checked here
//! (through the envelope builders); the wire form belongs to the SDK's tests. The envelopes are
//! a November feature, so under `paperclip-2026-09` no case ever attaches data.

use paperclip_sandbox_protocol::envelope::creation_cleanup::read_acquisition_diagnostic;
use paperclip_sandbox_protocol::envelope::creation_cleanup::{
    creation_cleanup_data_for_profile, read_creation_cleanup_from_error, Ownership,
    CREATION_CLEANUP_SCHEMA,
};
use paperclip_sandbox_protocol::envelope::diagnostic::AcquisitionDiagnostic;
use paperclip_sandbox_protocol::envelope::sync_error::{
    read_sync_error_from_error, sync_error_data_for_profile,
};
use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Map, Value};

mod common;
use common::{profiles, vector_file};

/// Decodes the vectors' JavaScript markers (see the module documentation).
fn decode(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            if map.contains_key("$nonFinite") || map.contains_key("$undefined") {
                return Value::Null;
            }
            if map.contains_key("$inherited") || map.contains_key("$getters") {
                return json!({});
            }
            let mut out = Map::new();
            for (key, v) in map {
                if key == "$error" {
                    out.extend(v.as_object().expect("$error object").clone());
                } else {
                    out.insert(key.clone(), decode(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(decode).collect()),
        other => other.clone(),
    }
}

fn opt(value: Option<Value>) -> Value {
    value.unwrap_or(Value::Null)
}

/// The `error.data` a worker attaches for a thrown value: only the SDK's typed creation-cleanup
/// error carries an envelope (built from the allowlisted ownership); a plain `Error` or a
/// `JsonRpcCallError` never forwards its own `data`.
fn worker_error_data(profile: HostProfile, method: &str, thrown: &Value) -> Option<Value> {
    if thrown["type"] != "PluginEnvironmentCreationCleanupError" {
        return None;
    }
    let ownership = Ownership::from_json(&decode(&thrown["cleanup"]))?;
    let diagnostic = thrown
        .get("acquisitionDiagnostic")
        .map(decode)
        .as_ref()
        .and_then(AcquisitionDiagnostic::from_json);
    creation_cleanup_data_for_profile(profile, method, &ownership, diagnostic.as_ref())
}

fn assert_not_contains(haystack: &Value, needles: Option<&Value>, id: &str) {
    let text = haystack.to_string();
    for needle in needles.and_then(Value::as_array).into_iter().flatten() {
        let needle = needle.as_str().unwrap();
        assert!(!text.contains(needle), "{id}: `{needle}` leaked into {text}");
    }
}

#[test]
fn creation_cleanup_vectors() {
    let vectors = vector_file("creation-cleanup.json");
    let cases = vectors["cases"].as_array().unwrap();
    let mut runs = 0;
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let (input, expected) = (&case["input"], &case["expected"]);
        for profile in profiles(case) {
            runs += 1;
            if let Some(reader_input) = input.get("readerInput") {
                let got = read_creation_cleanup_from_error(&decode(reader_input));
                assert_eq!(opt(got.map(|o| o.to_json())), expected["readerResult"], "{id}");
                continue;
            }
            let method = input["method"].as_str().unwrap();
            let thrown = &input["thrown"];
            let data = worker_error_data(profile, method, thrown);
            if let Some(want) = expected.get("errorData") {
                assert_eq!(opt(data.clone()), *want, "{id} {profile}: errorData");
            }
            if let Some(want) = expected.get("readerResult") {
                let envelope = json!({"data": {"schema": CREATION_CLEANUP_SCHEMA,
                                               "cleanup": decode(&thrown["cleanup"])}});
                let got = read_creation_cleanup_from_error(&envelope);
                assert_eq!(opt(got.map(|o| o.to_json())), *want, "{id}: readerResult");
            }
            if let Some(want) = expected.get("response") {
                // The error object carries the thrown numeric code and message, never data.
                let code = thrown["code"].as_i64().unwrap_or(-32002);
                let mut error = ErrorObject::new(code, thrown["message"].as_str().unwrap());
                error.data = data.clone();
                let response = json!({"jsonrpc": "2.0", "id": input["requestId"], "error": error});
                assert_eq!(response, *want, "{id}: response");
            }
            let error =
                json!({"code": -32002, "message": thrown["message"], "data": opt(data.clone())});
            assert_not_contains(&error, expected.get("responseMustNotContain"), id);
            if let Some(data) = &data {
                // The host re-reads the same envelope: ownership and diagnostic survive intact.
                assert_eq!(
                    data.get("acquisitionDiagnostic").cloned(),
                    read_acquisition_diagnostic(data).map(|d| d.to_json()),
                    "{id}: diagnostic re-read"
                );
            }
        }
        if input.get("thrown").is_some() {
            // profileNote: the published SDK and HOST-2026-09 never carry error.data.
            let method = input["method"].as_str().unwrap();
            assert_eq!(
                worker_error_data(HostProfile::Paperclip2026_09, method, &input["thrown"]),
                None,
                "{id}"
            );
        }
    }
    assert_eq!(cases.len(), 43);
    assert_eq!(runs, 65, "21 November-only cases + 22 cases in both profiles");
}

#[test]
fn sync_error_vectors() {
    let vectors = vector_file("sync-error.json");
    let cases = vectors["cases"].as_array().unwrap();
    let mut runs = 0;
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let (input, expected) = (&case["input"], &case["expected"]);
        let thrown = decode(&input["producer"]);
        for profile in profiles(case) {
            runs += 1;
            let data = sync_error_data_for_profile(profile, &thrown);
            assert_eq!(opt(data.clone()), expected["data"], "{id} {profile}: data");
            if let Some(data) = &data {
                assert_not_contains(data, expected.get("dataMustNotContain"), id);
            }
            if let Some(want) = expected.get("readerResult") {
                let got = read_sync_error_from_error(&json!({"data": opt(data)}));
                assert_eq!(opt(got.map(|d| d.to_json())), *want, "{id}: readerResult");
            }
        }
        assert_eq!(
            sync_error_data_for_profile(HostProfile::Paperclip2026_09, &thrown),
            None,
            "{id}"
        );
    }
    assert_eq!(cases.len(), 16);
    assert_eq!(runs, 30, "2 November-only cases + 14 cases in both profiles");
}
