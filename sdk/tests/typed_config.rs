//! A provider with a typed config (`#[driver(config = T)]`): the hooks receive the parsed type,
//! and a config that does not fit is answered as the contract says, naming the path and what
//! was expected, never the value.

use std::sync::{Arc, Mutex};

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::EnvironmentProbe;
use paperclip_sandbox_sdk::testing::TestClient;
use serde::Deserialize;
use serde_json::json;

#[derive(JsonSchema, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SizedConfig {
    /// The API token.
    token: Secret,
    /// CPUs per sandbox.
    cpus: u32,
    /// Where.
    #[serde(default)]
    region: Option<Region>,
}

#[derive(JsonSchema, Deserialize, Debug, Clone, Copy, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Region {
    EuWest,
    UsEast,
}

#[derive(PluginManifest, Default)]
#[plugin(id = "acme.sized", display_name = "Sized", description = "Typed config.", author = "Acme")]
#[driver(key = "sized", display_name = "Sized", config = SizedConfig)]
struct Sized {
    seen: Mutex<Vec<u32>>,
}

#[provider]
impl SandboxProvider for Sized {
    async fn validate_config(
        &self,
        params: ValidateConfigParams<SizedConfig>,
        _: Context,
    ) -> HookResult<ValidateConfigResult> {
        self.seen.lock().unwrap().push(params.config.cpus);
        Ok(ValidateConfigResult::valid())
    }

    async fn probe(&self, params: ProbeParams<SizedConfig>, _: Context) -> HookResult<ProbeResult> {
        let config: &SizedConfig = &params.base.config;
        self.seen.lock().unwrap().push(config.cpus);
        Ok(ProbeResult::new(config.region == Some(Region::EuWest)))
    }
}

fn probe(config: serde_json::Value) -> serde_json::Value {
    json!({"driverKey": "sized", "companyId": "c", "environmentId": "e", "config": config})
}

/// A value that must never appear in an answer.
const SENTINEL: &str = "sentinel-7f3a";

#[tokio::test]
async fn the_hooks_receive_the_parsed_config() {
    let provider = Arc::new(Sized::default());
    let client = TestClient::new(provider.clone());
    let ok = client
        .call_raw(
            "environmentProbe",
            probe(json!({"token": SENTINEL, "cpus": 4, "region": "eu-west", "other": 1})),
        )
        .await;
    // `deny_unknown_fields`: the unknown key is named by its path, not its value.
    let error = ok.unwrap_err();
    assert_eq!(error.code, -32602);
    assert_eq!(error.message, "Invalid params: config.other: unknown field");
    let ok = client
        .call_raw(
            "environmentProbe",
            probe(json!({"token": SENTINEL, "cpus": 4, "region": "eu-west"})),
        )
        .await
        .unwrap();
    assert_eq!(ok["ok"], json!(true));
    assert_eq!(*provider.seen.lock().unwrap(), [4]);
}

#[tokio::test]
async fn a_config_that_does_not_fit_names_the_path_never_the_value() {
    let provider = Arc::new(Sized::default());
    let client = TestClient::new(provider.clone());
    let cases = [
        (json!({"token": "t", "cpus": SENTINEL}), "config.cpus: expected u32"),
        (json!({"token": "t", "cpus": -1}), "config.cpus: expected u32"),
        (json!({"cpus": 2}), "config: missing field `token`"),
        (
            json!({"token": "t", "cpus": 2, "region": SENTINEL}),
            "config.region: expected `eu-west` or `us-east`",
        ),
        (json!({"token": [SENTINEL], "cpus": 2}), "config.token: expected a string"),
    ];
    for (config, expected) in cases {
        let error = client.call_raw("environmentProbe", probe(config.clone())).await.unwrap_err();
        assert_eq!(error.code, -32602, "{config}");
        assert_eq!(error.message, format!("Invalid params: {expected}"), "{config}");
        assert!(error.data.is_none());

        let validate = json!({"driverKey": "sized", "config": config});
        let answer = client.call_raw("environmentValidateConfig", validate).await.unwrap();
        assert_eq!(answer, json!({"ok": false, "errors": [expected]}), "{config}");
        assert!(!answer.to_string().contains(SENTINEL));
    }
    // No hook ran for a config that does not fit.
    assert!(provider.seen.lock().unwrap().is_empty());
    // Params that are wrong outside the config are answered as before.
    let error = client.call_raw("environmentProbe", json!({"config": {}})).await.unwrap_err();
    assert_eq!(error.code, -32602);
    assert!(error.message.starts_with("Invalid params: missing field `driverKey`"), "{error:?}");
}

#[tokio::test]
async fn typed_calls_through_the_test_client() {
    let client = TestClient::new(Sized::default());
    let config = json!({"token": "t", "cpus": 1, "region": "us-east"});
    let base = EnvironmentBaseParams::new("sized", "c", "e")
        .with_config(config.as_object().unwrap().clone());
    let result = client.call::<EnvironmentProbe>(&ProbeParams::new(base)).await.unwrap();
    assert!(!result.ok);
}
