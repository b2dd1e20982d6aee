//! Subcommands of the `sandbox-conformance` binary, one module per command group.

pub mod capabilities;
pub mod ci_template;
pub mod manifest;
pub mod package;
pub mod replay;
pub mod run;
pub mod stateful;

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;

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

/// A host profile on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// The November 2026 contract (default).
    #[value(name = "paperclip-2026-11")]
    Paperclip2026_11,
    /// The published host 2026.916.1.
    #[value(name = "paperclip-2026-09")]
    Paperclip2026_09,
}

impl From<ProfileArg> for HostProfile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Paperclip2026_11 => HostProfile::Paperclip2026_11,
            ProfileArg::Paperclip2026_09 => HostProfile::Paperclip2026_09,
        }
    }
}

/// Runs `command` on the JSON read from `file` (`-`: stdin) and returns its exit code; input
/// that cannot be read or is not JSON exits 2 with one line.
pub fn on_json_input(
    file: &Path,
    command: impl FnOnce(Value) -> Result<ExitCode, ExitCode>,
) -> ExitCode {
    read_json_input(file).and_then(command).unwrap_or_else(|code| code)
}

/// Reads a JSON document from a file, or from stdin when the path is `-`. On failure prints one
/// `error: …` line and returns the exit code 2 to end with.
pub fn read_json_input(file: &Path) -> Result<Value, ExitCode> {
    let is_stdin = file.as_os_str() == "-";
    let name = if is_stdin { "<stdin>".to_owned() } else { file.display().to_string() };
    let mut text = String::new();
    let read = if is_stdin {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::read_to_string(file).map(|t| text = t)
    };
    if let Err(e) = read {
        return Err(fail_usage(format!("{name}: cannot read: {e}")));
    }
    serde_json::from_str(&text).map_err(|e| fail_usage(format!("{name}: not valid JSON: {e}")))
}
