//! Property tests: the envelope readers never panic on arbitrary JSON, and whatever they return
//! re-serializes with only allowlisted keys and values that satisfy the envelope rules.

use paperclip_sandbox_protocol::capabilities::resolve::{DeclaredCapabilities, ResolveInput};
use paperclip_sandbox_protocol::envelope::creation_cleanup::read_acquisition_diagnostic;
use paperclip_sandbox_protocol::envelope::creation_cleanup::{
    creation_cleanup_data, is_account_fingerprint, is_identifier, is_label_key,
    read_creation_cleanup, read_creation_cleanup_from_error, Ownership, MAX_LABELS, OWNERSHIP_KEYS,
};
use paperclip_sandbox_protocol::envelope::diagnostic::AcquisitionDiagnostic;
use paperclip_sandbox_protocol::envelope::ingress::validate_runner_ingress;
use paperclip_sandbox_protocol::envelope::receipt::accept_termination_receipt;
use paperclip_sandbox_protocol::envelope::resume::resume_replacement_reason;
use paperclip_sandbox_protocol::envelope::stop_error::{read_stop_error, stop_error_data};
use paperclip_sandbox_protocol::envelope::sync_error::{
    read_sync_error, sync_error_data, SyncDiagnostic, DIAGNOSTIC_KEYS, SYNC_ERROR_SCHEMA,
};
use paperclip_sandbox_protocol::methods::name;
use paperclip_sandbox_protocol::timeouts::is_transient_resume_failure;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Key names that reach the interesting branches (with [`OWNERSHIP_KEYS`]), plus secrets that
/// must never cross.
const KEYS: &[&str] = &[
    "schema",
    "cleanup",
    "data",
    "acquisitionDiagnostic",
    "paperclip-provider",
    "paperclip-a",
    "phase",
    "elapsedMs",
    "budgetMs",
    "diagnostic",
    "errorCode",
    "httpStatus",
    "exitCode",
    "transferStep",
    "transferFailureKind",
    "code",
    "status",
    "statusCode",
    "response",
    "cause",
    "message",
    "reason",
    "secret-token",
    "private-key",
    "accessToken",
    "state",
    "kind",
    "websocketUrl",
    "secretHeaders",
    "generation",
    "name",
    "value",
    "metadata",
    "workspaceSentinel",
    "result",
];

const STRINGS: &[&str] = &[
    "paperclip/environment-creation-cleanup/v1",
    "paperclip/environment-sync-error/v1",
    "paperclip/environment-stop-error/v1",
    "ECONNRESET",
    "EIO",
    "shell",
    "create",
    "busy",
    "archive_extract",
    "command_failed",
    "secret-value",
    "private-value",
    "a-1",
    "../x",
    "wss://h/p",
    "stopped",
    "authenticated_websocket",
];

fn arb_key() -> impl Strategy<Value = String> {
    let keys: Vec<&str> = KEYS.iter().chain(OWNERSHIP_KEYS).copied().collect();
    prop_oneof![3 => prop::sample::select(keys).prop_map(str::to_owned), 1 => "\\PC{0,8}"]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0i64..700).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(STRINGS).prop_map(Value::from),
        "[a-f0-9]{64}".prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn base_cleanup() -> Value {
    json!({"providerLeaseId": "paperclip-create-1", "companyId": "c1", "environmentId": "e1",
           "runId": "r1", "attemptId": "a1", "accountFingerprint": "a".repeat(64),
           "labels": {"paperclip-provider": "daytona"}})
}

/// A valid envelope with some fields replaced and extra (possibly secret) fields added.
fn near_valid_cleanup_data() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((arb_key(), arb_json()), 0..4),
        prop::collection::vec((arb_key(), arb_json()), 0..3),
        prop::option::of(arb_json()),
    )
        .prop_map(|(cleanup_edits, data_edits, diag)| {
            let mut cleanup = base_cleanup();
            for (k, v) in cleanup_edits {
                cleanup[k] = v;
            }
            let mut data = json!({"schema": "paperclip/environment-creation-cleanup/v1", "cleanup": cleanup,
                                  "acquisitionDiagnostic": {"phase": "shell", "elapsedMs": 5, "budgetMs": 5}});
            if let Some(diag) = diag {
                data["acquisitionDiagnostic"] = diag;
            }
            for (k, v) in data_edits {
                data[k] = v;
            }
            data
        })
}

fn near_valid_sync_data() -> impl Strategy<Value = Value> {
    prop::collection::vec((arb_key(), arb_json()), 0..5).prop_map(|edits| {
        let mut diagnostic = json!({"errorCode": "EIO", "httpStatus": 503, "exitCode": 7,
                                    "transferStep": "file_download", "transferFailureKind": "download_failed"});
        for (k, v) in edits {
            diagnostic[k] = v;
        }
        json!({"schema": SYNC_ERROR_SCHEMA, "diagnostic": diagnostic})
    })
}

fn check_ownership(ownership: &Ownership) {
    let json = ownership.to_json();
    let row = json.as_object().unwrap();
    assert!(row.keys().all(|k| OWNERSHIP_KEYS.contains(&k.as_str())), "{json}");
    let identifiers =
        OWNERSHIP_KEYS.iter().copied().filter(|k| !matches!(*k, "accountFingerprint" | "labels"));
    for key in identifiers {
        if let Some(v) = row.get(key) {
            assert!(is_identifier(v.as_str().unwrap()), "{key}");
        }
    }
    assert!(is_account_fingerprint(row["accountFingerprint"].as_str().unwrap()));
    let labels = row["labels"].as_object().unwrap();
    assert!(labels.len() <= MAX_LABELS);
    assert!(labels.iter().all(|(k, v)| is_label_key(k) && v.as_str().is_some_and(is_identifier)));
    assert_eq!(Ownership::from_json(&json).as_ref(), Some(ownership), "re-reads to itself");
}

fn check_diagnostic(d: &AcquisitionDiagnostic) {
    let json = d.to_json();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["phase", "elapsedMs", "budgetMs"]);
    assert_eq!(AcquisitionDiagnostic::from_json(&json).as_ref(), Some(d));
}

fn check_sync(d: &SyncDiagnostic) {
    let data = d.to_data().expect("a read diagnostic is never empty");
    let keys: Vec<&str> = data.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["schema", "diagnostic"]);
    assert!(data["diagnostic"]
        .as_object()
        .unwrap()
        .keys()
        .all(|k| DIAGNOSTIC_KEYS.contains(&k.as_str())));
    assert_eq!(read_sync_error(&data).as_ref(), Some(d));
}

fn no_secret(value: &Value) {
    let text = value.to_string();
    assert!(!text.contains("secret-") && !text.contains("private-"), "{text}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn readers_never_panic_and_stay_allowlisted(value in arb_json()) {
        if let Some(o) = read_creation_cleanup(&value) { check_ownership(&o); }
        if let Some(o) = read_creation_cleanup_from_error(&value) { check_ownership(&o); }
        if let Some(o) = Ownership::from_json(&value) { check_ownership(&o); }
        if let Some(d) = read_acquisition_diagnostic(&value) { check_diagnostic(&d); }
        if let Some(d) = AcquisitionDiagnostic::from_json(&value) { check_diagnostic(&d); }
        if let Some(d) = read_sync_error(&value) { check_sync(&d); }
        if let Some(data) = sync_error_data(&value) {
            check_sync(&read_sync_error(&data).expect("producer output re-reads"));
            no_secret(&data);
        }
        if let Some(reason) = read_stop_error(&value) {
            prop_assert_eq!(stop_error_data(reason).as_object().unwrap().len(), 2);
        }
        let _ = validate_runner_ingress(&value, "/runner");
        let _ = accept_termination_receipt(&value, "sbx1");
        let _ = resume_replacement_reason(&value);
        let _ = is_transient_resume_failure(&value);
        let _ = DeclaredCapabilities::from_declaration(&value);
        let _ = ResolveInput::from_json(&value);
    }

    #[test]
    fn creation_cleanup_builder_carries_only_allowlisted_fields(data in near_valid_cleanup_data()) {
        if let Some(ownership) = read_creation_cleanup(&data) {
            check_ownership(&ownership);
            let diagnostic = read_acquisition_diagnostic(&data);
            if let Some(d) = &diagnostic { check_diagnostic(d); }
            for method in [name::ENVIRONMENT_ACQUIRE_LEASE, name::ENVIRONMENT_DESTROY_LEASE, name::ENVIRONMENT_PROBE] {
                let Some(out) = creation_cleanup_data(method, &ownership, diagnostic.as_ref()) else {
                    prop_assert_eq!(method, name::ENVIRONMENT_PROBE);
                    continue;
                };
                let keys: Vec<&str> = out.as_object().unwrap().keys().map(String::as_str).collect();
                prop_assert!(keys.iter().all(|k| ["schema", "cleanup", "acquisitionDiagnostic"].contains(k)));
                prop_assert_eq!(out.get("acquisitionDiagnostic").is_some(),
                    method == name::ENVIRONMENT_ACQUIRE_LEASE && diagnostic.is_some());
                // A planted secret may only cross in a field the allowlist keeps (an identifier
                // such as "secret-value" is a valid providerLeaseId); never from anywhere else.
                let kept = format!("{}{}", ownership.to_json(),
                    diagnostic.as_ref().map(|d| d.to_json().to_string()).unwrap_or_default());
                if !kept.contains("secret-") && !kept.contains("private-") {
                    no_secret(&out);
                }
                prop_assert_eq!(read_creation_cleanup(&out), Some(ownership.clone()));
            }
        }
    }

    #[test]
    fn sync_reader_sanitizes_near_valid_envelopes(data in near_valid_sync_data()) {
        if let Some(d) = read_sync_error(&data) {
            check_sync(&d);
            no_secret(&d.to_json());
        }
    }
}
