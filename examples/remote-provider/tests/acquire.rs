//! Fresh acquisition against the fake API: cap, lookup, adoption, late failures.

mod common;

use std::time::{Duration, Instant};

use common::*;
use paperclip_sandbox_sdk::protocol::envelope::read_acquisition_diagnostic;
use paperclip_sandbox_sdk::protocol::timeouts::{
    classify_acquisition_failure, AcquisitionFailureClass,
};
use serde_json::json;

#[tokio::test]
async fn stuck_create_ends_at_the_lookup_with_a_transient_envelope() {
    // The create hangs past every hang guard.
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_secs(300),
        create_timeline: now("creating"),
        ..Faults::default()
    })
    .await;
    let client = client();
    let started = Instant::now();
    let err = client
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect_err("a stuck create fails");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(LOOKUP_MS), "ended before the lookup: {took:?}");
    // It ended at the lookup, before the create answered (an order of events, not a wall-clock
    // bound: the suite must hold on a loaded machine).
    let create = fake.requests().into_iter().find(|r| r.method == "POST" && r.path == "/sandbox");
    assert_eq!(
        create.expect("the create was sent").status,
        None,
        "ended after the create: {took:?}"
    );

    assert_eq!(err.code, -32002);
    let c = cleanup(&err);
    assert_eq!(c["providerLeaseId"], CREATION_NAME);
    assert_eq!(c["attemptId"], OP_ID);
    assert_eq!(c["companyId"], "company-1");
    assert_eq!(c["environmentId"], "env-1");
    assert_eq!(c["runId"], "run-1");
    assert_eq!(c["labels"]["paperclip-create-attempt"], OP_ID);
    assert_eq!(c["labels"]["paperclip-provider"], "remote");
    assert_eq!(c["accountFingerprint"].as_str().unwrap().len(), 64);
    // The lookup found the sandbox by name (still creating): its id is the observation.
    assert_eq!(c["observedProviderLeaseId"], "sbx-1");

    let data = err.data.as_ref().unwrap();
    let d = read_acquisition_diagnostic(data).expect("a valid diagnostic");
    assert_eq!(data["acquisitionDiagnostic"]["phase"], "create");
    assert_eq!(d.budget_ms(), LOOKUP_MS);
    assert!(d.elapsed_ms() >= d.budget_ms(), "{data}");
    assert!(matches!(
        classify_acquisition_failure(Some(&d)),
        AcquisitionFailureClass::Transient { category: "timeout", .. }
    ));
    assert_eq!(fake.count("GET", "/sandbox/by-name/"), 1, "one lookup by name");
    assert_eq!(deletes(&fake), 0, "a timed-out create is left to the host's cleanup");
}

#[tokio::test]
async fn stuck_create_in_a_snapshot_state_ends_at_the_cap() {
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_secs(30),
        create_timeline: now("building_snapshot"),
        ..Faults::default()
    })
    .await;
    let err = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect_err("the cap ends it");
    let d = read_acquisition_diagnostic(err.data.as_ref().unwrap()).expect("diagnostic");
    assert_eq!(d.budget_ms(), CAP_MS);
    assert!(d.elapsed_ms() >= CAP_MS);
    assert!(matches!(
        classify_acquisition_failure(Some(&d)),
        AcquisitionFailureClass::Transient { .. }
    ));
    assert_eq!(cleanup(&err)["providerLeaseId"], CREATION_NAME);
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn late_start_is_adopted_with_the_real_id() {
    // The create call hangs past the lookup, but the sandbox started before it.
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_secs(30),
        create_timeline: then("creating", Duration::from_millis(100), "started"),
        ..Faults::default()
    })
    .await;
    let lease = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect("adopted");
    assert_eq!(lease["providerLeaseId"], "sbx-1");
    assert_eq!(lease["metadata"]["creationName"], CREATION_NAME);
    assert_eq!(lease["metadata"]["reusable"], false);
    assert_eq!(fake.count("GET", "/sandbox/by-name/"), 1);
    let sandbox = fake.sandbox("sbx-1").expect("kept");
    assert_eq!(sandbox.name, CREATION_NAME);
    assert_eq!(sandbox.labels["paperclip-run-id"], "run-1");
    assert_eq!(sandbox.labels["paperclip-company-id"], "company-1");
    assert_eq!(sandbox.labels["paperclip-environment-id"], "env-1");
    assert_eq!(sandbox.labels["paperclip-reuse-lease"], "false");
}

#[tokio::test]
async fn snapshot_preparation_keeps_waiting_past_the_lookup() {
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_secs(30),
        create_timeline: then(
            "pulling_snapshot",
            Duration::from_millis(LOOKUP_MS + 150),
            "started",
        ),
        ..Faults::default()
    })
    .await;
    let started = Instant::now();
    let lease = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect("waited for the snapshot");
    assert!(started.elapsed() >= Duration::from_millis(LOOKUP_MS + 150));
    assert_eq!(lease["providerLeaseId"], "sbx-1");
}

#[tokio::test]
async fn an_adopted_sandbox_survives_a_late_create_failure() {
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_millis(LOOKUP_MS + 200),
        create_status: 500,
        create_timeline: then("creating", Duration::from_millis(50), "started"),
        ..Faults::default()
    })
    .await;
    let lease = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect("adopted at the lookup");
    assert_eq!(lease["providerLeaseId"], "sbx-1");
    // The create call then fails; nothing may delete the adopted sandbox.
    let create = fake.wait_answered(|r| r.method == "POST" && r.path == "/sandbox").await;
    assert_eq!(create.status, Some(500));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(deletes(&fake), 0, "{:?}", fake.requests());
    assert_eq!(fake.sandbox("sbx-1").expect("still there").state(), "started");
}

#[tokio::test]
async fn a_create_failure_before_adoption_is_compensated_and_reported() {
    let fake = FakeApi::start(Faults {
        create_status: 500,
        create_timeline: now("creating"),
        ..Faults::default()
    })
    .await;
    let err = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect_err("create failed");
    assert!(err.message.contains("cleanup was confirmed"), "{}", err.message);
    let c = cleanup(&err);
    assert_eq!(c["observedProviderLeaseId"], "sbx-1");
    assert_eq!(deletes(&fake), 1);
    assert!(fake.sandbox("sbx-1").is_none());
    // An early failure is not the deadline: the host does not retry it.
    let d = read_acquisition_diagnostic(err.data.as_ref().unwrap()).expect("diagnostic");
    assert!(d.elapsed_ms() < d.budget_ms());
    assert!(matches!(
        classify_acquisition_failure(Some(&d)),
        AcquisitionFailureClass::SetupFailed { .. }
    ));
}

#[tokio::test]
async fn an_error_state_ends_the_attempt_early() {
    let fake =
        FakeApi::start(Faults { create_timeline: now("build_failed"), ..Faults::default() }).await;
    let err = client()
        .call_raw("environmentAcquireLease", acquire_params(&config(&fake)))
        .await
        .expect_err("build failed");
    let d = read_acquisition_diagnostic(err.data.as_ref().unwrap()).expect("diagnostic");
    assert!(d.elapsed_ms() < d.budget_ms());
    assert_eq!(cleanup(&err)["observedProviderLeaseId"], "sbx-1");
    assert_eq!(deletes(&fake), 0);
}

#[tokio::test]
async fn a_normal_create_without_creation_operation_uses_a_generated_name() {
    let fake = FakeApi::start(Faults::default()).await;
    let mut params = acquire_params(&config(&fake));
    params.as_object_mut().unwrap().remove("creationOperation");
    params["leasePolicy"] = json!("reuse_by_environment");
    let lease = client().call_raw("environmentAcquireLease", params).await.expect("created");
    assert_eq!(lease["providerLeaseId"], "sbx-1");
    assert_eq!(lease["metadata"]["reusable"], true);
    let sandbox = fake.sandbox("sbx-1").unwrap();
    let attempt = &sandbox.labels["paperclip-create-attempt"];
    assert_eq!(sandbox.name, format!("paperclip-create-{attempt}"));
    assert_eq!(attempt.len(), 36);
    assert_eq!(sandbox.labels["paperclip-reuse-lease"], "true");
    assert_eq!(fake.count("GET", "/sandbox/by-name/"), 0, "no lookup for a fast create");
}

#[tokio::test]
async fn ttl_minutes_becomes_auto_delete_interval() {
    let fake = FakeApi::start(Faults::default()).await;
    let mut cfg = config(&fake);
    cfg["ttlMinutes"] = json!(45);
    client().call_raw("environmentAcquireLease", acquire_params(&cfg)).await.expect("created");
    let create = fake.requests().into_iter().find(|r| r.method == "POST").unwrap();
    let body: serde_json::Value = serde_json::from_str(&create.body).unwrap();
    assert_eq!(body["autoDeleteInterval"], 45);
    assert_eq!(fake.sandbox("sbx-1").unwrap().auto_delete, Some(45));
}
