//! `remote-provider`: the stdio worker of the remote sandbox provider.
//!
//! ```text
//! remote-provider [--profile paperclip-2026-11|paperclip-2026-09]             serve the host on stdio
//! remote-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]  print the manifest JSON
//! ```
//!
//! The command line is the SDK's (`paperclip_sandbox_sdk::cli`); the manifest is derived on
//! [`RemoteProvider`] (`#[derive(PluginManifest)]`). The provider behaves the same for both
//! host profiles, so `--profile` only matters to `--manifest` (and is logged when serving).
//!
//! stdout carries only the protocol (or the manifest); logs go to stderr (`RUST_LOG`).

use remote_provider::RemoteProvider;

fn main() -> std::io::Result<()> {
    // `--manifest [--profile …]` prints the derived manifest and exits; a bad argument exits 2.
    let profile = paperclip_sandbox_sdk::cli::handle_args::<RemoteProvider>();
    paperclip_sandbox_sdk::init_tracing();
    tracing::info!(%profile, "remote-provider serving on stdio");
    let worker = paperclip_sandbox_sdk::Worker::new(RemoteProvider::new()).profile(profile);
    worker.run_stdio().map(|never| match never {})
}
