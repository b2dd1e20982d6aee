//! `sandbox-conformance run --stateful` and `--chaos` (the harness crate, in process) against
//! the `remote-provider` binary and the fake API: random lifecycle programs, and the same with
//! backend faults injected between the provider and the fake (the endpoint proxy on
//! `baseUrl`), judged with the fake's own sandbox list as the leak oracle. No invariant fails.

mod common;

use std::sync::Arc;

use common::*;
use paperclip_sandbox_conformance::chaos;
use paperclip_sandbox_conformance::stateful::{self, StatefulOptions};
use paperclip_sandbox_conformance::RunOptions;
use paperclip_sandbox_conformance::Status;
use paperclip_sandbox_conformance::WorkerCommand;

fn options(config: &std::path::Path) -> RunOptions {
    let command =
        WorkerCommand::from_argv(&[env!("CARGO_BIN_EXE_remote-provider").to_owned()]).unwrap();
    let mut options = RunOptions::from(command);
    options.config_path = Some(config.to_owned());
    options.call_timeout = std::time::Duration::from_secs(10);
    options.progress = false;
    options
}

fn cases() -> u64 {
    std::env::var("STATEFUL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(12)
}

fn assert_no_failure(what: &str, report: &paperclip_sandbox_conformance::RunReport) {
    for c in &report.checks {
        eprintln!(
            "{what}: {:<30} {:<5} {}",
            c.id,
            c.status.as_str(),
            c.notes.first().map_or("", |n| n.as_str())
        );
        assert_ne!(c.status, Status::Fail, "{what}: {c:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_and_chaos_runs_find_nothing() {
    let fake = Arc::new(FakeApi::start(Faults { accept_any_key: true, ..Faults::default() }).await);
    let mut cfg = config(&fake);
    cfg.as_object_mut().unwrap().remove("apiKey");
    let dir = std::env::temp_dir().join(format!("remote-provider-stateful-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, cfg.to_string()).unwrap();

    let o = options(&config_path);
    let s = StatefulOptions {
        cases: cases(),
        seed: Some(24),
        progress: false,
        ..StatefulOptions::default()
    };
    let run = tokio::task::spawn_blocking(move || stateful::run(o, s)).await.unwrap().unwrap();
    assert_no_failure("stateful", &run.report);
    assert!(run.coverage.count("stateful.destroy-any-phase") > 0);

    let o = options(&config_path);
    let s = StatefulOptions {
        cases: cases(),
        seed: Some(24),
        progress: false,
        ..StatefulOptions::default()
    };
    let listing = fake.clone();
    // The leak oracle: the fake's sandboxes whose ownership labels name the case's environment.
    let oracle: chaos::Oracle = Box::new(move |env: &str| {
        Ok(listing
            .sandboxes()
            .into_iter()
            .filter(|s| s.labels.values().any(|v| v == env))
            .map(|s| s.id)
            .collect())
    });
    let run = tokio::task::spawn_blocking(move || {
        chaos::run_with_oracle(o, s, Some("baseUrl"), Some(oracle))
    })
    .await
    .unwrap()
    .unwrap();
    assert_no_failure("chaos", &run.report);
    assert!(run.coverage.count("chaos.budget") > 0, "faults were injected and judged");
    let _ = std::fs::remove_dir_all(&dir);
}
