//! `kubernetes-provider`: the stdio worker of the Kubernetes provider.
//!
//! ```text
//! kubernetes-provider [--profile paperclip-2026-11|paperclip-2026-09]             serve the host on stdio
//! kubernetes-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]  print the manifest JSON
//! ```
//!
//! The cluster is the config's `kubeconfig`, else what kube infers (`KUBECONFIG`,
//! `~/.kube/config`, the in-cluster service account). stdout carries only the protocol (or the
//! manifest); logs go to stderr (`RUST_LOG`).

use kubernetes_provider::KubernetesProvider;

fn main() -> std::io::Result<()> {
    // `--manifest [--profile …]` prints the derived manifest and exits; a bad argument exits 2.
    let profile = paperclip_sandbox_sdk::cli::handle_args::<KubernetesProvider>();
    paperclip_sandbox_sdk::init_tracing();
    tracing::info!(%profile, "kubernetes-provider serving on stdio");
    let worker = paperclip_sandbox_sdk::Worker::new(KubernetesProvider::new()).profile(profile);
    worker.run_stdio().map(|never| match never {})
}
