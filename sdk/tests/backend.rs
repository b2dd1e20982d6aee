//! Hooks that take only what they use: no `Context` unless needed, the provider's own error
//! type (converted by `IntoProviderError`, told the method), and a per-config backend opened
//! by `connect` — once per config, again after `configChanged`, once for concurrent first
//! calls, its error the call's error.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use paperclip_sandbox_sdk::backend::MAX_BACKENDS;
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::Method;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::testing::TestClient;
use paperclip_sandbox_sdk::Worker;
use serde::Deserialize;
use serde_json::{json, Value};

/// A value that must never appear in an answer.
const SECRET: &str = "token-sentinel-51c2";

#[derive(JsonSchema, Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
struct ApiConfig {
    /// The API endpoint; one starting with `down` is unreachable.
    endpoint: String,
    /// The API token.
    token: Secret,
}

/// The backend: which `connect` opened it.
struct Api {
    serial: usize,
}

#[derive(Debug)]
enum ApiError {
    Unreachable,
    BadCommand,
}

impl IntoProviderError for ApiError {
    fn into_provider_error(self, method: Method) -> ProviderError {
        match self {
            ApiError::Unreachable => ProviderError::worker(format!("{method}: API unreachable")),
            ApiError::BadCommand => ProviderError::invalid_params("unknown command"),
        }
    }
}

#[derive(PluginManifest, Default)]
#[plugin(id = "acme.api", display_name = "Api", description = "A backend.", author = "Acme")]
#[driver(key = "api", display_name = "Api", config = ApiConfig)]
struct ApiProvider {
    opened: AtomicUsize,
}

#[provider]
impl SandboxProvider for ApiProvider {
    type Backend = Api;

    async fn connect(&self, config: &ApiConfig) -> Result<Api, ApiError> {
        // Let concurrent first calls meet here.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        if config.endpoint.starts_with("down") || config.token.expose().is_empty() {
            return Err(ApiError::Unreachable);
        }
        Ok(Api { serial: self.opened.fetch_add(1, Ordering::SeqCst) + 1 })
    }

    async fn probe(&self, _: ProbeParams<ApiConfig>, api: &Api) -> Result<ProbeResult, ApiError> {
        Ok(ProbeResult::new(true).with_summary(format!("backend {}", api.serial)))
    }

    async fn execute(
        &self,
        params: ExecuteParams<ApiConfig>,
        cx: Context,
        api: &Api,
    ) -> Result<ExecuteResult, ApiError> {
        if params.command != "whoami" {
            return Err(ApiError::BadCommand);
        }
        Ok(ExecuteResult::exited(0).with_stdout(format!("{} {}", cx.profile(), api.serial)))
    }

    async fn health(&self, _: HealthParams) -> HookResult<HealthResult> {
        Ok(HealthResult::default())
    }
}

fn probe(endpoint: &str) -> Value {
    let config = json!({"endpoint": endpoint, "token": SECRET});
    json!({"driverKey": "api", "companyId": "c", "environmentId": "e", "config": config})
}

async fn summary(client: &TestClient, endpoint: &str) -> String {
    let answer = client.call_raw("environmentProbe", probe(endpoint)).await.unwrap();
    answer["summary"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn one_backend_per_config_until_the_config_changes() {
    let provider = Arc::new(ApiProvider::default());
    let client = TestClient::new(provider.clone());
    for _ in 0..5 {
        assert_eq!(summary(&client, "https://a").await, "backend 1");
    }
    assert_eq!(provider.opened.load(Ordering::SeqCst), 1);
    // Another config: its own backend; the first one stays.
    assert_eq!(summary(&client, "https://b").await, "backend 2");
    assert_eq!(summary(&client, "https://a").await, "backend 1");
    // The same config with its keys in another order is the same config.
    let reordered = json!({"driverKey": "api", "companyId": "c", "environmentId": "e",
        "config": {"token": SECRET, "endpoint": "https://a"}});
    let answer = client.call_raw("environmentProbe", reordered).await.unwrap();
    assert_eq!(answer["summary"], "backend 1");
    // configChanged drops every backend.
    client.call_raw("configChanged", json!({"config": {}})).await.unwrap();
    assert_eq!(summary(&client, "https://a").await, "backend 3");
    assert_eq!(provider.opened.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_open_one_backend() {
    let provider = Arc::new(ApiProvider::default());
    let client = Arc::new(TestClient::new(provider.clone()));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { summary(&client, "https://c").await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), "backend 1");
    }
    assert_eq!(provider.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_connect_is_the_calls_error_and_is_tried_again() {
    let provider = Arc::new(ApiProvider::default());
    let client = TestClient::new(provider.clone());
    let error = client.call_raw("environmentProbe", probe("down")).await.unwrap_err();
    assert_eq!((error.code, error.message.as_str()), (-32002, "environmentProbe: API unreachable"));
    let text = serde_json::to_string(&error).unwrap();
    assert!(!text.contains(SECRET) && !text.contains("down"), "{text}");
    assert_eq!(provider.opened.load(Ordering::SeqCst), 0);
    // Not cached: a working config afterwards opens, and the failing one fails again.
    assert_eq!(summary(&client, "https://a").await, "backend 1");
    assert!(client.call_raw("environmentProbe", probe("down")).await.is_err());
}

#[tokio::test]
async fn failed_connects_keep_no_backend_slot_and_evict_nothing() {
    let provider = Arc::new(ApiProvider::default());
    let client = TestClient::new(provider.clone());
    assert_eq!(summary(&client, "https://good").await, "backend 1");
    // More failing configs than the worker keeps backends: none of them takes a place.
    for n in 0..=MAX_BACKENDS {
        let error = client.call_raw("environmentProbe", probe(&format!("down-{n}"))).await;
        assert!(error.is_err());
    }
    assert_eq!(summary(&client, "https://good").await, "backend 1");
    assert_eq!(provider.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn past_max_backends_the_least_recently_used_goes() {
    let provider = Arc::new(ApiProvider::default());
    let client = TestClient::new(provider.clone());
    let endpoint = |n: usize| format!("https://{n}");
    // Backends 1..=MAX_BACKENDS, for configs 0..MAX_BACKENDS, opened in that order.
    for n in 0..MAX_BACKENDS {
        assert_eq!(summary(&client, &endpoint(n)).await, format!("backend {}", n + 1));
    }
    // Config 0 is the oldest opened but is used again: config 1 is now the least recently used.
    assert_eq!(summary(&client, &endpoint(0)).await, "backend 1");
    let next = MAX_BACKENDS + 1;
    assert_eq!(summary(&client, &endpoint(MAX_BACKENDS)).await, format!("backend {next}"));
    // Config 0 kept its backend; config 1's was dropped and is opened again.
    assert_eq!(summary(&client, &endpoint(0)).await, "backend 1");
    assert_eq!(provider.opened.load(Ordering::SeqCst), next);
    assert_eq!(summary(&client, &endpoint(1)).await, format!("backend {}", next + 1));
    // The others stayed: config 2 was evicted to make room for config 1 just now, 3 was not.
    assert_eq!(summary(&client, &endpoint(3)).await, "backend 4");
    assert_eq!(provider.opened.load(Ordering::SeqCst), next + 1);
}

#[tokio::test]
async fn hooks_see_the_profile_and_their_errors_convert() {
    let client = TestClient::start(
        Worker::new(ApiProvider::default()).profile(HostProfile::Paperclip2026_09),
    );
    let lease = json!({"providerLeaseId": "l", "metadata": {}});
    let mut params = probe("https://a");
    params["lease"] = lease;
    params["command"] = json!("whoami");
    let answer = client.call_raw("environmentExecute", params.clone()).await.unwrap();
    assert_eq!(answer["stdout"], "paperclip-2026-09 1");
    params["command"] = json!("rm");
    let error = client.call_raw("environmentExecute", params).await.unwrap_err();
    assert_eq!((error.code, error.message.as_str()), (-32602, "Invalid params: unknown command"));
    // A worker built without a profile serves paperclip-2026-11; a hook with no Context works.
    let client = TestClient::new(ApiProvider::default());
    client.call_raw("health", json!({})).await.unwrap();
}
