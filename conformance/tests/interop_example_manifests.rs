//! The manifests the SDK's derive generates for the examples, judged by the published host
//! validator (`pluginManifestV1Schema` of npm `@paperclipai/shared` 2026.916.1, run by
//! `interop/shared-validator/validate.mjs`) in their paperclip-2026-09 variant, and by our
//! validator in every variant.
//!
//! The manifests are read from each example's committed snapshot, which the example's own
//! snapshot test keeps equal to what the derive generates.

mod support;

use std::path::{Path, PathBuf};

use paperclip_sandbox_protocol::manifest::validate;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;

/// The manifest snapshots of the examples, relative to the workspace root.
const SNAPSHOTS: &[&str] = &[
    "examples/local-provider/tests/snapshots/manifest.json",
    "examples/bwrap-provider/tests/snapshots/manifest.json",
    "examples/remote-provider/tests/snapshots/manifest.json",
    "examples/container-provider/tests/snapshots/manifest.json",
    "sdk/test-worker/tests/snapshots/manifest.json",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

fn snapshots() -> Vec<(String, Value)> {
    SNAPSHOTS
        .iter()
        .map(|rel| {
            let text = std::fs::read_to_string(workspace().join(rel))
                .unwrap_or_else(|e| panic!("read {rel}: {e}"));
            (rel.to_string(), serde_json::from_str(&text).expect("a snapshot is JSON"))
        })
        .collect()
}

#[test]
fn every_example_manifest_passes_our_validator_for_its_profile() {
    for (rel, snapshot) in snapshots() {
        for profile in HostProfile::ALL {
            let manifest = &snapshot[profile.as_str()];
            assert!(manifest.is_object(), "{rel}: no {profile} manifest");
            let report = validate(manifest, profile);
            assert!(report.valid, "{rel} ({profile}): {:#?}", report.errors);
        }
    }
}

#[test]
fn every_example_september_manifest_passes_the_published_host_validator() {
    if !support::node_available() {
        eprintln!("interop: skipped, `node` is not on PATH");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/shared-validator");
    support::ensure_npm_project(&dir, "@paperclipai/shared");
    let snapshots = snapshots();
    let mut input = String::new();
    for (_, snapshot) in &snapshots {
        input.push_str(&snapshot["paperclip-2026-09"].to_string());
        input.push('\n');
    }
    let verdicts = support::published_verdicts(&dir, &input);
    assert_eq!(verdicts.len(), snapshots.len());
    for ((rel, _), verdict) in snapshots.iter().zip(&verdicts) {
        assert_eq!(verdict["valid"], Value::Bool(true), "{rel}: {verdict}");
    }
    eprintln!(
        "interop: {} example manifests valid for @paperclipai/shared 2026.916.1",
        verdicts.len()
    );

    // The November variants carry fields the September host rejects, which is why the SDK
    // prints a variant per profile (a check that the validator really judges what we send).
    let local = &snapshots[0].1["paperclip-2026-11"];
    let verdicts = support::published_verdicts(&dir, &format!("{local}\n"));
    assert_eq!(verdicts.len(), 1);
    let verdict = &verdicts[0];
    assert_eq!(verdict["valid"], Value::Bool(false), "{verdict}");
    assert_eq!(verdict["codes"][0], "unrecognized_keys", "{verdict}");
}
