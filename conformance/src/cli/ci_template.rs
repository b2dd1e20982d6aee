//! `sandbox-conformance ci-template <system>`: prints a ready CI recipe for a provider's
//! repository. The recipe is one file of this crate (`ci/github.yml`), which the book's CI
//! chapter includes as well, so the printed workflow and the documented one cannot drift.

use std::process::ExitCode;

use clap::ValueEnum;

/// The GitHub Actions workflow: build the worker, install the harness, run both host profiles
/// (the binary and the package's shim), keep the JUnit reports, and the transcripts of failed
/// checks.
pub const GITHUB_WORKFLOW: &str = include_str!("../../ci/github.yml");

/// A CI system with a recipe.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CiSystem {
    /// GitHub Actions (`.github/workflows/conformance.yml`).
    Github,
}

/// Arguments of `ci-template`.
#[derive(Debug, clap::Args)]
pub struct CiTemplateArgs {
    /// The CI system.
    #[arg(value_enum)]
    system: CiSystem,
}

impl CiTemplateArgs {
    /// Prints the recipe on stdout; exit 0.
    pub fn run(self) -> ExitCode {
        match self.system {
            CiSystem::Github => print!("{GITHUB_WORKFLOW}"),
        }
        ExitCode::SUCCESS
    }
}
