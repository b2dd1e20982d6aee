//! Every argument, a config type with secrets, and capabilities whose hooks are all written.
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::HostProfile;
use serde_json::json;

/// Acme's config.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct AcmeConfig {
    /// The API token.
    api_token: Secret,
    /// Region.
    region: Option<String>,
}

#[derive(PluginManifest)]
#[plugin(
    id = "acme.sbx", display_name = "Acme Sandbox", description = "Acme sandboxes",
    author = "Acme Inc.", version = "2.0.0-beta.1", categories = ["automation", "workspace"],
    worker = "./dist/acme-worker.cjs", profile = "paperclip-2026-11", crate = "paperclip_sandbox_sdk",
)]
#[driver(
    key = "acme-vm", display_name = "Acme VM", description = "One VM per lease.", config = AcmeConfig,
    capabilities(
        reusableLeases, nativeSyncIn, nativeSyncOut = true, persistentProcessSessions = false,
        incrementalSessionOutput, runnerWebSocketIngress = false, duplexCommandStream,
    ),
    default_acquire_timeout_ms = 86_400_000, creation_operation_version = 1, supports_tasks,
)]
struct P;

#[provider]
impl SandboxProvider for P {
    async fn resume_lease(&self, _: ResumeLeaseParams, _: Context) -> HookResult<ResumeLeaseResult> {
        Err(ProviderError::worker("x"))
    }
    async fn release_lease(&self, _: ReleaseLeaseParams, _: Context) -> HookResult<ReleaseLeaseResult> {
        Ok(Released::done())
    }
    async fn destroy_lease(&self, _: DestroyLeaseParams, _: Context) -> HookResult<DestroyLeaseResult> {
        Ok(Released::done())
    }
    async fn sync_in(&self, _: SyncInParams, _: Context) -> HookResult<SyncResult> {
        Err(ProviderError::worker("x"))
    }
    async fn sync_out(&self, _: SyncOutParams, _: Context) -> HookResult<SyncResult> {
        Err(ProviderError::worker("x"))
    }
    async fn execute(&self, _: ExecuteParams, _: Context) -> HookResult<ExecuteResult> {
        Ok(ExecuteResult::exited(0))
    }
    async fn environment_task(&self, p: EnvironmentTaskParams, _: Context) -> HookResult<TaskResult> {
        Ok(TaskResult::accepted(p.task_id))
    }
    async fn duplex_channel_open(&self, p: DuplexChannelOpenParams, _: Context) -> HookResult<DuplexChannelOpenResult> {
        Ok(DuplexChannelOpenResult::new(p.host_route_id, "s1"))
    }
    // The raw config object, not the manifest's config type.
    type Config = JsonObject;
}

fn main() {
    let m = P::manifest(HostProfile::Paperclip2026_11).to_value();
    assert_eq!(m["version"], "2.0.0-beta.1");
    assert_eq!(m["categories"], json!(["automation", "workspace"]));
    assert_eq!(m["entrypoints"]["worker"], "./dist/acme-worker.cjs");
    let d = &m["environmentDrivers"][0];
    assert_eq!(d["description"], "One VM per lease.");
    assert_eq!(
        d["sandboxCapabilities"],
        json!({
            "reusableLeases": true, "nativeSyncIn": true, "nativeSyncOut": true,
            "persistentProcessSessions": false, "incrementalSessionOutput": true,
            "runnerWebSocketIngress": false, "duplexCommandStream": true
        })
    );
    assert_eq!(d["defaultAcquireTimeoutMs"], 86_400_000);
    assert_eq!(d["creationOperationVersion"], 1);
    assert_eq!(d["supportsTasks"], true);
    assert_eq!(d["configSchema"]["properties"]["apiToken"], json!({"type": "string", "format": "secret-ref", "description": "The API token."}));
    assert_eq!(d["configSchema"]["required"], json!(["apiToken"]));
    let old = P::manifest(HostProfile::Paperclip2026_09).to_value();
    assert!(old["environmentDrivers"][0].get("defaultAcquireTimeoutMs").is_none());
    assert!(old["environmentDrivers"][0].get("creationOperationVersion").is_none());
    assert!(old["environmentDrivers"][0].get("supportsTasks").is_none());
    for profile in HostProfile::ALL {
        let report = P::manifest(profile).validate(profile);
        assert!(report.valid, "{profile}: {:?}", report.errors);
    }
}
