//! The conformance harness (`sandbox-conformance run`, through its library) against the real
//! `bwrap-provider` binary: every check passes, under both host profiles, in the mode this
//! machine allows (`bwrap: "auto"`) and with the wrapper off.

mod common;

use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::report::Status;
use paperclip_sandbox_conformance::{runner, RunOptions};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

fn passes_every_check(extra_config: serde_json::Value) {
    for profile in [HostProfile::Paperclip2026_11, HostProfile::Paperclip2026_09] {
        let root = tempfile::tempdir().unwrap();
        let mut config = json!({"root": root.path()});
        config.as_object_mut().unwrap().extend(extra_config.as_object().unwrap().clone());
        let config_file = root.path().join("config.json");
        std::fs::write(&config_file, config.to_string()).unwrap();
        let command = WorkerCommand::from_argv(&[common::BIN.to_string()]).unwrap();
        let mut options = RunOptions::new(command);
        options.config_path = Some(config_file);
        options.profile = profile;
        options.progress = false;
        // The runs need `sh` and `tar` on the sandbox PATH (runtime.required-clis).
        options.required_clis = vec!["sh".into(), "tar".into()];
        let report = runner::run(options).expect("the harness runs");
        // Under paperclip-2026-09 environmentStopLease does not exist, so its check skips.
        let allowed_skip = |id: &str, status: &Status| {
            !profile.is_november() && id == "lifecycle.stop-keeps-files" && *status == Status::Skip
        };
        let unexpected: Vec<String> = report
            .checks
            .iter()
            .filter(|c| c.status != Status::Pass && !allowed_skip(&c.id, &c.status))
            .map(|c| format!("{} {:?}: {:?} / {:?}", c.id, c.status, c.actual, c.skip_reason))
            .collect();
        assert!(unexpected.is_empty(), "{profile} {config}: {unexpected:#?}");
        assert_eq!(report.exit_code, 0, "{profile} {config}");
        assert!(report.checks.len() >= 40, "{profile}: the whole catalogue ran");
    }
}

#[test]
fn conformance_run_passes_in_auto_mode() {
    passes_every_check(json!({}));
}

#[test]
fn conformance_run_passes_with_bwrap_off() {
    passes_every_check(json!({"bwrap": "off"}));
}
