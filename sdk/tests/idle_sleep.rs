//! Idle sleep through the SDK's runtime: what is answered without the hook, the seal over
//! requests, notifications and worker→host calls, the hook's cancellation when the hold ends,
//! a worker→host call that timed out but is not answered yet, and environmentTask's checks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use paperclip_sandbox_protocol::jsonrpc::Response;
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::testing::TestClient;
use paperclip_sandbox_sdk::Worker;
use serde_json::json;

fn hold(owner: &str) -> serde_json::Value {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    json!({"ownerId": owner, "expiresAt": now + 60_000})
}

struct NoHook;

#[provider]
impl SandboxProvider for NoHook {
    type Config = JsonObject;
    async fn probe(&self, _: ProbeParams, _: Context) -> HookResult<ProbeResult> {
        Ok(ProbeResult::new(true))
    }
}

#[derive(Default)]
struct Drains {
    events: Arc<AtomicUsize>,
    last_cx: Arc<Mutex<Option<Context>>>,
    tasks: Arc<AtomicUsize>,
}

#[provider]
impl SandboxProvider for Drains {
    type Config = JsonObject;
    async fn idle_drain(
        &self,
        _: PrepareIdleSleepParams,
        cx: Context,
    ) -> HookResult<BackgroundWork> {
        *self.last_cx.lock().unwrap() = Some(cx);
        Ok(BackgroundWork::None)
    }

    async fn on_event(&self, _: Value, _: Context) {
        self.events.fetch_add(1, Ordering::SeqCst);
    }

    async fn probe(&self, _: ProbeParams, cx: Context) -> HookResult<ProbeResult> {
        // A worker→host call whose answer the test controls.
        let config = cx.config_get().await.map_err(ProviderError::from)?;
        Ok(ProbeResult::new(config.contains_key("ok")))
    }

    async fn environment_task(
        &self,
        params: EnvironmentTaskParams,
        _: Context,
    ) -> HookResult<TaskResult> {
        // Answers `accepted` whatever the operation: wrong for status and connection.
        self.tasks.fetch_add(1, Ordering::SeqCst);
        Ok(TaskResult::accepted(params.task_id))
    }
}

fn advertised(init: &Value) -> Vec<String> {
    serde_json::from_value(init["supportedMethods"].clone()).unwrap()
}

#[tokio::test]
async fn without_the_hook_prepare_is_answered_present_and_nothing_is_sealed() {
    let client = TestClient::new(NoHook);
    // Before initialize: present.
    let early = client.call_raw("prepareIdleSleep", hold("o")).await.unwrap();
    assert_eq!(early["backgroundWork"], "present");
    let init = client.call_raw("initialize", json!({})).await.unwrap();
    assert!(!advertised(&init).iter().any(|m| m.contains("IdleSleep")), "{init}");
    let answer = client.call_raw("prepareIdleSleep", hold("o")).await.unwrap();
    assert_eq!(answer["ownerId"], "o");
    assert_eq!(answer["backgroundWork"], "present");
    assert_eq!(client.call_raw("health", json!({})).await.unwrap(), json!({"status": "ok"}));
    // A malformed request is answered `unknown`, its params echoed.
    let bad = client.call_raw("prepareIdleSleep", json!({"ownerId": ""})).await.unwrap();
    assert_eq!(bad, json!({"ownerId": "", "backgroundWork": "unknown"}));
    assert_eq!(client.call_raw("releaseIdleSleep", json!({})).await.unwrap(), Value::Null);
}

#[tokio::test]
async fn the_seal_covers_requests_notifications_and_host_calls_until_the_owner_releases() {
    let drains = Drains::default();
    let (events, last_cx) = (drains.events.clone(), drains.last_cx.clone());
    let client = TestClient::new(drains);
    let init = client.call_raw("initialize", json!({})).await.unwrap();
    let methods = advertised(&init);
    assert!(
        methods.contains(&"prepareIdleSleep".into())
            && methods.contains(&"releaseIdleSleep".into())
    );

    let request = hold("owner");
    let sealed = client.call_raw("prepareIdleSleep", request.clone()).await.unwrap();
    assert_eq!(sealed["backgroundWork"], "none");
    assert_eq!(
        (&sealed["ownerId"], &sealed["expiresAt"]),
        (&request["ownerId"], &request["expiresAt"])
    );
    // The same request again is answered from the hold; another one is unknown.
    assert_eq!(
        client.call_raw("prepareIdleSleep", request.clone()).await.unwrap()["backgroundWork"],
        "none"
    );
    assert_eq!(
        client.call_raw("prepareIdleSleep", hold("other")).await.unwrap()["backgroundWork"],
        "unknown"
    );

    for method in ["health", "environmentProbe", "environmentFrobnicate", "environmentSyncIn"] {
        let refused = client.call_raw(method, json!({})).await.unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (-32002, "Plugin is held for idle sleep"),
            "{method}"
        );
    }
    // A notification is dropped while sealed.
    client.notify("onEvent", json!({"event": {}})).await.unwrap();
    // A stale release (as a notification, then as a request) keeps the seal.
    client.notify("releaseIdleSleep", json!({"ownerId": "stale"})).await.unwrap();
    assert_eq!(
        client.call_raw("releaseIdleSleep", json!({"ownerId": "stale"})).await.unwrap(),
        Value::Null
    );
    assert_eq!(client.call_raw("health", json!({})).await.unwrap_err().code, -32002);
    let cx = last_cx.lock().unwrap().clone().expect("the hook ran");
    assert!(!cx.is_cancelled(), "the hold is on");
    // The owner's release as a notification opens the worker and ends the hook's context.
    client.notify("releaseIdleSleep", json!({"ownerId": "owner"})).await.unwrap();
    tokio::time::timeout(Duration::from_secs(300), cx.cancellation().cancelled()).await.unwrap();
    assert_eq!(client.call_raw("health", json!({})).await.unwrap(), json!({"status": "ok"}));
    client.notify("onEvent", json!({"event": {}})).await.unwrap();
    assert_eq!(client.call_raw("health", json!({})).await.unwrap(), json!({"status": "ok"}));
    assert_eq!(events.load(Ordering::SeqCst), 1, "only the event after the release was handled");
}

#[tokio::test]
async fn a_timed_out_host_call_is_background_work_until_the_host_answers() {
    let worker = Worker::new(Drains::default()).host_call_timeout(Duration::from_millis(100));
    let client = Arc::new(TestClient::start(worker));
    client.call_raw("initialize", json!({})).await.unwrap();
    // The probe calls config.get; the host does not answer in time.
    let probe = {
        let c = client.clone();
        tokio::spawn(async move {
            c.call_raw(
                "environmentProbe",
                json!({"driverKey": "d", "companyId": "c", "environmentId": "e"}),
            )
            .await
        })
    };
    let asked = client.next_host_request().await.expect("config.get");
    assert_eq!(asked.method, "config.get");
    let timed_out = probe.await.unwrap().unwrap_err();
    assert_eq!(timed_out.code, -32003, "{timed_out:?}");
    // The host may still be working on it: no sleep.
    assert_eq!(
        client.call_raw("prepareIdleSleep", hold("o1")).await.unwrap()["backgroundWork"],
        "present"
    );
    // Its late answer settles it.
    client.respond(Response::success(asked.id, json!({}))).await.unwrap();
    // Polled until it does, under a 5-minute hang guard (no fixed count: the suite must hold on
    // a loaded machine).
    let settled = std::time::Instant::now();
    for i in 0.. {
        let verdict = client.call_raw("prepareIdleSleep", hold(&format!("o{i}"))).await.unwrap()
            ["backgroundWork"]
            .clone();
        if verdict == "none" {
            break;
        }
        assert!(settled.elapsed() < Duration::from_secs(300), "never settled: {verdict}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn environment_task_operations_and_results_are_checked() {
    let drains = Drains::default();
    let tasks = drains.tasks.clone();
    let client = TestClient::new(drains);
    client.call_raw("initialize", json!({})).await.unwrap();
    let params = |operation: Value| {
        json!({"driverKey": "d", "companyId": "c", "environmentId": null, "config": {},
               "lease": {"providerLeaseId": "l"}, "taskId": "t1", "runId": null,
               "agentId": null, "projectIds": [], "operation": operation})
    };
    let ok = client.call_raw("environmentTask", params(json!({"kind": "stop"}))).await.unwrap();
    assert_eq!(ok, json!({"kind": "accepted", "taskId": "t1"}));
    // The hook answers `accepted` to `status`: refused as upstream refuses it.
    let mismatch =
        client.call_raw("environmentTask", params(json!({"kind": "status"}))).await.unwrap_err();
    assert_eq!(
        (mismatch.code, mismatch.message.as_str()),
        (-32002, "Invalid plugin-provided Runner execution response")
    );
    // An operation that is missing, outside the union or breaking a rule never reaches the
    // hook and is a worker error, as upstream answers its zod parse failure (-32002).
    let unknown =
        client.call_raw("environmentTask", params(json!({"kind": "pause"}))).await.unwrap_err();
    assert_eq!(unknown.code, -32002, "{unknown:?}");
    assert!(
        unknown.message.starts_with("Invalid environmentTask operation: operation"),
        "{unknown:?}"
    );
    assert!(!unknown.message.contains("pause"), "the value is not quoted: {unknown:?}");
    let strict = client
        .call_raw("environmentTask", params(json!({"kind": "stop", "force": true})))
        .await
        .unwrap_err();
    assert_eq!(strict.code, -32002, "{strict:?}");
    let mut missing = params(json!({}));
    missing.as_object_mut().unwrap().remove("operation");
    let missing = client.call_raw("environmentTask", missing).await.unwrap_err();
    assert_eq!(missing.code, -32002, "{missing:?}");
    let submit = json!({"kind": "submit", "projectIds": ["not-a-uuid"], "bootstrapTicket": "secret-ticket",
        "runner": {"protocolMin": 1, "protocolMax": 1, "harness": "h", "runnerId": "r", "leaseId": "l",
                   "runId": "r", "sessionId": "s", "turnId": "t", "itemId": "i"}});
    let rule = client.call_raw("environmentTask", params(submit)).await.unwrap_err();
    assert_eq!(rule.code, -32002);
    assert!(
        rule.message.contains("operation.projectIds.0") && !rule.message.contains("secret-ticket"),
        "{rule:?}"
    );
    // Params other than the operation that do not fit their types stay invalid params.
    let mut no_task = params(json!({"kind": "stop"}));
    no_task.as_object_mut().unwrap().remove("taskId");
    let no_task = client.call_raw("environmentTask", no_task).await.unwrap_err();
    assert_eq!(no_task.code, -32602, "{no_task:?}");
    assert_eq!(tasks.load(Ordering::SeqCst), 2, "only the stop and the status reached the hook");
}
