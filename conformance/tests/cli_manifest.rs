//! Runs the built `sandbox-conformance` binary: `manifest check` with files and stdin.

mod support;

use std::path::PathBuf;
use std::process::Output;

use paperclip_sandbox_protocol::manifest::{DriverDeclaration, Manifest};
use serde_json::{json, Value};

/// A minimal valid sandbox-provider manifest (one driver), as the protocol crate's builder
/// writes it.
fn base() -> Value {
    let manifest = Manifest::sandbox_provider(
        "acme.rust-sandbox",
        "0.1.0",
        "Rust Sandbox",
        "./dist/worker.js",
    )
    .with_driver(DriverDeclaration::sandbox_provider("rust-sbx", "Rust SBX"));
    serde_json::to_value(manifest).unwrap()
}

fn removed_key_manifest() -> Value {
    let mut m = base();
    m["environmentDrivers"][0]["sandboxCapabilities"] = json!({"concurrentSyncOperations": true});
    m
}

/// A file in a per-test temporary directory under the target directory.
fn temp_file(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_manifest");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

use support::harness_with_stdin as run;

/// `manifest check <flags> -` with `manifest` on stdin.
fn check_stdin(flags: &[&str], manifest: &Value) -> Output {
    let mut args = vec!["manifest", "check"];
    args.extend_from_slice(flags);
    args.push("-");
    run(&args, Some(&manifest.to_string()))
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn valid_file_exits_zero_with_human_output() {
    let path = temp_file("valid.json", &base().to_string());
    let o = run(&["manifest", "check", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "valid (paperclip-2026-11)\n");
}

#[test]
fn invalid_stdin_exits_one_with_the_json_shape() {
    let o = check_stdin(&["--format", "json"], &removed_key_manifest());
    assert_eq!(o.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let keys: Vec<_> = report.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["valid", "profile", "errors", "warnings"]);
    assert_eq!(report["valid"], json!(false));
    assert_eq!(report["profile"], json!("paperclip-2026-11"));
    let err = &report["errors"][0];
    assert_eq!(
        err.as_object().unwrap().keys().cloned().collect::<Vec<_>>(),
        ["path", "code", "message"]
    );
    assert_eq!(err["path"], json!("environmentDrivers.0.sandboxCapabilities"));
    assert_eq!(err["code"], json!("removed_capability"));
    assert_eq!(report["warnings"], json!([]));
}

#[test]
fn profile_flag_selects_the_rules() {
    let o = check_stdin(&["--profile", "paperclip-2026-09"], &removed_key_manifest());
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "valid (paperclip-2026-09)\n");
}

#[test]
fn a_driver_with_supports_tasks_is_valid_for_november_only() {
    let mut m = base();
    m["environmentDrivers"][0]["supportsTasks"] = json!(true);
    let o = check_stdin(&["--profile", "paperclip-2026-11"], &m);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "valid (paperclip-2026-11)\n");
    // The published September host's strict driver schema has no such key.
    let o = check_stdin(&["--profile", "paperclip-2026-09"], &m);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("supportsTasks"), "{}", stdout(&o));
}

#[test]
fn human_output_lists_path_message_code() {
    let mut m = base();
    m["capabilities"] = json!(["http.outbound"]);
    let o = check_stdin(&[], &m);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "capabilities: Capability 'environment.drivers.register' is required when environmentDrivers are declared [custom]\n"
    );
}

#[test]
fn not_json_exits_two_with_one_line() {
    let path = temp_file("broken.json", "{\"id\": ");
    let o = run(&["manifest", "check", path.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("broken.json: not valid JSON"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn missing_file_exits_two() {
    let o = run(&["manifest", "check", "/definitely/not/here.json"], None);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1);
    assert!(err.contains("/definitely/not/here.json"), "{err}");
}

#[test]
fn usage_errors_exit_two() {
    for args in [
        &["manifest", "check", "--profile", "paperclip-2026-10", "-"][..],
        &["manifest", "check"][..],
        &["manifest", "check", "--format", "xml", "-"][..],
        &["manifest", "frobnicate"][..],
    ] {
        let o = run(args, Some("{}"));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("error"), "{args:?}");
    }
}

#[test]
fn an_unknown_capability_key_gets_did_you_mean() {
    let mut m = base();
    m["environmentDrivers"][0]["sandboxCapabilities"] = json!({"reusableLease": true});
    let o = check_stdin(&[], &m);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("\"reusableLease\": did you mean `reusableLeases`?"),
        "{}",
        stdout(&o)
    );
}
