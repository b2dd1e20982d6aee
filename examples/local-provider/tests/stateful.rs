//! `sandbox-conformance run --stateful` (the harness crate, in process) against the real
//! `local-provider` binary: random lifecycle programs, native sync steps included (the
//! provider's nativeSyncIn and nativeSyncOut are effective), find nothing, and the sync
//! invariant is reached.

use paperclip_sandbox_conformance::stateful::{self, StatefulOptions};
use paperclip_sandbox_conformance::RunOptions;
use paperclip_sandbox_conformance::{Status, WorkerCommand};

#[test]
fn stateful_runs_with_sync_steps_find_nothing() {
    let root = tempfile::tempdir().unwrap();
    let command = WorkerCommand {
        program: env!("CARGO_BIN_EXE_local-provider").to_owned(),
        args: Vec::new(),
        env: vec![("LOCAL_PROVIDER_ROOT".to_owned(), root.path().display().to_string())],
        cwd: None,
    };
    let mut options = RunOptions::from(command);
    options.progress = false;
    let cases = std::env::var("STATEFUL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(16);
    let s = StatefulOptions { cases, seed: Some(0x5c), progress: false, ..Default::default() };
    let run = stateful::run(options, s).unwrap();
    for c in &run.report.checks {
        assert_ne!(c.status, Status::Fail, "{c:#?}");
    }
    let sync = run.report.checks.iter().find(|c| c.id == "stateful.sync").expect("a sync row");
    assert_eq!(sync.status, Status::Pass, "{sync:#?}");
    assert!(run.coverage.count("stateful.sync") > 0);
}
