//! `sandbox-conformance` command-line tool.
//!
//! Exit codes: 0 success (a valid manifest, a conforming worker), 1 a check failed, 2 a usage
//! error, an I/O error, input that is not JSON, or a worker that cannot be spawned.

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
    /// Spawn a worker, act as the host, and run the conformance checks.
    Run(Box<cli::run::RunArgs>),
    /// Re-send a failure transcript to a fresh worker and diff the answers.
    Replay(cli::replay::ReplayArgs),
    /// Package a worker binary as an npm-installable plugin folder.
    Package(cli::package::PackageArgs),
    /// Print a ready CI workflow that runs the harness against a provider.
    CiTemplate(cli::ci_template::CiTemplateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifest(cmd) => cmd.run(),
        Command::Capabilities(cmd) => cmd.run(),
        Command::Run(args) => cli::run::main(*args),
        Command::Replay(args) => cli::replay::main(args),
        Command::Package(args) => args.run(),
        Command::CiTemplate(args) => args.run(),
    }
}
