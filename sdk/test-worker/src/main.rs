//! A minimal worker for the SDK's wire tests. Its `environmentProbe` hook prints to stdout
//! with `println!` (which the runtime must divert to stderr) and sleeps for
//! `config.sleepMs` milliseconds when asked to. `TEST_WORKER_FRAME_LIMIT` sets the frame cap.
//!
//! Its manifest is derived (`#[derive(PluginManifest)]`); the SDK's command line prints it:
//! `paperclip-sandbox-test-worker --manifest [--profile paperclip-2026-09]`.

use std::time::Duration;

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::Worker;
use serde::Deserialize;

// The manifest's `configSchema`, and the type `environmentProbe` receives (parsed by the SDK; a
// config that does not fit is answered `-32602`).
/// The test worker's config.
#[derive(JsonSchema, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct TestWorkerConfig {
    /// How long `environmentProbe` sleeps, in milliseconds.
    sleep_ms: Option<u64>,
    /// A token, to show a secret reference in the config schema.
    token: Option<Secret>,
}

#[derive(PluginManifest)]
#[plugin(
    id = "paperclip-sandbox.test-worker",
    display_name = "SDK test worker",
    description = "A minimal worker for the SDK's wire tests.",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "sdk-test",
    display_name = "SDK test worker",
    config = TestWorkerConfig,
    capabilities(persistentProcessSessions = false, reusableLeases = false),
    creation_operation_version = 1
)]
struct TestWorker;

#[provider]
impl SandboxProvider for TestWorker {
    async fn probe(
        &self,
        params: ProbeParams<TestWorkerConfig>,
        _cx: Context,
    ) -> HookResult<ProbeResult> {
        #[allow(clippy::print_stdout)]
        {
            println!("stray println from the probe hook");
        }
        if let Some(ms) = params.base.config.sleep_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(ProbeResult::new(true))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    paperclip_sandbox_sdk::cli::handle_args::<TestWorker>();
    paperclip_sandbox_sdk::init_tracing();
    let mut worker = Worker::new(TestWorker);
    if let Some(limit) = std::env::var("TEST_WORKER_FRAME_LIMIT").ok().and_then(|v| v.parse().ok())
    {
        worker = worker.frame_limit(limit);
    }
    worker.serve_stdio().await.map(|never| match never {})
}
