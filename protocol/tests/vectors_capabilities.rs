//! Runs every case of `vectors/capability-resolution.json` under every profile it names.

use paperclip_sandbox_protocol::capabilities::resolve::{resolve_input, ResolveInput};
use paperclip_sandbox_protocol::capabilities::Capability;
use serde_json::Value;

mod common;
use common::{profiles, vector_file};

#[test]
fn capability_resolution_vectors() {
    let vectors = vector_file("capability-resolution.json");
    let cases = vectors["cases"].as_array().expect("cases");
    let mut runs = 0;
    for case in cases {
        let id = case["id"].as_str().expect("id");
        // The vector input is fed to the CLI input reader unchanged (leaseMetadata, identity).
        let input = ResolveInput::from_json(&case["input"])
            .unwrap_or_else(|e| panic!("{id}: input rejected: {e}"));
        let expected_true: Vec<&str> = case["expected"]["effectiveTrue"]
            .as_array()
            .expect("effectiveTrue")
            .iter()
            .map(|v| v.as_str().expect("key"))
            .collect();
        for profile in profiles(case) {
            let effective = resolve_input(profile, &input);
            let keys: Vec<&str> = effective.iter().map(|(c, _)| c.key()).collect();
            let table: Vec<&str> = Capability::for_profile(profile).map(Capability::key).collect();
            assert_eq!(keys, table, "{id} {profile}: key set");
            assert_eq!(effective.effective_keys(), expected_true, "{id} {profile}");
            for (cap, value) in effective.iter() {
                assert_eq!(value, expected_true.contains(&cap.key()), "{id} {profile} {cap}");
                assert_eq!(effective.to_json()[cap.key()], Value::Bool(value));
            }
            if let Some(native) = case["expected"].get("nativeSyncTransfer") {
                assert_eq!(
                    Value::Bool(input.transfer_uses_native_sync()),
                    *native,
                    "{id} {profile}: nativeSyncTransfer"
                );
            }
            runs += 1;
        }
    }
    assert_eq!(cases.len(), 20);
    assert_eq!(runs, 39, "20 cases, V14 under 2026-09 only");
}
