//! `sandbox-conformance` command-line tool.
//!
//! Exit codes: 0 success (a valid manifest, a conforming worker), 1 a check failed, 2 a usage
//! error, an I/O error, input that is not JSON, or a worker that cannot be spawned.

use std::process::ExitCode;

fn main() -> ExitCode {
    paperclip_sandbox_conformance::__cli_main()
}
