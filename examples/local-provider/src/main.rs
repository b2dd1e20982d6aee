//! The `local-provider` worker binary.
//!
//! ```text
//! local-provider [--profile paperclip-2026-11|paperclip-2026-09]              serve the host on stdio
//! local-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]   print the manifest JSON
//! ```
//!
//! The command line is the SDK's (`paperclip_sandbox_sdk::cli`); the manifest is derived on
//! [`LocalProvider`] (`#[derive(PluginManifest)]`).
//!
//! Serving: stdout carries protocol frames only; logs go to stderr (`RUST_LOG`, default
//! `info`). The environment variable `LOCAL_PROVIDER_FRAME_LIMIT` (bytes) lowers the inbound
//! frame cap from its 64 MiB default, for tests.

use std::process::ExitCode;

use local_provider::provider::LocalProvider;
use paperclip_sandbox_sdk::Worker;

/// The environment variable that sets the inbound frame cap in bytes.
const FRAME_LIMIT_ENV: &str = "LOCAL_PROVIDER_FRAME_LIMIT";

fn main() -> ExitCode {
    // `--manifest [--profile …]` prints the derived manifest and exits; a bad argument exits 2.
    let profile = paperclip_sandbox_sdk::cli::handle_args::<LocalProvider>();
    paperclip_sandbox_sdk::init_tracing();
    let mut worker = Worker::new(LocalProvider::new()).profile(profile);
    if let Some(limit) = std::env::var(FRAME_LIMIT_ENV).ok().and_then(|v| v.parse::<usize>().ok()) {
        worker = worker.frame_limit(limit);
    }
    let served = worker.run_stdio();
    match served {
        Ok(never) => match never {},
        Err(e) => {
            tracing::error!(error = %e, "cannot serve stdio");
            ExitCode::FAILURE
        }
    }
}
