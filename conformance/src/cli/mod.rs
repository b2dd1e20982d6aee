//! Subcommands of the `sandbox-conformance` binary, one module per command group. The binary
//! (`src/main.rs`) only calls [`main`]; the command line lives in the library so that the
//! library's modules can stay crate-private.

pub(crate) mod capabilities;
pub(crate) mod ci_template;
pub(crate) mod manifest;
pub(crate) mod package;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod stateful;
pub(crate) mod sweep;

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::Value;

/// Conformance tools for Paperclip sandbox-provider plugin workers.
#[derive(Debug, Parser)]
#[command(name = "sandbox-conformance", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The top-level subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Plugin manifest tools.
    #[command(subcommand)]
    Manifest(manifest::ManifestCommand),
    /// Sandbox capability tools.
    #[command(subcommand)]
    Capabilities(capabilities::CapabilitiesCommand),
    /// Spawn a worker, act as the host, and run the conformance checks.
    Run(Box<run::RunArgs>),
    /// Re-send a failure transcript to a fresh worker and diff the answers.
    Replay(replay::ReplayArgs),
    /// Package a worker binary as an npm-installable plugin folder.
    Package(package::PackageArgs),
    /// Print a ready CI workflow that runs the harness against a provider.
    CiTemplate(ci_template::CiTemplateArgs),
    /// Destroy, through the worker, the leases that the ledgers of killed runs still list.
    Sweep(sweep::SweepArgs),
}

/// Parses the process's arguments and runs the subcommand; the exit code of the binary.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifest(cmd) => cmd.run(),
        Command::Capabilities(cmd) => cmd.run(),
        Command::Run(args) => run::main(*args),
        Command::Replay(args) => replay::main(args),
        Command::Package(args) => args.run(),
        Command::CiTemplate(args) => args.run(),
        Command::Sweep(args) => args.run(),
    }
}

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
