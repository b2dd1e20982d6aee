//! Faults against a real cluster (and one without any): an unreachable API server, a Pod
//! deleted behind the provider's back mid-command, a command past its timeout, a Pod that
//! cannot start, the Job backend's lease, and output floods.

mod common;

use std::time::{Duration, Instant};

use common::{objects_of, target, Wire, LIVENESS};
use paperclip_sandbox_conformance::RunOptions;
use paperclip_sandbox_conformance::Status;
use paperclip_sandbox_conformance::WorkerCommand;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::json;

/// With an API server nobody listens on, the harness reports one root failure (the first
/// check that needs a lease) and blocks everything that depends on it: no cascade of failures.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_api_server_is_one_root_failure_and_the_rest_blocked() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\n\
         clusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\n\
         users: [{name: u, user: {token: not-a-real-token}}]\n\
         contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n\
         current-context: x\n",
    )
    .unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, json!({"kubeconfig": kubeconfig, "namespace": "default"}).to_string())
        .unwrap();
    let command = WorkerCommand {
        program: env!("CARGO_BIN_EXE_kubernetes-provider").to_owned(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: None,
    };
    let mut options = RunOptions::from(command);
    options.config_path = Some(config);
    options.profile = HostProfile::Paperclip2026_11;
    let report =
        tokio::task::spawn_blocking(move || paperclip_sandbox_conformance::run(options).unwrap())
            .await
            .unwrap();
    let failed: Vec<_> = report.checks.iter().filter(|c| c.status == Status::Fail).collect();
    assert_eq!(
        failed.len(),
        1,
        "one root failure: {:?}",
        failed.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    let root = &failed[0].id;
    let blocked: Vec<_> = report.checks.iter().filter(|c| c.status == Status::Blocked).collect();
    assert!(blocked.len() >= 10, "the checks that need a lease are blocked: {}", blocked.len());
    assert!(
        blocked.iter().all(|c| c.blocked_by.as_deref() == Some(root.as_str())),
        "every blocked check names the root failure {root}"
    );
    eprintln!("root failure {root}; {} blocked", blocked.len());
}

/// A Pod deleted from outside while a command runs ends the call with an error naming the
/// cause, well within the liveness bound (never a hang).
#[tokio::test(flavor = "multi_thread")]
async fn a_pod_deleted_mid_command_is_an_error_not_a_hang() {
    let Some(t) = target() else { return };
    let cluster = t.cluster().await;
    let mut w = Wire::start(&t, "company-pod-deleted").await;
    let lease = w.acquire_with(json!({})).await;
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    let pod = lease["metadata"]["podName"].as_str().unwrap().to_owned();
    let p = w.sh_params(&id, "echo started; sleep 600", json!({"timeoutMs": 900_000}));
    let call = w.send("environmentExecute", p).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let deleted_at = Instant::now();
    cluster.delete_pod(&t.namespace, &pod, None, 0, Duration::from_secs(120)).await.unwrap();
    let (_, resp) = w.answer(&call).await;
    let took = deleted_at.elapsed();
    let message = resp["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(resp.get("error").is_some(), "an error, not a result: {resp}");
    assert!(message.contains("Pod"), "the error names the Pod's fate: {message}");
    assert!(took < LIVENESS, "answered {took:?} after the delete");
    eprintln!("answered {took:?} after the delete: {message}");
    w.destroy(&id).await;
    assert!(objects_of(&cluster, &t.namespace, Some("company-pod-deleted")).await.is_empty());
    w.shutdown().await;
}

/// A command past its timeout is killed inside the Pod (its process group is gone), and the
/// lease keeps working.
#[tokio::test(flavor = "multi_thread")]
async fn a_timeout_ends_the_command_in_the_pod() {
    let Some(t) = target() else { return };
    let cluster = t.cluster().await;
    let mut w = Wire::start(&t, "company-timeout").await;
    let id = w.acquire().await;
    let (_, r) = w.sh(&id, "sleep 333 & sleep 334; echo never", json!({"timeoutMs": 2000})).await;
    assert_eq!(r["timedOut"], json!(true), "{r}");
    let (_, r) = w.sh(&id, "ps -o args | grep -c '^sleep 33[34]' || true", json!({})).await;
    assert_eq!(r["stdout"].as_str().unwrap().trim(), "0", "no sleep survives: {r}");
    let (_, r) = w.sh(&id, "head -c 5; echo", json!({"stdin": "hello world"})).await;
    assert_eq!((r["exitCode"].clone(), r["stdout"].clone()), (json!(0), json!("hello\n")), "{r}");
    w.destroy(&id).await;
    assert!(objects_of(&cluster, &t.namespace, Some("company-timeout")).await.is_empty());
    w.shutdown().await;
}

/// A Pod that can never start (its image is absent and may not be pulled) fails the
/// acquisition with the creation-cleanup envelope, and the Pod is deleted.
#[tokio::test(flavor = "multi_thread")]
async fn a_pod_that_cannot_start_answers_the_cleanup_envelope_and_leaves_nothing() {
    let Some(t) = target() else { return };
    let cluster = t.cluster().await;
    let mut w = Wire::start(&t, "company-no-image").await;
    w.extra_config = json!({"image": "localhost/paperclip-absent:1", "imagePullPolicy": "Never"});
    let mut p = w.params(json!({"runId": "run-1"}));
    p["creationOperation"] = json!({"version": 1, "id": "no-image-attempt-1"});
    let (_, resp) = w.call("environmentAcquireLease", p).await;
    let error = &resp["error"];
    assert!(error.is_object(), "an error: {resp}");
    let text = error.to_string();
    assert!(text.contains("ErrImageNeverPull"), "names why: {text}");
    assert!(text.contains("paperclip-create-no-image-attempt-1"), "the cleanup envelope: {text}");
    assert!(objects_of(&cluster, &t.namespace, Some("company-no-image")).await.is_empty());
    w.shutdown().await;
}

/// The Job backend: the lease says `backend: "job"` (the host narrows native sync off),
/// commands run in the Job's Pod, and destroy deletes the Job and its Pod.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_lease_runs_commands_and_destroy_deletes_the_job_and_its_pod() {
    let Some(t) = target() else { return };
    let cluster = t.cluster().await;
    let mut w = Wire::start(&t, "company-job").await;
    w.extra_config = json!({"backend": "job"});
    let lease = w.acquire_with(json!({})).await;
    assert_eq!(lease["metadata"]["backend"], json!("job"), "{lease}");
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("job-"), "{id}");
    let (_, r) = w.sh(&id, "echo from-job; id -u", json!({})).await;
    assert_eq!(r["stdout"], json!("from-job\n1000\n"), "{r}");
    assert_eq!(
        objects_of(&cluster, &t.namespace, Some("company-job")).await.len(),
        2,
        "a Job and its Pod"
    );
    w.destroy(&id).await;
    assert!(objects_of(&cluster, &t.namespace, Some("company-job")).await.is_empty());
    w.shutdown().await;
}

/// 64 MiB of `\x01` and 300,000 `€` in 4,093-byte writes through the exec stream: every line
/// within the host's line limit, the cut output flagged, no U+FFFD where nothing was cut,
/// `health` answered after.
#[tokio::test(flavor = "multi_thread")]
async fn output_floods_fit_the_hosts_line_limit() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-flood").await;
    let id = w.acquire().await;
    let base = w.params(json!({"lease": {"providerLeaseId": &id}, "command": "sh"}));
    let params = |script: &str| {
        let mut p = base.clone();
        p["args"] = json!(["-c", script]);
        p
    };
    paperclip_sandbox_sdk::testing::flood::assert_output_floods_fit(&mut w.worker, params).await;
    w.destroy(&id).await;
    w.shutdown().await;
}

/// A command whose name contains `=` runs as a command in the Pod, with its environment (the
/// exec wrapper's `env` once read it as one more assignment and printed the environment).
#[tokio::test(flavor = "multi_thread")]
async fn a_command_named_with_an_equals_sign_runs() {
    let Some(t) = target() else { return };
    let mut w = Wire::start(&t, "company-equals").await;
    let id = w.acquire().await;
    let script = "printf '#!/bin/sh\\necho ran $GREETING $1\\n' > say=hi && chmod +x say=hi";
    let (_, made) = w.sh(&id, script, json!({})).await;
    assert_eq!(made["exitCode"], json!(0), "{made}");
    let p = w.params(json!({
        "lease": {"providerLeaseId": &id}, "command": "./say=hi", "args": ["a=b"],
        "env": {"GREETING": "x=y"}
    }));
    let ran = w.ok("environmentExecute", p).await;
    assert_eq!((&ran["exitCode"], &ran["stdout"]), (&json!(0), &json!("ran x=y a=b\n")), "{ran}");
    w.destroy(&id).await;
    w.shutdown().await;
}
