//! Runs every case of `vectors/manifest-validation.json` under every profile it names.

use paperclip_sandbox_protocol::manifest::{code, validate, Issue, ValidationReport};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;

mod common;
use common::profiles;

const VECTORS: &str = include_str!("vectors/manifest-validation.json");

/// Splits an RFC 6901 pointer into unescaped tokens.
fn tokens(pointer: &str) -> Vec<String> {
    assert!(pointer.starts_with('/'), "pointer {pointer:?} must start with /");
    pointer[1..].split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect()
}

/// Applies RFC 6902 `add`, `remove` and `replace` operations.
fn apply_patch(doc: &mut Value, patch: &[Value]) {
    for op in patch {
        let kind = op["op"].as_str().expect("op");
        let path = tokens(op["path"].as_str().expect("path"));
        let (last, parents) = path.split_last().expect("non-root path");
        let mut target = &mut *doc;
        for t in parents {
            target = match target {
                Value::Object(m) => m.get_mut(t.as_str()).expect("parent exists"),
                Value::Array(a) => {
                    a.get_mut(t.parse::<usize>().expect("index")).expect("index exists")
                }
                _ => panic!("cannot descend into a scalar at {t}"),
            };
        }
        match (kind, target) {
            ("add", Value::Object(m)) => {
                m.insert(last.clone(), op["value"].clone());
            }
            ("add", Value::Array(a)) => {
                let i = if last == "-" { a.len() } else { last.parse().expect("index") };
                a.insert(i, op["value"].clone());
            }
            ("replace", Value::Object(m)) => {
                assert!(m.contains_key(last.as_str()), "replace of a missing key {last}");
                m.insert(last.clone(), op["value"].clone());
            }
            ("replace", Value::Array(a)) => {
                a[last.parse::<usize>().expect("index")] = op["value"].clone()
            }
            ("remove", Value::Object(m)) => {
                m.shift_remove(last.as_str()).expect("removed key exists");
            }
            ("remove", Value::Array(a)) => {
                a.remove(last.parse::<usize>().expect("index"));
            }
            (other, _) => panic!("unsupported patch op {other}"),
        }
    }
}

fn check_error(case: &str, profile: HostProfile, got: &Issue, want: &Value) {
    let ctx = format!("{case} [{profile}] issue {got:?}");
    assert_eq!(got.path, want["path"].as_str().unwrap(), "{ctx}: path");
    if let Some(c) = want.get("code").and_then(Value::as_str) {
        assert_eq!(got.code, c, "{ctx}: code");
    }
    if let Some(m) = want.get("message").and_then(Value::as_str) {
        assert_eq!(got.message, m, "{ctx}: message");
    }
    for s in want.get("messageContains").and_then(Value::as_array).into_iter().flatten() {
        assert!(got.message.contains(s.as_str().unwrap()), "{ctx}: message lacks {s}");
    }
    for k in want.get("keys").and_then(Value::as_array).into_iter().flatten() {
        assert_eq!(got.code, code::UNRECOGNIZED_KEYS, "{ctx}");
        assert!(got.message.contains(&k.to_string()), "{ctx}: key {k} not named");
    }
    if let Some(t) = want.get("expectedType").and_then(Value::as_str) {
        assert!(got.message.contains(&format!("expected {t},")), "{ctx}: expected type {t}");
    }
    for v in want.get("values").and_then(Value::as_array).into_iter().flatten() {
        assert!(got.message.contains(&v.to_string()), "{ctx}: allowed value {v} not named");
    }
    if let Some(max) = want.get("maximum") {
        assert!(got.message.contains(&format!("<={max}")), "{ctx}: maximum {max}");
    }
    if let Some(k) = want.get("removedKey").and_then(Value::as_str) {
        assert_eq!(got.code, code::REMOVED_CAPABILITY, "{ctx}: removed-key code");
        assert!(got.message.contains(k) && got.message.contains("removed"), "{ctx}");
    }
}

fn check_case(case: &Value, base: &Value, profile: HostProfile) -> ValidationReport {
    let id = case["id"].as_str().unwrap();
    let mut manifest = base.clone();
    apply_patch(&mut manifest, case["input"]["patch"].as_array().unwrap());
    let report = validate(&manifest, profile);
    let expected = &case["expected"];
    assert_eq!(report.valid, report.errors.is_empty(), "{id}");
    assert_eq!(
        report.valid,
        expected["valid"].as_bool().unwrap(),
        "{id} [{profile}]: {:?}",
        report.errors
    );
    if let Some(errors) = expected.get("errors").and_then(Value::as_array) {
        assert_eq!(report.errors.len(), errors.len(), "{id} [{profile}]: {:?}", report.errors);
        for (got, want) in report.errors.iter().zip(errors) {
            check_error(id, profile, got, want);
        }
    }
    for key in expected.get("outputOmits").and_then(Value::as_array).into_iter().flatten() {
        let output = report.output.as_ref().expect("valid case has output");
        assert!(output.get(key.as_str().unwrap()).is_none(), "{id}: output keeps {key}");
    }
    if let Some(keys) = expected.get("extensionKeys").and_then(Value::as_array) {
        let want: Vec<&str> = keys.iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(report.extension_keys(), want, "{id} [{profile}]");
    }
    report
}

#[test]
fn every_manifest_vector_under_every_named_profile() {
    let file: Value = serde_json::from_str(VECTORS).unwrap();
    let base = &file["baseManifest"];
    let cases = file["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 33);
    let mut runs = 0;
    for case in cases {
        for profile in profiles(case) {
            check_case(case, base, profile);
            runs += 1;
        }
    }
    assert!(runs >= 33);
}

#[test]
fn kind_omitted_case_warns() {
    let file: Value = serde_json::from_str(VECTORS).unwrap();
    let case = file["cases"].as_array().unwrap().iter().find(|c| c["id"] == "M10").unwrap();
    let report = check_case(case, &file["baseManifest"], HostProfile::Paperclip2026_11);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert_eq!(report.warnings[0].code, code::KIND_OMITTED);
    assert_eq!(report.warnings[0].path, "environmentDrivers.0.kind");
}

#[test]
fn patch_helper_handles_escapes_and_arrays() {
    let mut doc = serde_json::json!({"a/b": {"c~d": [1, 2]}});
    apply_patch(
        &mut doc,
        &serde_json::from_str::<Vec<Value>>(
            r#"[{"op":"add","path":"/a~1b/c~0d/1","value":9},{"op":"remove","path":"/a~1b/c~0d/0"},
                {"op":"replace","path":"/a~1b/c~0d/1","value":3},{"op":"add","path":"/a~1b/c~0d/-","value":4}]"#,
        )
        .unwrap(),
    );
    assert_eq!(doc, serde_json::json!({"a/b": {"c~d": [9, 3, 4]}}));
}
