//! `sandbox-conformance run` (the harness crate, in process) against the `remote-provider`
//! binary and the fake API, under both host profiles: every check passes but the skips below.
//!
//! Skipped, because the provider does not offer them: `lifecycle.realize` (no
//! environmentRealizeWorkspace), `execute.incremental-output` (not declared), `sync.round-trip`
//! (no native sync); under paperclip-2026-09 also `lifecycle.stop-keeps-files`.

mod common;

use common::*;
use paperclip_sandbox_conformance::WorkerCommand;
use paperclip_sandbox_conformance::{assert_conformant, RunOptions};
use paperclip_sandbox_sdk::protocol::HostProfile;

/// The stop checks beyond `lifecycle.stop-keeps-files`: they skip wherever it does
/// (environmentStopLease exists only in paperclip-2026-11).
const STOP_CHECKS: [&str; 4] = [
    "lifecycle.stop-busy-never-deletes",
    "lifecycle.stop-twice",
    "lifecycle.stop-from-fresh-worker",
    "lifecycle.export-resume",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_must_check_passes_under_both_profiles() {
    let fake = FakeApi::start(Faults { accept_any_key: true, ..Faults::default() }).await;
    // No apiKey: the harness plants its sentinel secret there and the fake accepts it, so
    // `secrets.no-leak` watches the key the provider really uses.
    let mut cfg = config(&fake);
    cfg.as_object_mut().unwrap().remove("apiKey");
    let dir =
        std::env::temp_dir().join(format!("remote-provider-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, cfg.to_string()).unwrap();

    for profile in [HostProfile::Paperclip2026_11, HostProfile::Paperclip2026_09] {
        let command =
            WorkerCommand::from_argv(&[env!("CARGO_BIN_EXE_remote-provider").to_owned()]).unwrap();
        let mut options = RunOptions::from(command);
        options.config_path = Some(config_path.clone());
        // The runs need `sh` and `tar` on the sandbox PATH (runtime.required-clis).
        options.required_clis = vec!["sh".into(), "tar".into()];
        // No idle-drain, environmentTask or duplex channel hooks: their checks skip.
        let mut skips = vec![
            "lifecycle.realize",
            "execute.incremental-output",
            "sync.round-trip",
            "newer.idle-seal",
            "newer.idle-busy",
            "newer.task-pairing",
            "newer.login-pty",
            "newer.duplex-roundtrip",
        ];
        if !profile.is_november() {
            skips.extend(["lifecycle.stop-keeps-files", "newer.not-implemented"]);
            skips.extend(STOP_CHECKS);
        }
        tokio::task::spawn_blocking(move || assert_conformant(options, profile, &skips))
            .await
            .unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fake.count("POST", "/sandbox") > 0, "the harness acquired no lease");
}
