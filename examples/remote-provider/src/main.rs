//! `remote-provider`: the stdio worker of the remote sandbox provider.
//!
//! `remote-provider --manifest` prints the plugin manifest as JSON and exits; without
//! arguments it serves the host over stdin/stdout (logs go to stderr).

use std::io::Write;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("--manifest") => {
            let manifest = serde_json::to_string_pretty(&remote_provider::manifest().to_value())?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{manifest}")?;
            out.flush()
        }
        Some(other) => {
            eprintln!("remote-provider: unknown argument {other:?} (expected --manifest or none)");
            std::process::exit(2)
        }
        None => {
            paperclip_sandbox_sdk::init_tracing();
            paperclip_sandbox_sdk::run(remote_provider::RemoteProvider::new())
        }
    }
}
