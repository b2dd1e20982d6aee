//! `remote-provider`: the stdio worker of the remote sandbox provider.
//!
//! ```text
//! remote-provider [--profile paperclip-2026-11|paperclip-2026-09]             serve the host on stdio
//! remote-provider --manifest [--profile paperclip-2026-11|paperclip-2026-09]  print the manifest JSON
//! ```
//!
//! stdout carries only the protocol (or the manifest); logs go to stderr (`RUST_LOG`).

use std::io::Write;

use paperclip_sandbox_sdk::protocol::HostProfile;

const USAGE: &str =
    "usage: remote-provider [--manifest] [--profile paperclip-2026-11|paperclip-2026-09]";

fn main() -> std::io::Result<()> {
    let mut print_manifest = false;
    let mut profile = HostProfile::Paperclip2026_11;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--manifest" => print_manifest = true,
            "--profile" => match args.next().map(|p| p.parse::<HostProfile>()) {
                Some(Ok(p)) => profile = p,
                Some(Err(e)) => usage_error(&e.to_string()),
                None => usage_error("--profile needs a value"),
            },
            other => usage_error(&format!("unknown argument {other:?}")),
        }
    }
    if print_manifest {
        let manifest = remote_provider::manifest_for(profile).to_value();
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::to_string_pretty(&manifest)?)?;
        return out.flush();
    }
    paperclip_sandbox_sdk::init_tracing();
    tracing::info!(%profile, "remote-provider serving on stdio");
    paperclip_sandbox_sdk::run(remote_provider::RemoteProvider::new())
}

fn usage_error(message: &str) -> ! {
    eprintln!("remote-provider: {message}\n{USAGE}");
    std::process::exit(2)
}
