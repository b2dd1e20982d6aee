//! The params types that carry the environment config print it as `[redacted]` in `Debug`:
//! the config holds resolved secrets, and a `#[tracing::instrument]`ed hook or a `{:?}` in a
//! log line would otherwise print them.

use paperclip_sandbox_protocol::methods::handshake::{ConfigChangedParams, InitializeParams};
use paperclip_sandbox_protocol::methods::lease::{
    AcquireLeaseParams, EnvironmentBaseParams, ValidateConfigParams,
};
use paperclip_sandbox_protocol::methods::task::EnvironmentTaskParams;
use serde::de::DeserializeOwned;
use serde_json::json;

const SENTINEL: &str = "pcsecret-debug-7d1f";

fn debug_of<T: DeserializeOwned + std::fmt::Debug>(params: serde_json::Value) -> String {
    let value: T = serde_json::from_value(params).expect("valid params");
    format!("{value:?} {value:#?}")
}

#[test]
fn debug_never_prints_the_config() {
    let config = json!({"apiKey": SENTINEL, "region": "eu-1"});
    let base = json!({"driverKey": "d", "companyId": "c", "environmentId": "e", "config": config});
    let mut acquire = base.clone();
    acquire["runId"] = json!("r");
    let task = json!({
        "driverKey": "d", "companyId": "c", "config": config, "taskId": "t",
        "lease": {"providerLeaseId": "l"}, "operation": {"kind": "status"},
    });
    let printed = [
        debug_of::<EnvironmentBaseParams>(base),
        debug_of::<AcquireLeaseParams>(acquire),
        debug_of::<ValidateConfigParams>(json!({"driverKey": "d", "config": config})),
        debug_of::<ConfigChangedParams>(json!({"config": config})),
        debug_of::<InitializeParams>(json!({"manifest": {}, "config": config})),
        debug_of::<EnvironmentTaskParams>(task),
    ];
    for text in printed {
        assert!(!text.contains(SENTINEL), "a secret in Debug output: {text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
