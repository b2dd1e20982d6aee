//! The API key never leaves the Authorization header: not in errors, envelopes, metadata,
//! log lines (all `tracing` output captured at TRACE) or `Debug` output.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::*;
use remote_provider::api::ApiClient;
use remote_provider::config::RemoteConfig;
use remote_provider::RemoteProvider;
use serde_json::json;

/// Every byte any `tracing` event of this test binary wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            captured
        })
        .clone()
}

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(API_KEY), "the API key leaked into {what}: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_never_leaks() {
    let logs = capture();
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut record =
        |what: &str, v: &dyn std::fmt::Debug| outputs.push((what.to_owned(), format!("{v:?}")));

    // Acquisition ending at the lookup (envelope + diagnostic).
    let stuck = FakeApi::start(Faults {
        create_delay: Duration::from_secs(30),
        create_timeline: now("creating"),
        ..Faults::default()
    })
    .await;
    let client = client();
    let err = client
        .call_raw("environmentAcquireLease", acquire_params(&config(&stuck)))
        .await
        .unwrap_err();
    assert!(err.data.is_some());
    record("stuck-create error", &err);
    record("stuck-create error JSON", &serde_json::to_string(&err).unwrap());

    // A failed create with compensation, a successful one, its lease metadata.
    let failing = FakeApi::start(Faults { create_status: 500, ..Faults::default() }).await;
    let err = client
        .call_raw("environmentAcquireLease", acquire_params(&config(&failing)))
        .await
        .unwrap_err();
    record("failed-create error", &err);
    let fine = FakeApi::start(Faults::default()).await;
    let cfg = config(&fine);
    let lease = client.call_raw("environmentAcquireLease", acquire_params(&cfg)).await.unwrap();
    record("lease", &lease.to_string());

    // Destroy with observation, stop errors, execute, probe, validate.
    let meta = json!({"leaseMetadata": {"failedCreateCleanup": common::cleanup(&client
        .call_raw("environmentAcquireLease", acquire_params(&config(&stuck))).await.unwrap_err())}});
    let observed = client
        .call_raw("environmentDestroyLease", lease_params(&config(&stuck), CREATION_NAME, meta))
        .await;
    record("destroy observation", &observed);
    let policy = FakeApi::start(Faults { autodelete_status: 503, ..Faults::default() }).await;
    policy.insert(FakeSandbox::new("sbx-1", now("started")));
    let stop = client
        .call_raw("environmentStopLease", lease_params(&config(&policy), "sbx-1", json!({})))
        .await;
    record("stop error", &stop);
    let mut exec = base(&cfg);
    exec["lease"] = lease.clone();
    exec["command"] = json!("echo");
    exec["args"] = json!(["hi"]);
    record("execute", &client.call_raw("environmentExecute", exec).await);
    record("probe", &client.call_raw("environmentProbe", base(&cfg)).await);
    let mut down = cfg.clone();
    down["baseUrl"] = json!("http://127.0.0.1:9");
    record("probe of a closed port", &client.call_raw("environmentProbe", base(&down)).await);
    let bad =
        json!({"apiKey": 5, "baseUrl": format!("http://{API_KEY}@host"), "ttlMinutes": API_KEY});
    record(
        "validate",
        &client
            .call_raw("environmentValidateConfig", json!({"driverKey": "remote", "config": bad}))
            .await,
    );
    let mut misconfigured = cfg.clone();
    misconfigured["acquireCapMs"] = json!(API_KEY);
    record(
        "misconfigured acquire",
        &client.call_raw("environmentAcquireLease", acquire_params(&misconfigured)).await,
    );

    // Debug of the provider's own types.
    let parsed = serde_json::from_value::<RemoteConfig>(cfg.clone()).unwrap();
    record("RemoteConfig", &parsed);
    record(
        "ApiClient",
        &ApiClient::new(
            reqwest_client(),
            &parsed.base_url,
            parsed.api_key.clone(),
            Duration::from_secs(1),
        ),
    );
    record("RemoteProvider", &RemoteProvider::new());

    for (what, text) in &outputs {
        assert_clean(what, text);
    }
    let log = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("creating sandbox"), "nothing captured: {log}");
    assert!(log.contains("looking the name up"), "{log}");
    assert_clean("the logs", &log);

    // On the wire, the key travels only as the bearer token.
    for fake in [&stuck, &failing, &fine, &policy] {
        let requests = fake.requests();
        assert!(!requests.is_empty());
        for r in requests {
            assert_clean("a request path", &r.path);
            assert_clean("a request body", &r.body);
            for (name, value) in &r.headers {
                if name == "authorization" {
                    assert_eq!(value, &format!("Bearer {API_KEY}"));
                } else {
                    assert_clean("a request header", value);
                }
            }
        }
    }
}

fn reqwest_client() -> reqwest::Client {
    reqwest::Client::new()
}
