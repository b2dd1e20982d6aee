//! The `remote-provider` binary over stdio against the fake API, and `--manifest`.

mod common;

use std::time::Duration;

use common::*;
use paperclip_sandbox_sdk::protocol::envelope::read_acquisition_diagnostic;
use paperclip_sandbox_sdk::protocol::manifest::validate;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::WorkerProcess;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_remote-provider");

fn spawn() -> WorkerProcess {
    let mut command = tokio::process::Command::new(BIN);
    command.env("RUST_LOG", "trace");
    WorkerProcess::from_command(command).expect("spawn remote-provider")
}

fn manifest() -> Value {
    let out = std::process::Command::new(BIN).arg("--manifest").output().expect("run");
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("the manifest is JSON")
}

#[test]
fn manifest_flag_prints_a_valid_manifest() {
    let m = manifest();
    let report = validate(&m, HostProfile::Paperclip2026_11);
    assert!(report.valid, "{report:?}");
    let d = &m["environmentDrivers"][0];
    assert_eq!(d["driverKey"], "remote");
    assert_eq!(d["kind"], "sandbox_provider");
    assert_eq!(d["creationOperationVersion"], 1);
    assert_eq!(d["defaultAcquireTimeoutMs"], 300_000);
    assert_eq!(d["sandboxCapabilities"]["reusableLeases"], true);
    assert_eq!(d["configSchema"]["properties"]["apiKey"]["format"], "secret-ref");
    assert_eq!(m["entrypoints"]["worker"], "./dist/worker.cjs");
}

#[test]
fn manifest_flag_takes_a_profile_and_bad_arguments_exit_two() {
    let out = std::process::Command::new(BIN)
        .args(["--manifest", "--profile", "paperclip-2026-09"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let m: Value = serde_json::from_slice(&out.stdout).expect("the manifest is JSON");
    assert!(validate(&m, HostProfile::Paperclip2026_09).valid);
    assert!(m["environmentDrivers"][0].get("creationOperationVersion").is_none(), "{m}");
    for args in [&["--bogus"][..], &["--profile", "nope"], &["--manifest", "--profile"]] {
        let out = std::process::Command::new(BIN).args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_acquire_execute_destroy_over_stdio() {
    let fake = FakeApi::start(Faults::default()).await;
    let cfg = config(&fake);
    let mut w = spawn();
    let init = w
        .call(json!(1), "initialize", json!({"manifest": manifest(), "config": {}}))
        .await
        .expect("initialize");
    assert_eq!(init["result"]["ok"], true, "{init}");
    let methods: Vec<String> =
        serde_json::from_value(init["result"]["supportedMethods"].clone()).unwrap();
    for m in [
        "environmentValidateConfig",
        "environmentProbe",
        "environmentAcquireLease",
        "environmentResumeLease",
        "environmentReleaseLease",
        "environmentDestroyLease",
        "environmentStopLease",
        "environmentExecute",
    ] {
        assert!(methods.iter().any(|x| x == m), "{m} missing from {methods:?}");
    }

    let lease = w.call(json!(2), "environmentAcquireLease", acquire_params(&cfg)).await.unwrap();
    assert_eq!(lease["result"]["providerLeaseId"], "sbx-1", "{lease}");

    let mut exec = base(&cfg);
    exec["lease"] = lease["result"].clone();
    exec["command"] = json!("cat");
    exec["stdin"] = json!("from stdin");
    w.send_line(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "environmentExecute", "params": exec})
            .to_string(),
    )
    .await
    .unwrap();
    let lines = w.read_until_response(&json!(3)).await.unwrap();
    let (response, notes) = lines.split_last().unwrap();
    assert_eq!(response["result"]["stdout"], "from stdin", "{response}");
    assert_eq!(response["result"]["exitCode"], 0);
    assert!(
        notes.iter().any(|n| n["method"] == "execute.log" && n["params"]["chunk"] == "from stdin"),
        "{notes:?}"
    );

    let destroyed = w
        .call(json!(4), "environmentDestroyLease", lease_params(&cfg, "sbx-1", json!({})))
        .await
        .unwrap();
    assert_eq!(destroyed["result"], json!({"providerLeaseId": "sbx-1", "state": "destroyed"}));
    assert!(fake.sandbox("sbx-1").is_none());

    w.close_stdin();
    let status = tokio::time::timeout(Duration::from_secs(300), w.wait()).await.unwrap().unwrap();
    assert!(status.success());
    let stderr = w.stderr();
    assert!(stderr.contains("creating sandbox"), "{stderr}");
    assert!(!stderr.contains(API_KEY), "the key leaked to stderr");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_create_crosses_the_wire_as_an_envelope() {
    let fake = FakeApi::start(Faults {
        create_delay: Duration::from_secs(30),
        create_timeline: now("creating"),
        ..Faults::default()
    })
    .await;
    let mut w = spawn();
    w.call(json!(1), "initialize", json!({"manifest": manifest(), "config": {}})).await.unwrap();
    let answer =
        w.call(json!(2), "environmentAcquireLease", acquire_params(&config(&fake))).await.unwrap();
    let error = &answer["error"];
    assert_eq!(error["code"], -32002, "{answer}");
    assert_eq!(error["data"]["cleanup"]["providerLeaseId"], CREATION_NAME);
    assert_eq!(error["data"]["cleanup"]["attemptId"], OP_ID);
    let d = read_acquisition_diagnostic(&error["data"]).expect("valid diagnostic");
    assert!(d.reached_budget());
    assert!(!answer.to_string().contains(API_KEY));
    w.close_stdin();
    w.wait().await.unwrap();
    assert!(!w.stderr().contains(API_KEY));
}

/// An API that echoes the bearer key in its refusals: the binary, at `RUST_LOG=trace`, never
/// relays the key in probe diagnostics, acquire or destroy errors, or its logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_echoed_by_the_api_are_redacted_everywhere() {
    let fake = FakeApi::start(Faults { echo_credentials: true, ..Faults::default() }).await;
    let wrong = "sk-wrong-0f1e2d3c4b5a69788796a5b4";
    let mut cfg = config(&fake);
    cfg["apiKey"] = json!(wrong);
    let mut w = spawn();
    w.call(json!(1), "initialize", json!({"manifest": manifest(), "config": {}})).await.unwrap();
    let mut answers = Vec::new();
    answers.push(w.call(json!(2), "environmentProbe", base(&cfg)).await.unwrap());
    answers.push(w.call(json!(3), "environmentAcquireLease", acquire_params(&cfg)).await.unwrap());
    answers.push(
        w.call(json!(4), "environmentDestroyLease", lease_params(&cfg, "sbx-9", json!({})))
            .await
            .unwrap(),
    );
    answers.push(
        w.call(json!(5), "environmentStopLease", lease_params(&cfg, "sbx-9", json!({})))
            .await
            .unwrap(),
    );
    // The API did echo it.
    assert!(fake.requests().iter().any(|r| r.status == Some(401)));
    let probe = answers[0].to_string();
    assert!(probe.contains("[REDACTED]") || probe.contains("401"), "{probe}");
    w.close_stdin();
    w.wait().await.unwrap();
    let stderr = w.stderr();
    assert!(stderr.contains("TRACE") || stderr.contains("DEBUG"), "trace logs captured");
    for text in answers.iter().map(Value::to_string).chain([stderr]) {
        assert!(!text.contains(wrong), "the key leaked: {text}");
        assert!(!text.contains("sk-wrong"), "a prefix of the key leaked: {text}");
    }
}

/// An API that accepts every connection and never answers: the execute (timeoutMs 3000) is
/// answered with an error naming the API unreachable before the host's own timer for it
/// (timeoutMs + 30 s) fires, and the worker still serves.
#[tokio::test]
async fn a_stalled_api_is_reported_before_the_hosts_timer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    let cfg = json!({"apiKey": API_KEY, "baseUrl": base_url});
    let mut w = spawn();
    w.call(json!(1), "initialize", json!({"manifest": manifest(), "config": {}})).await.unwrap();
    let mut exec = base(&cfg);
    exec["lease"] = json!({"providerLeaseId": "sbx-stalled"});
    exec["command"] = json!("true");
    exec["timeoutMs"] = json!(3000);
    let line = json!({"jsonrpc": "2.0", "id": 2, "method": "environmentExecute", "params": exec});
    w.send_line(&line.to_string()).await.unwrap();
    // The host arms its timer when it sends the call: E(3000, config) = 33 s.
    let host_timer = tokio::time::sleep(Duration::from_millis(3000 + 30_000));
    let id = json!(2);
    let lines = tokio::select! {
        lines = w.read_until_response(&id) => lines.unwrap(),
        () = host_timer => panic!("the host's timer fired before the worker answered"),
    };
    let resp = lines.last().unwrap();
    let message = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not reachable") && message.contains("deadline"), "{resp}");
    let health = w.call(json!(3), "health", json!({})).await.unwrap();
    assert_eq!(health["result"]["status"], "ok", "{health}");
    w.close_stdin();
    let status = tokio::time::timeout(Duration::from_secs(60), w.wait()).await.unwrap().unwrap();
    assert!(status.success());
}

/// 64 MiB of `\x01` and 300,000 `€` in 4,093-byte writes, run by the fake API: every line
/// within the host's line limit, the cut output flagged, no U+FFFD where nothing was cut,
/// `health` answered after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_floods_fit_the_hosts_line_limit() {
    let fake = FakeApi::start(Faults::default()).await;
    let cfg = config(&fake);
    let mut w = spawn();
    w.call(json!(1), "initialize", json!({"manifest": manifest(), "config": {}})).await.unwrap();
    let lease = w.call(json!(2), "environmentAcquireLease", acquire_params(&cfg)).await.unwrap();
    let mut base = base(&cfg);
    base["lease"] = lease["result"].clone();
    base["command"] = json!("sh");
    let params = |script: &str| {
        let mut p = base.clone();
        p["args"] = json!(["-c", script]);
        p
    };
    paperclip_sandbox_sdk::testing::flood::assert_output_floods_fit(&mut w, params).await;
}
