//! `container-provider`: the stdio worker of the container provider.
//!
//! ```text
//! container-provider [--profile paperclip-2026-11|paperclip-2026-09]             serve the host on stdio
//! container-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]  print the manifest JSON
//! ```
//!
//! The engine is the config's `dockerHost`, else `DOCKER_HOST`; the image the config's
//! `image`, else `PAPERCLIP_CONTAINER_IMAGE`. stdout carries only the protocol (or the
//! manifest); logs go to stderr (`RUST_LOG`).

use container_provider::ContainerProvider;

fn main() -> std::io::Result<()> {
    // `--manifest [--profile …]` prints the derived manifest and exits; a bad argument exits 2.
    let profile = paperclip_sandbox_sdk::cli::handle_args::<ContainerProvider>();
    paperclip_sandbox_sdk::init_tracing();
    tracing::info!(%profile, "container-provider serving on stdio");
    let worker = paperclip_sandbox_sdk::Worker::new(ContainerProvider::new()).profile(profile);
    worker.run_stdio().map(|never| match never {})
}
