//! The SDK's command line on a real binary: `--manifest [--profile …]` prints the derived
//! manifest (pinned by a snapshot; `UPDATE_SNAPSHOTS=1` rewrites it) and exits 0, bad
//! arguments exit 2 with the usage on stderr.

use std::path::Path;
use std::process::{Command, Output};

use paperclip_sandbox_sdk::protocol::manifest::validate;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::assert_json_snapshot;
use serde_json::{Map, Value};

const BIN: &str = env!("CARGO_BIN_EXE_paperclip-sandbox-test-worker");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run the test worker")
}

fn manifest(args: &[&str]) -> Value {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("--manifest prints JSON")
}

#[test]
fn manifest_per_profile_matches_the_snapshot_and_validates() {
    let mut snapshot = Map::new();
    for profile in HostProfile::ALL {
        let m = manifest(&["--manifest", "--profile", profile.as_str()]);
        let report = validate(&m, profile);
        assert!(report.valid, "{profile}: {:#?}", report.errors);
        snapshot.insert(profile.as_str().to_owned(), m);
    }
    // Without --profile: the target profile, paperclip-2026-11.
    assert_eq!(manifest(&["--manifest"]), snapshot["paperclip-2026-11"]);
    assert_eq!(
        manifest(&["--profile=paperclip-2026-09", "--manifest"]),
        snapshot["paperclip-2026-09"]
    );
    let old = &snapshot["paperclip-2026-09"]["environmentDrivers"][0];
    assert!(old.get("creationOperationVersion").is_none(), "{old}");
    let new = &snapshot["paperclip-2026-11"]["environmentDrivers"][0];
    assert_eq!(new["creationOperationVersion"], 1);
    assert_eq!(new["configSchema"]["properties"]["token"]["format"], "secret-ref");
    assert_json_snapshot(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/manifest.json"),
        &Value::Object(snapshot),
    );
}

#[test]
fn bad_arguments_are_usage_errors_with_exit_code_2() {
    for args in [
        &["--bogus"][..],
        &["--manifest", "--profile", "paperclip-2026-10"],
        &["--manifest", "--profile"],
        &["serve"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: stdout must stay empty");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error: ") && stderr.contains("usage:"), "{args:?}: {stderr}");
    }
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--manifest"));
}
