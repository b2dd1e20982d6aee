//! `sandbox-conformance` command-line tool.

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Conformance tools for Paperclip sandbox-provider workers.
#[derive(Debug, Parser)]
#[command(name = "sandbox-conformance", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Debug, Subcommand)]
enum Commands {
    /// Spawn a worker, act as the host, and run the conformance checks.
    Run(Box<cli::run::RunArgs>),
    /// Re-send a failure transcript to a fresh worker and diff the answers.
    Replay(cli::replay::ReplayArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Commands::Run(args) => cli::run::main(*args),
        Commands::Replay(args) => cli::replay::main(args),
    }
}
