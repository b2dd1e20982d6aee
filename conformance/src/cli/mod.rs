//! Subcommands of the `sandbox-conformance` binary, one module per command group.

pub mod manifest;

use std::process::ExitCode;

/// Exit code of a passed check.
pub const EXIT_OK: u8 = 0;
/// Exit code of a failed check.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a usage error, an I/O error or unreadable input.
pub const EXIT_USAGE: u8 = 2;

/// Prints `error: <message>` on stderr and returns exit code 2.
pub fn fail_usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}
