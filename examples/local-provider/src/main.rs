//! The `local-provider` worker binary.
//!
//! ```text
//! local-provider [--profile paperclip-2026-11|paperclip-2026-09]              serve the host on stdio
//! local-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]   print the manifest JSON
//! ```
//!
//! Serving: stdout carries protocol frames only; logs go to stderr (`RUST_LOG`, default
//! `info`). The environment variable `LOCAL_PROVIDER_FRAME_LIMIT` (bytes) lowers the inbound
//! frame cap from its 64 MiB default, for tests.

use std::process::ExitCode;

use local_provider::manifest::manifest;
use local_provider::provider::LocalProvider;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::Worker;

/// The environment variable that sets the inbound frame cap in bytes.
const FRAME_LIMIT_ENV: &str = "LOCAL_PROVIDER_FRAME_LIMIT";

const USAGE: &str =
    "usage: local-provider [--manifest] [--profile paperclip-2026-11|paperclip-2026-09]";

fn main() -> ExitCode {
    let mut print_manifest = false;
    let mut profile = HostProfile::Paperclip2026_11;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--manifest" => print_manifest = true,
            "--profile" => match args.next().map(|p| p.parse::<HostProfile>()) {
                Some(Ok(p)) => profile = p,
                _ => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    if print_manifest {
        use std::io::Write;
        let json = serde_json::to_string_pretty(&manifest(profile).to_value())
            .expect("a JSON value always serializes");
        // A closed pipe (`| head`) is not worth a panic.
        let _ = writeln!(std::io::stdout().lock(), "{json}");
        return ExitCode::SUCCESS;
    }
    paperclip_sandbox_sdk::init_tracing();
    let mut worker = Worker::new(LocalProvider::new(profile));
    if let Some(limit) = std::env::var(FRAME_LIMIT_ENV).ok().and_then(|v| v.parse::<usize>().ok()) {
        worker = worker.frame_limit(limit);
    }
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .and_then(|rt| rt.block_on(worker.serve_stdio()));
    match served {
        Ok(never) => match never {},
        Err(e) => {
            tracing::error!(error = %e, "cannot serve stdio");
            ExitCode::FAILURE
        }
    }
}
