//! A hook's worker→host calls through the real runtime: `ctx.resolve_secret` sends
//! `secrets.resolve` and `ctx.record_span` sends `span.record`, each with typed params and
//! the serving call's `paperclipInvocationId`, as the upstream SDK's `callHost` sends them;
//! the hook gets the host's answer typed (the secret as a `Secret`, a refusal as the host's
//! error). The secret's value appears nowhere else: not in `Debug`, not in `log`
//! notifications, not in the worker's tracing output, not in the answer.

use std::sync::Arc;
use std::time::Duration;

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::jsonrpc::{ErrorObject, Invocation, Request, Response};
use paperclip_sandbox_sdk::protocol::methods::{LogLevel, SecretsResolveParams, SpanRecordParams};
use paperclip_sandbox_sdk::testing::TestClient;
use serde_json::{json, Value};

const VALUE: &str = "hunter2-the-api-key";

struct Resolver;

#[provider]
impl SandboxProvider for Resolver {
    type Config = JsonObject;

    async fn probe(&self, _: ProbeParams, cx: Context) -> HookResult<ProbeResult> {
        let params = SecretsResolveParams::new("ref-api-key").with_config_path("apiKeyRef");
        let secret = cx.resolve_secret(&params).await.map_err(ProviderError::from)?;
        // What a careless provider might print: both only ever show the redaction.
        tracing::info!(?secret, "resolved the api key");
        cx.log(LogLevel::Info, format!("api key {secret:?} / {secret}"));
        let span = SpanRecordParams::new("probe", 1_000, 2_000).with_attribute("cached", false);
        cx.record_span(&span).await.map_err(ProviderError::from)?;
        Ok(ProbeResult::new(secret.expose() == VALUE)
            .with_summary(format!("key of {} chars", secret.expose().len())))
    }
}

fn invocation(id: &str, traceparent: Option<&str>) -> Invocation {
    let mut v = json!({"id": id, "scope": {"companyId": "c1"}});
    if let Some(t) = traceparent {
        v["traceparent"] = json!(t);
    }
    serde_json::from_value(v).unwrap()
}

fn probe_params() -> Value {
    json!({"driverKey": "d", "companyId": "c1", "environmentId": "e1", "config": {}})
}

async fn next_host_request(client: &TestClient) -> Request {
    tokio::time::timeout(Duration::from_secs(300), client.next_host_request())
        .await
        .expect("a worker→host request in time")
        .expect("the worker is alive")
}

/// Runs a probe inside `inv` in a task of its own (the test answers its host calls).
fn probe(
    client: &Arc<TestClient>,
    inv: Invocation,
) -> tokio::task::JoinHandle<Result<Value, ErrorObject>> {
    let c = client.clone();
    tokio::spawn(async move { c.call_in("environmentProbe", probe_params(), Some(inv)).await })
}

// One thread: the tracing default set below covers the worker's tasks too.
#[tokio::test(flavor = "current_thread")]
async fn secrets_and_spans_go_to_the_host_typed_and_tagged_with_the_invocation() {
    // Every line the worker's tracing writes, at every level, into a file.
    let trace_path =
        std::env::temp_dir().join(format!("pcsdk-host-calls-{}.log", std::process::id()));
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(std::fs::File::create(&trace_path).unwrap())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let client = Arc::new(TestClient::new(Resolver));
    client.call_raw("initialize", json!({})).await.unwrap();

    // Traced call: secrets.resolve, then span.record, both tagged with the invocation id.
    let traced = probe(
        &client,
        invocation("inv-7", Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")),
    );
    let ask = next_host_request(&client).await;
    assert_eq!(ask.method, "secrets.resolve");
    assert_eq!(ask.invocation_id.as_deref(), Some("inv-7"));
    assert_eq!(ask.params, Some(json!({"secretRef": "ref-api-key", "configPath": "apiKeyRef"})));
    let typed: SecretsResolveParams = serde_json::from_value(ask.params.clone().unwrap()).unwrap();
    assert_eq!(typed, SecretsResolveParams::new("ref-api-key").with_config_path("apiKeyRef"));
    client.respond(Response::success(ask.id, json!(VALUE))).await.unwrap();

    let span = next_host_request(&client).await;
    assert_eq!(span.method, "span.record");
    assert_eq!(span.invocation_id.as_deref(), Some("inv-7"));
    assert_eq!(
        span.params,
        Some(json!({"name": "probe", "attributes": {"cached": false},
                    "startTimeMs": 1000, "endTimeMs": 2000}))
    );
    client.respond(Response::success(span.id, Value::Null)).await.unwrap();
    let answer = traced.await.unwrap().unwrap();
    assert_eq!(answer, json!({"ok": true, "summary": format!("key of {} chars", VALUE.len())}));

    // Untraced call: the secret is resolved, but no span is sent (as upstream: a span records
    // only while the host traces the call).
    let untraced = probe(&client, invocation("inv-8", None));
    let ask = next_host_request(&client).await;
    assert_eq!(
        (ask.method.as_str(), ask.invocation_id.as_deref()),
        ("secrets.resolve", Some("inv-8"))
    );
    client.respond(Response::success(ask.id, json!(VALUE))).await.unwrap();
    assert_eq!(untraced.await.unwrap().unwrap()["ok"], true);
    let none = tokio::time::timeout(Duration::from_millis(100), client.next_host_request()).await;
    assert!(none.is_err(), "no span.record without a traceparent: {none:?}");

    // A refusal reaches the hook as the host's error, code and message kept.
    let refused = probe(&client, invocation("inv-9", None));
    let ask = next_host_request(&client).await;
    let denied = ErrorObject::new(-32001, "secrets.read is not granted");
    client.respond(Response::error(Some(ask.id), denied)).await.unwrap();
    let err = refused.await.unwrap().unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (-32001, "secrets.read is not granted"));

    // The value went to the hook only.
    let mut seen = Vec::new();
    while let Ok(Some(note)) =
        tokio::time::timeout(Duration::from_millis(50), client.next_notification()).await
    {
        seen.push(note);
    }
    let logs: Vec<&Value> =
        seen.iter().filter(|n| n.method == "log").filter_map(|n| n.params.as_ref()).collect();
    assert_eq!(logs.len(), 2, "{seen:?}");
    for log in logs {
        assert_eq!(log["message"], "api key [redacted] / [redacted]");
    }
    let traces = std::fs::read_to_string(&trace_path).unwrap();
    let _ = std::fs::remove_file(&trace_path);
    assert!(traces.contains("resolved the api key"), "the hook's trace is captured: {traces}");
    assert!(!traces.contains(VALUE), "the secret is in the worker's tracing output: {traces}");
    assert!(!format!("{seen:?}").contains(VALUE));
}
