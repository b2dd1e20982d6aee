//! A minimal worker for the SDK's wire tests. Its `environmentProbe` hook prints to stdout
//! with `println!` (which the runtime must divert to stderr) and sleeps for
//! `config.sleepMs` milliseconds when asked to. `TEST_WORKER_FRAME_LIMIT` sets the frame cap.

use std::time::Duration;

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::Worker;

struct TestWorker;

#[provider]
impl SandboxProvider for TestWorker {
    async fn probe(&self, params: ProbeParams, _cx: Context) -> HookResult<ProbeResult> {
        #[allow(clippy::print_stdout)]
        {
            println!("stray println from the probe hook");
        }
        if let Some(ms) = params.base.config.get("sleepMs").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(ProbeResult::new(true))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    paperclip_sandbox_sdk::init_tracing();
    let mut worker = Worker::new(TestWorker);
    if let Some(limit) = std::env::var("TEST_WORKER_FRAME_LIMIT").ok().and_then(|v| v.parse().ok())
    {
        worker = worker.frame_limit(limit);
    }
    worker.serve_stdio().await.map(|never| match never {})
}
