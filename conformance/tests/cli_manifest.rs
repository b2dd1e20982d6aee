//! Runs the built `sandbox-conformance` binary: `manifest check` with files and stdin.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn base() -> Value {
    json!({"id":"acme.rust-sandbox","apiVersion":1,"version":"0.1.0","displayName":"Rust Sandbox",
        "description":"test","author":"Acme","categories":["automation"],
        "capabilities":["environment.drivers.register"],"entrypoints":{"worker":"./dist/worker.js"},
        "environmentDrivers":[{"driverKey":"rust-sbx","kind":"sandbox_provider","displayName":"Rust SBX",
            "configSchema":{"type":"object","properties":{}}}]})
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

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox-conformance"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    if let Some(input) = stdin {
        // A usage error exits before reading stdin: a broken pipe is expected then.
        let _ = pipe.write_all(input.as_bytes());
    }
    drop(pipe);
    child.wait_with_output().unwrap()
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
    let o = run(
        &["manifest", "check", "--format", "json", "-"],
        Some(&removed_key_manifest().to_string()),
    );
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
    let o = run(
        &["manifest", "check", "--profile", "paperclip-2026-09", "-"],
        Some(&removed_key_manifest().to_string()),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "valid (paperclip-2026-09)\n");
}

#[test]
fn a_driver_with_supports_tasks_is_valid_for_november_only() {
    let mut m = base();
    m["environmentDrivers"][0]["supportsTasks"] = json!(true);
    let o =
        run(&["manifest", "check", "--profile", "paperclip-2026-11", "-"], Some(&m.to_string()));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "valid (paperclip-2026-11)\n");
    // The published September host's strict driver schema has no such key.
    let o =
        run(&["manifest", "check", "--profile", "paperclip-2026-09", "-"], Some(&m.to_string()));
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("supportsTasks"), "{}", stdout(&o));
}

#[test]
fn human_output_lists_path_message_code() {
    let mut m = base();
    m["capabilities"] = json!(["http.outbound"]);
    let o = run(&["manifest", "check", "-"], Some(&m.to_string()));
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
