//! The conformance harness (`sandbox-conformance run`, through its library) against the real
//! `bwrap-provider` binary: every MUST check passes, in the mode this machine allows and with
//! the wrapper off.

mod common;

use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::{runner, RunOptions};
use serde_json::json;

fn run_with_config(extra: serde_json::Value) {
    let root = tempfile::tempdir().unwrap();
    let mut config = json!({"root": root.path()});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let config_file = root.path().join("config.json");
    std::fs::write(&config_file, config.to_string()).unwrap();
    let command = WorkerCommand::from_argv(&[common::BIN.to_string()]).unwrap();
    let mut options = RunOptions::new(command);
    options.config_path = Some(config_file);
    options.progress = false;
    let report = runner::run(options).unwrap();
    assert_eq!(report.exit_code, 0, "{}", report.to_json());
}

#[test]
fn conformance_run_passes_in_auto_mode() {
    run_with_config(json!({}));
}

#[test]
fn conformance_run_passes_with_bwrap_off() {
    run_with_config(json!({"bwrap": "off"}));
}
