//! The `bwrap-provider` worker binary.
//!
//! ```text
//! bwrap-provider [--profile paperclip-2026-11|paperclip-2026-09]              serve the host on stdio
//! bwrap-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]   print the manifest JSON
//! ```
//!
//! The command line is the SDK's (`paperclip_sandbox_sdk::cli`); the manifest is derived on
//! [`BwrapProvider`] (`#[derive(PluginManifest)]`).
//!
//! Serving: the bubblewrap prerequisites are probed once at startup (and again on each
//! `environmentProbe`); stdout carries protocol frames only; logs go to stderr (`RUST_LOG`,
//! default `info`).

use std::process::ExitCode;

use bwrap_provider::BwrapProvider;
use paperclip_sandbox_sdk::Worker;

fn main() -> ExitCode {
    // `--manifest [--profile …]` prints the derived manifest and exits; a bad argument exits 2.
    let profile = paperclip_sandbox_sdk::cli::handle_args::<BwrapProvider>();
    paperclip_sandbox_sdk::init_tracing();
    let provider = BwrapProvider::new();
    let detection = provider.detection();
    let mode = if detection.wrapper.is_some() { "bwrap" } else { "plain" };
    tracing::info!(mode, reason = %detection.reason, "bubblewrap prerequisites probed");
    match Worker::new(provider).profile(profile).run_stdio() {
        Ok(never) => match never {},
        Err(e) => {
            tracing::error!(error = %e, "cannot serve stdio");
            ExitCode::FAILURE
        }
    }
}
