//! `sandbox-conformance` command-line tool.
//!
//! Exit codes: 0 success (a valid manifest), 1 a check failed (an invalid manifest), 2 a usage
//! error, an I/O error or input that is not JSON.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Manifest(cli::manifest::ManifestCommand),
    /// Sandbox capability tools.
    #[command(subcommand)]
    Capabilities(cli::capabilities::CapabilitiesCommand),
    /// Package a worker binary as an npm-installable plugin folder.
    Package(cli::package::PackageArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifest(cmd) => cmd.run(),
        Command::Capabilities(cmd) => cmd.run(),
        Command::Package(args) => args.run(),
    }
}
