//! The conformance harness (`sandbox-conformance run`, through its library) against the real
//! `bwrap-provider` binary: every check passes, under both host profiles, in the mode this
//! machine allows (`bwrap: "auto"`) and with the wrapper off.

mod common;

use paperclip_sandbox_conformance::WorkerCommand;
use paperclip_sandbox_conformance::{assert_conformant, RunOptions};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

fn passes_every_check(extra_config: serde_json::Value) {
    for (profile, skips) in [
        // idle-drain and the duplex channel hooks are the local provider's, through
        // `delegate`; the manifest does not declare `duplexCommandStream`, so a host never opens
        // a channel (whose command would run outside bubblewrap) and its check skips. No
        // environmentTask hook.
        (
            HostProfile::Paperclip2026_11,
            &["newer.task-pairing", "newer.login-pty", "newer.duplex-roundtrip"][..],
        ),
        // Under paperclip-2026-09 environmentStopLease and the newest methods do not exist.
        (
            HostProfile::Paperclip2026_09,
            &[
                "lifecycle.stop-keeps-files",
                "lifecycle.stop-busy-never-deletes",
                "lifecycle.stop-twice",
                "lifecycle.stop-from-fresh-worker",
                "lifecycle.export-resume",
                "newer.not-implemented",
                "newer.idle-seal",
                "newer.idle-busy",
                "newer.task-pairing",
                "newer.login-pty",
                "newer.duplex-roundtrip",
            ][..],
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        let mut config = json!({"root": root.path()});
        config.as_object_mut().unwrap().extend(extra_config.as_object().unwrap().clone());
        let config_file = root.path().join("config.json");
        std::fs::write(&config_file, config.to_string()).unwrap();
        let mut options =
            RunOptions::from(WorkerCommand::from_argv(&[common::BIN.to_string()]).unwrap());
        options.config_path = Some(config_file);
        // The runs need `sh` and `tar` on the sandbox PATH (runtime.required-clis).
        options.required_clis = vec!["sh".into(), "tar".into()];
        assert_conformant(options, profile, skips);
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
