//! The `bwrap-provider` worker binary.
//!
//! ```text
//! bwrap-provider [--profile paperclip-2026-11|paperclip-2026-09]              serve the host on stdio
//! bwrap-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]   print the manifest JSON
//! ```
//!
//! Serving: the bubblewrap prerequisites are probed once at startup (and again on each
//! `environmentProbe`); stdout carries protocol frames only; logs go to stderr (`RUST_LOG`,
//! default `info`).

use std::process::ExitCode;

use bwrap_provider::manifest::manifest;
use bwrap_provider::BwrapProvider;
use paperclip_sandbox_sdk::protocol::HostProfile;
use paperclip_sandbox_sdk::Worker;

const USAGE: &str =
    "usage: bwrap-provider [--manifest] [--profile paperclip-2026-11|paperclip-2026-09]";

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
    let provider = BwrapProvider::new(profile);
    let detection = provider.detection();
    let mode = if detection.wrapper.is_some() { "bwrap" } else { "plain" };
    tracing::info!(mode, reason = %detection.reason, "bubblewrap prerequisites probed");
    let served = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .and_then(|rt| rt.block_on(Worker::new(provider).serve_stdio()));
    match served {
        Ok(never) => match never {},
        Err(e) => {
            tracing::error!(error = %e, "cannot serve stdio");
            ExitCode::FAILURE
        }
    }
}
