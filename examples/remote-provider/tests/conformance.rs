//! `sandbox-conformance run` (the harness crate, in process) against the `remote-provider`
//! binary and the fake API: every MUST check passes.

mod common;

use common::*;
use paperclip_sandbox_conformance::process::WorkerCommand;
use paperclip_sandbox_conformance::report::{human, Status};
use paperclip_sandbox_conformance::requirements::Level;
use paperclip_sandbox_conformance::{runner, RunOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_must_check_passes() {
    let fake = FakeApi::start(Faults { accept_any_key: true, ..Faults::default() }).await;
    // No apiKey: the harness plants its sentinel secret there, and the fake accepts it, so
    // `secrets.no-leak` watches the key the provider really uses.
    let mut cfg = config(&fake);
    cfg.as_object_mut().unwrap().remove("apiKey");
    let dir =
        std::env::temp_dir().join(format!("remote-provider-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, cfg.to_string()).unwrap();

    let command =
        WorkerCommand::from_argv(&[env!("CARGO_BIN_EXE_remote-provider").to_owned()]).unwrap();
    let mut options = RunOptions::new(command);
    options.config_path = Some(config_path);
    options.progress = false;
    let report = tokio::task::spawn_blocking(move || runner::run(options))
        .await
        .unwrap()
        .expect("the harness runs");
    let _ = std::fs::remove_dir_all(&dir);

    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.level == Level::Must && c.status == Status::Fail)
        .map(|c| format!("{}: expected {:?}, got {:?}", c.id, c.expected, c.actual))
        .collect();
    assert!(
        failed.is_empty(),
        "failed MUST checks:\n{}\n\n{}",
        failed.join("\n"),
        human::render(&report)
    );
    assert_eq!(report.exit_code, 0, "{}", human::render(&report));
    let passed = report.checks.iter().filter(|c| c.status == Status::Pass).count();
    assert!(passed > 10, "{}", human::render(&report));
    assert!(fake.count("POST", "/sandbox") > 0, "the harness acquired no lease");
    eprintln!("{}", human::render(&report));
}
