//! Destroy with observation, idempotent destroy, stop-only preservation, reusable leases.

mod common;

use std::time::Duration;

use common::*;
use paperclip_sandbox_sdk::protocol::envelope::read_stop_error;
use paperclip_sandbox_sdk::protocol::jsonrpc::ErrorObject;
use remote_provider::config::RemoteConfig;
use serde_json::{json, Value};

/// A sandbox created by the test's creation operation (labels of run-1).
fn owned_sandbox(id: &str, state: &'static str) -> FakeSandbox {
    let mut s = FakeSandbox::new(id, now(state));
    s.name = CREATION_NAME.to_owned();
    for (k, v) in [
        ("paperclip-create-attempt", OP_ID),
        ("paperclip-provider", "remote"),
        ("paperclip-company-id", "company-1"),
        ("paperclip-environment-id", "env-1"),
        ("paperclip-run-id", "run-1"),
        ("paperclip-reuse-lease", "false"),
    ] {
        s.labels.insert(k.to_owned(), v.to_owned());
    }
    s
}

fn fingerprint(cfg: &Value) -> String {
    serde_json::from_value::<RemoteConfig>(cfg.clone()).unwrap().account_fingerprint()
}

/// The ownership the host would record after a failed acquisition.
fn failed_create_cleanup(cfg: &Value, observed: Option<&str>) -> Value {
    let mut c = json!({
        "providerLeaseId": CREATION_NAME, "companyId": "company-1", "environmentId": "env-1",
        "runId": "run-1", "attemptId": OP_ID, "accountFingerprint": fingerprint(cfg),
        "labels": {"paperclip-create-attempt": OP_ID, "paperclip-provider": "remote",
                   "paperclip-company-id": "company-1", "paperclip-environment-id": "env-1",
                   "paperclip-run-id": "run-1", "paperclip-reuse-lease": "false"},
    });
    if let Some(id) = observed {
        c["observedProviderLeaseId"] = json!(id);
    }
    c
}

fn stop_reason(err: &ErrorObject) -> String {
    let data = err.data.as_ref().unwrap_or_else(|| panic!("no stop envelope: {err:?}"));
    read_stop_error(data).unwrap_or_else(|| panic!("invalid stop envelope {data}")).to_string()
}

#[tokio::test]
async fn destroy_with_observation_reports_the_id_and_deletes_nothing() {
    let fake = FakeApi::start(Faults::default()).await;
    fake.insert(owned_sandbox("sbx-9", "creating"));
    let cfg = config(&fake);
    let client = client();
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": failed_create_cleanup(&cfg, None)}});
    let err = client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta))
        .await
        .expect_err("an observation is an error envelope");
    let c = cleanup(&err);
    assert_eq!(c["observedProviderLeaseId"], "sbx-9");
    assert_eq!(c["providerLeaseId"], CREATION_NAME);
    assert_eq!(c["attemptId"], OP_ID);
    assert_eq!(deletes(&fake), 0);
    assert!(fake.sandbox("sbx-9").is_some());

    // The host persists the observation and destroys again: now the sandbox is deleted.
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": c}});
    let receipt = client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta.clone()))
        .await
        .expect("destroyed");
    assert_eq!(receipt, json!({"providerLeaseId": CREATION_NAME, "state": "destroyed"}));
    assert!(fake.sandbox("sbx-9").is_none());
    // A retry of the same destroy is idempotent.
    let again = client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta))
        .await
        .expect("idempotent");
    assert_eq!(again["state"], "destroyed");
    assert_eq!(deletes(&fake), 1);
}

#[tokio::test]
async fn a_missing_creation_name_is_never_proof_of_removal() {
    let fake = FakeApi::start(Faults::default()).await;
    let cfg = config(&fake);
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": failed_create_cleanup(&cfg, None)}});
    let err = client()
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta))
        .await
        .expect_err("unresolved");
    let c = cleanup(&err);
    assert!(c.get("observedProviderLeaseId").is_none(), "{c}");
    assert!(err.message.contains("not proof of removal"), "{}", err.message);
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn destroy_refuses_foreign_labels_and_other_credentials() {
    let fake = FakeApi::start(Faults::default()).await;
    let mut foreign = owned_sandbox("sbx-5", "started");
    foreign.labels.insert("paperclip-run-id".into(), "run-other".into());
    fake.insert(foreign);
    let cfg = config(&fake);
    let client = client();
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": failed_create_cleanup(&cfg, None)}});
    let err = client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta))
        .await
        .expect_err("labels differ");
    assert!(err.data.is_none(), "{err:?}");
    let mut other = failed_create_cleanup(&cfg, Some("sbx-5"));
    other["accountFingerprint"] = json!("0".repeat(64));
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": other}});
    client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, meta))
        .await
        .expect_err("other credentials");
    // A creation name without its cleanup record is never looked up or deleted.
    client
        .call_raw("environmentDestroyLease", lease_params(&cfg, CREATION_NAME, json!({})))
        .await
        .expect_err("no record");
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn destroy_of_a_real_id_deletes_and_is_idempotent() {
    let fake = FakeApi::start(Faults::default()).await;
    fake.insert(FakeSandbox::new("sbx-1", now("started")));
    let cfg = config(&fake);
    let client = client();
    for _ in 0..2 {
        let receipt = client
            .call_raw("environmentDestroyLease", lease_params(&cfg, "sbx-1", json!({})))
            .await
            .expect("destroyed");
        assert_eq!(receipt, json!({"providerLeaseId": "sbx-1", "state": "destroyed"}));
    }
    assert!(fake.sandbox("sbx-1").is_none());
    let statuses: Vec<_> =
        fake.requests().iter().filter(|r| r.method == "DELETE").map(|r| r.status).collect();
    assert_eq!(statuses, vec![Some(200), Some(404)]);
}

#[tokio::test]
async fn stop_disables_auto_delete_confirms_it_then_stops() {
    let fake = FakeApi::start(Faults::default()).await;
    fake.insert(FakeSandbox::new("sbx-1", now("started")));
    let cfg = config(&fake);
    let receipt = client()
        .call_raw(
            "environmentStopLease",
            lease_params(
                &cfg,
                "sbx-1",
                json!({"cancelActiveWork": true, "resourceDisposition": "stop_and_retain"}),
            ),
        )
        .await
        .expect("stopped");
    assert_eq!(receipt, json!({"providerLeaseId": "sbx-1", "state": "stopped"}));
    let sandbox = fake.sandbox("sbx-1").unwrap();
    assert_eq!(sandbox.state(), "stopped");
    assert_eq!(sandbox.auto_delete, Some(-1));
    let order: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(order, ["PATCH /sandbox/sbx-1/autodelete", "POST /sandbox/sbx-1/stop"]);
}

#[tokio::test]
async fn stop_recovers_a_recoverable_error_once() {
    let fake = FakeApi::start(Faults::default()).await;
    let mut s = FakeSandbox::new("sbx-1", now("error"));
    s.recoverable = true;
    fake.insert(s);
    let cfg = config(&fake);
    let receipt = client()
        .call_raw("environmentStopLease", lease_params(&cfg, "sbx-1", json!({})))
        .await
        .expect("recovered then stopped");
    assert_eq!(receipt["state"], "stopped");
    assert_eq!(fake.count("POST", "/sandbox/sbx-1/recover"), 1);
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn stop_errors_are_typed_and_never_delete() {
    let cases: Vec<(&str, Faults, &'static str, bool, &str)> = vec![
        ("unrecoverable", Faults::default(), "error", false, "unrecoverable"),
        ("build failed", Faults::default(), "build_failed", false, "unrecoverable"),
        (
            "recovery fails",
            Faults {
                recover_timeline: then("starting", Duration::from_millis(20), "error"),
                ..Faults::default()
            },
            "error",
            true,
            "recovery_failed",
        ),
        (
            "recovery stuck",
            Faults { recover_timeline: now("starting"), ..Faults::default() },
            "error",
            true,
            "recovery_incomplete",
        ),
        (
            "policy ignored",
            Faults { autodelete_ignored: true, ..Faults::default() },
            "started",
            false,
            "policy_unconfirmed",
        ),
        (
            "policy unavailable",
            Faults { autodelete_status: 503, ..Faults::default() },
            "started",
            false,
            "policy_unconfirmed",
        ),
        ("destroying", Faults::default(), "destroying", false, "busy"),
    ];
    for (what, faults, state, recoverable, reason) in cases {
        let fake = FakeApi::start(faults).await;
        let mut s = FakeSandbox::new("sbx-1", now(state));
        s.recoverable = recoverable;
        fake.insert(s);
        let err = client()
            .call_raw("environmentStopLease", lease_params(&config(&fake), "sbx-1", json!({})))
            .await
            .expect_err(what);
        assert_eq!(stop_reason(&err), reason, "{what}: {err:?}");
        assert_eq!(deletes(&fake), 0, "{what}");
        assert_eq!(fake.count("POST", "/sandbox/sbx-1/stop"), 0, "{what}: no stop after a failure");
        assert!(fake.sandbox("sbx-1").is_some(), "{what}");
    }
}

#[tokio::test]
async fn stop_of_a_missing_sandbox_is_destroyed_without_deleting() {
    let fake = FakeApi::start(Faults::default()).await;
    let receipt = client()
        .call_raw("environmentStopLease", lease_params(&config(&fake), "sbx-404", json!({})))
        .await
        .expect("receipt");
    assert_eq!(receipt, json!({"providerLeaseId": "sbx-404", "state": "destroyed"}));
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn reusable_leases_stop_on_release_and_start_on_resume() {
    let fake = FakeApi::start(Faults::default()).await;
    let cfg = config(&fake);
    let client = client();
    let mut params = acquire_params(&cfg);
    params["leasePolicy"] = json!("reuse_by_environment");
    let lease = client.call_raw("environmentAcquireLease", params).await.expect("lease");
    let id = lease["providerLeaseId"].as_str().unwrap().to_owned();

    let release = lease_params(&cfg, &id, json!({"leaseMetadata": lease["metadata"]}));
    let receipt = client.call_raw("environmentReleaseLease", release).await.expect("released");
    assert_eq!(receipt, json!({"providerLeaseId": id, "state": "stopped"}));
    assert_eq!(fake.sandbox(&id).unwrap().state(), "stopped");

    let resume = lease_params(&cfg, &id, json!({"leaseMetadata": lease["metadata"]}));
    let resumed = client.call_raw("environmentResumeLease", resume).await.expect("resumed");
    assert_eq!(resumed["providerLeaseId"], id);
    assert_eq!(fake.sandbox(&id).unwrap().state(), "started");
    assert_eq!(fake.count("POST", &format!("/sandbox/{id}/start")), 1);
    assert_eq!(deletes(&fake), 0);

    // A missing sandbox is not resumable: {providerLeaseId: null, metadata: {expired: true}}.
    let gone = client
        .call_raw("environmentResumeLease", lease_params(&cfg, "sbx-gone", json!({})))
        .await
        .expect("not resumable");
    assert_eq!(gone["providerLeaseId"], Value::Null);
    assert_eq!(gone["metadata"]["expired"], true);
}

#[tokio::test]
async fn release_honours_the_resource_disposition() {
    let fake = FakeApi::start(Faults::default()).await;
    fake.insert(FakeSandbox::new("sbx-1", now("started")));
    fake.insert(FakeSandbox::new("sbx-2", now("started")));
    let cfg = config(&fake);
    let client = client();
    let keep = lease_params(&cfg, "sbx-1", json!({"resourceDisposition": "keep_running"}));
    assert_eq!(client.call_raw("environmentReleaseLease", keep).await.unwrap(), Value::Null);
    assert_eq!(fake.sandbox("sbx-1").unwrap().state(), "started");
    let retain = lease_params(&cfg, "sbx-1", json!({"resourceDisposition": "stop_and_retain"}));
    let receipt = client.call_raw("environmentReleaseLease", retain).await.unwrap();
    assert_eq!(receipt["state"], "stopped");
    assert_eq!(fake.sandbox("sbx-1").unwrap().auto_delete, Some(-1), "preserved");
    let destroy = lease_params(
        &cfg,
        "sbx-2",
        json!({"resourceDisposition": "destroy", "leaseMetadata": {"reusable": true}}),
    );
    let receipt = client.call_raw("environmentReleaseLease", destroy).await.unwrap();
    assert_eq!(receipt["state"], "destroyed");
    assert!(fake.sandbox("sbx-2").is_none());
}

#[tokio::test]
async fn an_ephemeral_release_destroys() {
    let fake = FakeApi::start(Faults::default()).await;
    let cfg = config(&fake);
    let client = client();
    let lease =
        client.call_raw("environmentAcquireLease", acquire_params(&cfg)).await.expect("lease");
    let release = lease_params(&cfg, "sbx-1", json!({"leaseMetadata": lease["metadata"]}));
    let receipt = client.call_raw("environmentReleaseLease", release).await.expect("released");
    assert_eq!(receipt["state"], "destroyed");
    assert!(fake.sandbox("sbx-1").is_none());
}

#[tokio::test]
async fn execute_runs_through_the_exec_endpoint() {
    let fake = FakeApi::start(Faults::default()).await;
    fake.insert(FakeSandbox::new("sbx-1", now("started")));
    let cfg = config(&fake);
    let mut params = base(&cfg);
    params["lease"] = json!({"providerLeaseId": "sbx-1", "metadata": {}, "expiresAt": null});
    params["command"] = json!("echo");
    params["args"] = json!(["hello", "world"]);
    params["timeoutMs"] = json!(5000);
    let client = client();
    let out = client.call_raw("environmentExecute", params.clone()).await.expect("ran");
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdout"], "hello world\n");
    let log = client.next_notification().await.expect("execute.log");
    assert_eq!(log.method, "execute.log");
    assert_eq!(log.params.unwrap()["chunk"], "hello world\n");
    let exec = fake.requests().into_iter().find(|r| r.path == "/sandbox/sbx-1/exec").unwrap();
    let body: Value = serde_json::from_str(&exec.body).unwrap();
    assert_eq!(body["args"], json!(["hello", "world"]));
    assert_eq!(body["timeoutMs"], 5000);
    params["command"] = json!("sh");
    params["args"] = json!(["-c", "echo failed >&2; exit 1"]);
    let out = client.call_raw("environmentExecute", params.clone()).await.expect("ran");
    assert_eq!((out["exitCode"].clone(), out["stderr"].clone()), (json!(1), json!("failed\n")));
    params["args"] = json!(["-c", "sleep 5"]);
    params["timeoutMs"] = json!(200);
    let out = client.call_raw("environmentExecute", params).await.expect("ran");
    assert_eq!((out["timedOut"].clone(), out["exitCode"].clone()), (json!(true), Value::Null));
}

#[tokio::test]
async fn validate_config_and_probe() {
    let fake = FakeApi::start(Faults::default()).await;
    let client = client();
    let ok = client
        .call_raw(
            "environmentValidateConfig",
            json!({"driverKey": "remote", "config": config(&fake)}),
        )
        .await
        .unwrap();
    assert_eq!(ok["ok"], true);
    // A config that does not fit the typed `RemoteConfig`: the first problem, by its path,
    // never the value (the SDK answers before the hook runs); then the rule across keys.
    let key = json!({"apiKey": "sk-secret"});
    let with = |extra: Value| {
        let mut config = key.clone();
        config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        config
    };
    let cases = [
        (json!({"baseUrl": "http://h"}), "config: missing field `apiKey`"),
        (with(json!({})), "config: missing field `baseUrl`"),
        (
            with(json!({"baseUrl": "nope-secret"})),
            "config.baseUrl: expected an https:// or http:// URL",
        ),
        (
            with(json!({"baseUrl": "https://sk-secret@h"})),
            "config.baseUrl: expected an https:// or http:// URL with a host and no credentials",
        ),
        (
            with(json!({"baseUrl": "https://h", "caFile": " "})),
            "config.caFile: expected the path of a PEM file",
        ),
        (json!({"apiKey": " ", "baseUrl": "http://h"}), "config.apiKey: expected a non-blank key"),
        (json!({"apiKey": 5, "baseUrl": "http://h"}), "config.apiKey: expected a string"),
        (
            with(json!({"baseUrl": "http://h", "pollIntervalMs": 0})),
            "config.pollIntervalMs: expected a positive whole number",
        ),
        (
            with(json!({"baseUrl": "http://h", "ttlMinutes": 1.5})),
            "config.ttlMinutes: expected a nonzero u64",
        ),
        (
            with(json!({"baseUrl": "http://h", "snapshot": ""})),
            "config.snapshot: expected a non-empty string",
        ),
        (
            with(json!({"baseUrl": "http://h", "acquireCapMs": 86_400_001})),
            "config.acquireCapMs: expected at most 86400000 (24 hours)",
        ),
        (
            with(json!({"baseUrl": "http://h", "acquireCapMs": 5, "createLookupDelayMs": 5})),
            "config.createLookupDelayMs: expected less than acquireCapMs",
        ),
    ];
    for (config, expected) in cases {
        let bad = client
            .call_raw("environmentValidateConfig", json!({"driverKey": "remote", "config": config}))
            .await
            .unwrap();
        assert_eq!(bad, json!({"ok": false, "errors": [expected]}), "{config}");
    }
    let probe = client.call_raw("environmentProbe", base(&config(&fake))).await.unwrap();
    assert_eq!(probe["ok"], true, "{probe}");
    let mut wrong = config(&fake);
    wrong["apiKey"] = json!("sk-wrong");
    let probe = client.call_raw("environmentProbe", base(&wrong)).await.unwrap();
    assert_eq!(probe["ok"], false);
    assert!(probe["diagnostics"][0]["message"].as_str().unwrap().contains("401"), "{probe}");
}
