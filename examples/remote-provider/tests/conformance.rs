//! `sandbox-conformance run` (the harness crate, in process) against the `remote-provider`
//! binary and the fake API, under both host profiles: every MUST check passes.
//!
//! Skipped, because the provider does not offer them: `lifecycle.realize` (no
//! environmentRealizeWorkspace), `execute.incremental-output` (not declared), `sync.round-trip`
//! (no native sync); under paperclip-2026-09 also `lifecycle.stop-keeps-files`.

mod common;

use common::*;
use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::report::{human, Status};
use paperclip_sandbox_conformance::requirements::Level;
use paperclip_sandbox_conformance::{runner, RunOptions};
use paperclip_sandbox_sdk::protocol::HostProfile;

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
        let mut options = RunOptions::new(command);
        options.config_path = Some(config_path.clone());
        options.profile = profile;
        options.progress = false;
        let report = tokio::task::spawn_blocking(move || runner::run(options))
            .await
            .unwrap()
            .expect("the harness runs");
        let text = human::render(&report);
        let failed: Vec<String> = report
            .checks
            .iter()
            .filter(|c| c.level == Level::Must && c.status == Status::Fail)
            .map(|c| format!("{}: expected {:?}, got {:?}", c.id, c.expected, c.actual))
            .collect();
        assert!(
            failed.is_empty(),
            "{profile}: failed MUST checks:\n{}\n\n{text}",
            failed.join("\n")
        );
        assert_eq!(report.exit_code, 0, "{profile}: {text}");
        let passed = report.checks.iter().filter(|c| c.status == Status::Pass).count();
        assert!(passed >= 35, "{profile}: only {passed} checks passed\n{text}");
        eprintln!("{profile}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(fake.count("POST", "/sandbox") > 0, "the harness acquired no lease");
}
