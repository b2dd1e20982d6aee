//! `sandbox-conformance capabilities resolve`, run as a real process.

mod support;

use std::process::Output;

use serde_json::{json, Value};

fn run(args: &[&str], stdin: &str) -> Output {
    support::harness_with_stdin(args, Some(stdin))
}

fn resolve(profile: &str, input: &Value) -> (i32, Value, String) {
    let out = run(&["capabilities", "resolve", "--profile", profile, "-"], &input.to_string());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap(), value, String::from_utf8(out.stderr).unwrap())
}

/// Every capability-resolution vector, through the binary, under every profile it names.
#[test]
fn every_vector_through_the_binary() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../protocol/tests/vectors/capability-resolution.json"
    ))
    .unwrap();
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let mut runs = 0;
    for case in vectors["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let input = &case["input"];
        let expected: Vec<&str> = case["expected"]["effectiveTrue"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for profile in case["profiles"].as_array().unwrap() {
            let profile = profile.as_str().unwrap();
            let (code, out, stderr) = resolve(profile, input);
            assert_eq!(code, 0, "{id} {profile}: {stderr}");
            let obj = out.as_object().expect("an object");
            let keys = if profile == "paperclip-2026-09" { 9 } else { 8 };
            assert_eq!(obj.len(), keys, "{id} {profile}: every key of the profile");
            for (key, value) in obj {
                assert_eq!(
                    value.as_bool().unwrap(),
                    expected.contains(&key.as_str()),
                    "{id} {profile}: {key}"
                );
            }
            runs += 1;
        }
    }
    assert_eq!(runs, 39);
}

#[test]
fn identity_failure_and_missing_methods_resolve_everything_false() {
    let all = [
        "environmentResumeLease",
        "environmentReleaseLease",
        "environmentDestroyLease",
        "environmentExecute",
        "environmentSyncIn",
        "environmentSyncOut",
    ];
    for input in [
        json!({"declaration": null, "supportedMethods": all, "leasePolicy": "reuse_by_environment"}),
        json!({"declaration": {"sandboxCapabilities": {"reusableLeases": true}}, "supportedMethods": null}),
    ] {
        let (code, out, _) = resolve("paperclip-2026-11", &input);
        assert_eq!(code, 0);
        assert!(out.as_object().unwrap().values().all(|v| v == &Value::Bool(false)), "{out}");
    }
}

#[test]
fn defaults_apply_and_order_is_the_table_order() {
    let input = json!({"declaration": {}, "supportedMethods": ["environmentExecute"]});
    let (code, out, _) = resolve("paperclip-2026-11", &input);
    assert_eq!(code, 0);
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "reusableLeases");
    assert_eq!(out["persistentProcessSessions"], true);
    assert_eq!(out["reusableLeases"], false, "ephemeral is the default lease policy");
    assert_eq!(out["incrementalSessionOutput"], false, "opt-in");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    for bad in [
        "not json",
        "[]",
        r#"{"declaration": 3, "supportedMethods": []}"#,
        r#"{"declaration": {}, "supportedMethods": [1]}"#,
        r#"{"declaration": {}, "supportedMethods": [], "leasePolicy": 7}"#,
    ] {
        let out = run(&["capabilities", "resolve", "-"], bad);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(out.stdout.is_empty(), "{bad}: nothing on stdout");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{bad}: one line, got {stderr:?}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
    let out = run(&["capabilities", "resolve", "--profile", "paperclip-2099-01", "-"], "{}");
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["capabilities", "resolve", "/nonexistent/input.json"], "");
    assert_eq!(out.status.code(), Some(2));
}

/// Names the resolution would silently ignore are rejected (exit 2) with the closest known name:
/// an unknown capability key, a near miss of a method or of a declaration key it reads. Other
/// driver fields and unknown methods far from any known one stay fine.
#[test]
fn unknown_names_are_rejected_with_did_you_mean() {
    let cases = [
        (
            json!({"declaration": {"sandboxCapabilities": {"reusableLease": true}}, "supportedMethods": []}),
            "did you mean `reusableLeases`?",
        ),
        (
            json!({"declaration": {"sandboxCapabilitie": {}}, "supportedMethods": []}),
            "did you mean `sandboxCapabilities`?",
        ),
        (
            json!({"declaration": {}, "supportedMethods": ["environmentResumeLeas"]}),
            "did you mean `environmentResumeLease`?",
        ),
    ];
    for (input, hint) in cases {
        let (code, _, stderr) = resolve("paperclip-2026-11", &input);
        assert_eq!(code, 2, "{input}: {stderr}");
        assert!(stderr.contains(hint), "{input}: {stderr}");
    }
    let fine = json!({"declaration": {"driverKey": "k", "displayName": "K"},
        "supportedMethods": ["someFutureMethodOfTheHost"]});
    let (code, _, stderr) = resolve("paperclip-2026-11", &fine);
    assert_eq!(code, 0, "{stderr}");
}
