//! The runtime driven in process through `TestClient` (same codec and dispatch as stdio).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::jsonrpc::{Id, Invocation, InvocationScope, Response};
use paperclip_sandbox_sdk::protocol::methods::name;
use paperclip_sandbox_sdk::testing::TestClient;
use paperclip_sandbox_sdk::{ServeEnd, Worker};
use serde_json::{json, Map};
use tokio::sync::Notify;

#[derive(Default)]
struct Demo {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    gate: Notify,
    events: Mutex<Vec<u64>>,
    saw_cancel: AtomicBool,
    acquiring: AtomicUsize,
}

#[provider]
impl SandboxProvider for Demo {
    type Config = JsonObject;

    async fn probe(&self, params: ProbeParams, _cx: Context) -> HookResult<ProbeResult> {
        if params.base.config.get("panic") == Some(&json!(true)) {
            panic!("probe exploded with a secret in the message");
        }
        Ok(ProbeResult::new(true))
    }

    async fn release_lease(
        &self,
        _params: ReleaseLeaseParams,
        _cx: Context,
    ) -> HookResult<ReleaseLeaseResult> {
        Ok(Released::done())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams,
        _cx: Context,
    ) -> HookResult<ValidateConfigResult> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        for _ in 0..(params.config["n"].as_u64().unwrap_or(0) % 7) {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(ValidateConfigResult::valid().with_normalized_config(params.config))
    }

    async fn acquire_lease(
        &self,
        _params: AcquireLeaseParams,
        cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        // Blocks until the test opens the gate, or the worker shuts down.
        self.acquiring.fetch_add(1, Ordering::SeqCst);
        tokio::select! {
            _ = self.gate.notified() => Ok(Lease::new("sbx1")),
            _ = cx.cancellation().cancelled() => {
                self.saw_cancel.store(true, Ordering::SeqCst);
                Err("cancelled".into())
            }
        }
    }

    async fn execute(&self, params: ExecuteParams, cx: Context) -> HookResult<ExecuteResult> {
        cx.execute_log(OutputStream::Stdout, "hello ");
        cx.log(LogLevel::Info, "executing");
        let config = cx.config_get().await?;
        let mut meta = JsonObject::new();
        meta.insert("config".into(), Value::Object(config));
        meta.insert("deadline".into(), json!(cx.deadline().is_some()));
        meta.insert("command".into(), json!(params.command));
        Ok(ExecuteResult::exited(0).with_stdout("hello ").with_metadata(meta))
    }

    async fn on_event(&self, params: Value, _cx: Context) {
        let n = params["n"].as_u64().unwrap_or(0);
        // Uneven work: later events would overtake earlier ones if run concurrently.
        for _ in 0..(50 - n) {
            tokio::task::yield_now().await;
        }
        self.events.lock().unwrap().push(n);
    }
}

struct Empty;

#[provider]
impl SandboxProvider for Empty {
    type Config = JsonObject;
}

fn demo() -> (Arc<Demo>, TestClient) {
    let demo = Arc::new(Demo::default());
    // A shared provider is a provider (`impl SandboxProvider for Arc<P>`).
    (demo.clone(), TestClient::new(demo))
}

/// Base params of an environment call, with `extra` merged in.
fn base(extra: Value) -> Value {
    let mut v = json!({"driverKey": "rust-sbx", "companyId": "company-1",
                       "environmentId": "environment-1", "config": {}});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn acquire_line(id: u64) -> String {
    let params = base(json!({"runId": "run-1"}));
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"environmentAcquireLease","params":{params}}}"#)
}

fn invocation(id: &str, company: &str) -> Invocation {
    Invocation {
        id: id.into(),
        scope: InvocationScope { company_id: company.into(), extra: Map::new() },
        traceparent: None,
        extra: Map::new(),
    }
}

#[tokio::test]
async fn initialize_advertises_exactly_the_written_hooks() {
    let (_, client) = demo();
    let result = client.call_raw(name::INITIALIZE, json!({"manifest": {}, "config": {}})).await;
    assert_eq!(
        result.unwrap(),
        // As the upstream SDK: `health` and `shutdown` are advertised only with their hooks
        // (and answered either way).
        json!({"ok": true, "supportedMethods": [
            "environmentValidateConfig", "environmentProbe",
            "environmentAcquireLease", "environmentReleaseLease", "environmentExecute"
        ]})
    );
    let again = client.call_raw(name::INITIALIZE, json!({})).await.unwrap_err();
    assert_eq!((again.code, again.message.as_str()), (-32002, "Worker already initialized"));

    let empty = TestClient::new(Empty);
    // Missing fields are tolerated; no params at all too.
    let r = empty.send_line(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#).await;
    r.unwrap();
    assert_eq!(
        empty.next_line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true,"supportedMethods":[]}}"#
    );
}

#[tokio::test]
async fn worker_response_vectors_are_answered_byte_for_byte() {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../protocol/tests/vectors/framing-and-timeouts.json");
    let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for case in vectors["cases"].as_array().unwrap() {
        if case["kind"] != "worker-response" {
            continue;
        }
        assert_eq!(case["input"]["workerHooks"], json!([]), "{}", case["id"]);
        let client = TestClient::new(Empty);
        client.send_line(case["input"]["line"].as_str().unwrap()).await.unwrap();
        let line = client.next_line().await.unwrap();
        assert_eq!(line, case["expected"]["responseLine"].as_str().unwrap(), "{}", case["id"]);
        // The worker keeps serving.
        assert_eq!(
            client.call_raw(name::HEALTH, json!({})).await.unwrap(),
            json!({"status": "ok"})
        );
        checked += 1;
    }
    assert!(checked >= 2, "P2 and P3 at least");
}

#[tokio::test]
async fn unknown_vs_unimplemented_and_defaults() {
    let client = TestClient::new(Empty);
    let e = client.call_raw("environmentFrobnicate", json!({})).await.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (-32601, "Unknown method: environmentFrobnicate"));
    let e = client.call_raw(name::ENVIRONMENT_SYNC_OUT, json!({})).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32004, "environmentSyncOut is not implemented by this plugin")
    );
    let e = client.call_raw("runJob", json!({})).await.unwrap_err();
    assert_eq!(e.code, -32004);
    // configChanged without a hook is accepted, as in the published SDK.
    let r = client.call_raw(name::CONFIG_CHANGED, json!({"config": {}, "companyId": "c1"})).await;
    assert_eq!(r, Ok(Value::Null));
}

#[tokio::test]
async fn ids_are_echoed_with_their_json_type_and_void_is_null() {
    let (_, client) = demo();
    for (id, echoed) in [("7", "7"), ("\"7\"", "\"7\""), ("\"host-1\"", "\"host-1\""), ("0", "0")] {
        let params = base(json!({"providerLeaseId": "sbx1"}));
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"environmentReleaseLease","params":{params}}}"#
        );
        client.send_line(&line).await.unwrap();
        assert_eq!(
            client.next_line().await.unwrap(),
            format!(r#"{{"jsonrpc":"2.0","id":{echoed},"result":null}}"#)
        );
    }
}

#[tokio::test]
async fn a_panicking_hook_is_answered_and_the_worker_keeps_serving() {
    let (_, client) = demo();
    let e = client
        .call_raw(name::ENVIRONMENT_PROBE, base(json!({"config": {"panic": true}})))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32603);
    assert_eq!(e.message, "Internal error: the environmentProbe handler panicked");
    assert!(!e.message.contains("secret"));
    assert_eq!(
        client.call_raw(name::ENVIRONMENT_PROBE, base(json!({}))).await,
        Ok(json!({"ok": true}))
    );
    // Params that do not fit the method's type: -32602, hook not called.
    let e = client.call_raw(name::ENVIRONMENT_PROBE, json!({"config": 3})).await.unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(e.message.starts_with("Invalid params: "), "{}", e.message);
}

#[tokio::test]
async fn hundred_concurrent_requests_respect_the_bound() {
    let demo = Arc::new(Demo::default());
    let client = Arc::new(TestClient::start(Worker::new(demo.clone()).max_concurrency(8)));
    let calls: Vec<_> = (0..100u64)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                let params = json!({"driverKey": "rust-sbx", "config": {"n": n}, "unknownKey": 1});
                client.call_raw(name::ENVIRONMENT_VALIDATE_CONFIG, params).await
            })
        })
        .collect();
    let mut answered = Vec::new();
    for (n, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result["normalizedConfig"]["n"], json!(n));
        answered.push(n);
    }
    assert_eq!(answered.len(), 100);
    let max = demo.max_in_flight.load(Ordering::SeqCst);
    assert!(max <= 8, "bound exceeded: {max}");
    assert!(max > 1, "requests were not concurrent");
}

#[tokio::test]
async fn the_reader_never_waits_for_hook_capacity() {
    let demo = Arc::new(Demo::default());
    let client = Arc::new(TestClient::start(Worker::new(demo.clone()).max_concurrency(1)));
    let c = client.clone();
    let blocked = tokio::spawn(async move {
        c.call_raw(name::ENVIRONMENT_ACQUIRE_LEASE, base(json!({"runId": "r"}))).await
    });
    wait_until(|| demo.acquiring.load(Ordering::SeqCst) == 1).await;
    // A second hook waits for the only permit, in its own task.
    let c = client.clone();
    let queued =
        tokio::spawn(async move { c.call_raw(name::ENVIRONMENT_PROBE, base(json!({}))).await });
    // The reader still reads: health is answered and notifications handled meanwhile.
    assert_eq!(client.call_raw(name::HEALTH, json!({})).await, Ok(json!({"status": "ok"})));
    client.notify(name::ON_EVENT, json!({"n": 49})).await.unwrap();
    wait_until(|| !demo.events.lock().unwrap().is_empty()).await;
    assert!(!queued.is_finished());
    demo.gate.notify_one();
    assert_eq!(blocked.await.unwrap(), Ok(json!({"providerLeaseId": "sbx1"})));
    assert_eq!(queued.await.unwrap(), Ok(json!({"ok": true})));
}

#[tokio::test]
async fn notifications_are_handled_in_arrival_order() {
    let (demo, client) = demo();
    for n in 0..50u64 {
        client.notify(name::ON_EVENT, json!({ "n": n })).await.unwrap();
    }
    client.notify("someUnknownNotification", json!({})).await.unwrap();
    // A request after them proves the reader went past all of them.
    client.call_raw(name::HEALTH, json!({})).await.unwrap();
    assert_eq!(client.finish().await.unwrap(), ServeEnd::Eof);
    assert_eq!(*demo.events.lock().unwrap(), (0..50).collect::<Vec<u64>>());
}

#[tokio::test]
async fn worker_to_host_calls_carry_the_invocation_id() {
    let (_, client) = demo();
    let client = Arc::new(client);
    let c = client.clone();
    let exec = tokio::spawn(async move {
        let params = base(json!({"command": "echo", "timeoutMs": 60000,
            "lease": {"providerLeaseId": "sbx1", "metadata": {}, "expiresAt": null}}));
        c.call_in(name::ENVIRONMENT_EXECUTE, params, Some(invocation("inv-1", "company-1"))).await
    });
    let log = client.next_notification().await.unwrap();
    assert_eq!(log.method, name::EXECUTE_LOG);
    assert_eq!(log.params, Some(json!({"stream": "stdout", "chunk": "hello "})));
    assert_eq!(log.invocation_id.as_deref(), Some("inv-1"));
    let note = client.next_notification().await.unwrap();
    assert_eq!(note.method, name::LOG);
    assert_eq!(note.params, Some(json!({"level": "info", "message": "executing"})));
    assert_eq!(note.invocation_id.as_deref(), Some("inv-1"));

    let call = client.next_host_request().await.unwrap();
    assert_eq!(call.method, name::CONFIG_GET);
    assert_eq!(call.id, Id::from(1u64), "worker ids count from 1");
    assert_eq!(call.invocation_id.as_deref(), Some("inv-1"));
    assert_eq!(call.params, Some(json!({"companyId": "company-1"})));
    client.respond(Response::success(call.id, json!({"region": "eu"}))).await.unwrap();

    let result = exec.await.unwrap().unwrap();
    assert_eq!(result["metadata"]["config"], json!({"region": "eu"}));
    assert_eq!(result["metadata"]["deadline"], json!(true));
    assert_eq!(result["exitCode"], json!(0));
    assert_eq!(result["stdout"], json!("hello "));
}

#[tokio::test]
async fn execute_log_outside_execute_is_dropped() {
    struct Chatty;
    #[provider]
    impl SandboxProvider for Chatty {
        type Config = JsonObject;

        async fn probe(&self, _p: ProbeParams, cx: Context) -> HookResult<ProbeResult> {
            cx.execute_log(OutputStream::Stderr, "nope");
            cx.log(LogLevel::Warn, "probe");
            Ok(ProbeResult::new(false))
        }
    }
    let client = TestClient::new(Chatty);
    client.call_raw(name::ENVIRONMENT_PROBE, base(json!({}))).await.unwrap();
    let note = client.next_notification().await.unwrap();
    assert_eq!(note.method, name::LOG, "the execute.log chunk was not sent");
    assert_eq!(note.invocation_id, None);
}

#[tokio::test]
async fn shutdown_answers_null_then_cancels_in_flight_calls() {
    let (demo, client) = demo();
    let client = Arc::new(client);
    client.send_line(&acquire_line(9)).await.unwrap();
    wait_until(|| demo.acquiring.load(Ordering::SeqCst) == 1).await;
    client
        .send_line(r#"{"jsonrpc":"2.0","id":"bye","method":"shutdown","params":{}}"#)
        .await
        .unwrap();
    loop {
        let line = client.next_line().await.unwrap();
        if line.contains("\"bye\"") {
            assert_eq!(line, r#"{"jsonrpc":"2.0","id":"bye","result":null}"#);
            break;
        }
    }
    wait_until(|| demo.saw_cancel.load(Ordering::SeqCst)).await;
    let client = Arc::into_inner(client).unwrap();
    assert_eq!(client.join().await.unwrap(), ServeEnd::Shutdown);
}

/// Waits for `cond`, failing after a generous hang guard (5 minutes).
async fn wait_until(cond: impl Fn() -> bool) {
    let wait = async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(300), wait).await.expect("condition within 5 minutes");
}

#[tokio::test]
async fn eof_cancels_in_flight_requests_and_still_answers_them() {
    // Stdin EOF means the host is gone: in-flight hooks are cancelled at once (not waited
    // for), and what they answer within the shutdown grace is still written.
    let (demo, client) = demo();
    let client = Arc::new(client);
    client.send_line(&acquire_line(42)).await.unwrap();
    client.call_raw(name::HEALTH, json!({})).await.unwrap();
    wait_until(|| demo.acquiring.load(Ordering::SeqCst) == 1).await;
    client.close_stdin().await;
    let mut found = None;
    while let Some(line) = client.next_line().await {
        if line.starts_with(r#"{"jsonrpc":"2.0","id":42,"#) {
            found = Some(line);
            break;
        }
    }
    assert_eq!(
        found.as_deref(),
        Some(r#"{"jsonrpc":"2.0","id":42,"error":{"code":-32002,"message":"cancelled"}}"#)
    );
    assert!(demo.saw_cancel.load(Ordering::SeqCst));
    let client = Arc::into_inner(client).unwrap();
    assert_eq!(client.finish().await.unwrap(), ServeEnd::Eof);
}

#[tokio::test]
async fn oversize_and_bad_lines_are_answered_and_serving_goes_on() {
    let client = TestClient::start(Worker::new(Empty).frame_limit(1024));
    client.send_line(&"x".repeat(5000)).await.unwrap();
    assert_eq!(
        client.next_line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: frame exceeds the 1024-byte limit"}}"#
    );
    client.send_raw(b"\r\n\n   \n").await.unwrap();
    client.send_line(r#"{"jsonrpc":"2.0","id":null,"method":"health"}"#).await.unwrap();
    let line = client.next_line().await.unwrap();
    assert!(line.starts_with(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600"#), "{line}");
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"health\"}\r\n").await.unwrap();
    assert_eq!(
        client.next_line().await.unwrap(),
        r#"{"jsonrpc":"2.0","id":3,"result":{"status":"ok"}}"#
    );
}

#[tokio::test]
async fn a_shutdown_followed_at_once_by_eof_is_one_shutdown() {
    // The host closes stdin right after `shutdown`: before reading its answer, or as soon as
    // it has. Either way the loop may see EOF before the shutdown's stop; it is still a
    // shutdown (answered), and the provider's hook runs once, not again as the EOF ending's.
    struct Counted(Arc<AtomicUsize>);
    #[provider]
    impl SandboxProvider for Counted {
        type Config = JsonObject;
        async fn shutdown(&self, _: ShutdownParams, _: Context) -> HookResult<()> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    for read_the_answer_first in [false, true] {
        for _ in 0..20 {
            let shutdowns = Arc::new(AtomicUsize::new(0));
            let client = TestClient::new(Counted(shutdowns.clone()));
            client
                .send_line(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown","params":{}}"#)
                .await
                .unwrap();
            let answer = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
            if read_the_answer_first {
                assert_eq!(client.next_line().await.unwrap(), answer);
                client.close_stdin().await;
            } else {
                client.close_stdin().await;
                assert_eq!(client.next_line().await.unwrap(), answer);
            }
            assert_eq!(client.finish().await.unwrap(), ServeEnd::Shutdown);
            assert_eq!(shutdowns.load(Ordering::SeqCst), 1, "read first: {read_the_answer_first}");
        }
    }
}
