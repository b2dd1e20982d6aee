//! Conformance harness for Paperclip sandbox-provider workers.
//!
//! The harness spawns any worker binary in its own process group and acts as the Paperclip
//! host over NDJSON stdio, judging every frame through the protocol crate (never through the
//! SDK). Most users run it as the `sandbox-conformance` binary; this library is for running it
//! from a provider's own tests:
//!
//! - [`assert_conformant`]: one assertion: every check passes except the expected skips.
//! - [`run`] with [`RunOptions`] (built from a [`WorkerCommand`]): a whole run, returning a
//!   [`RunReport`] of [`CheckOutcome`]s ([`Status`], [`Level`], a [`Summary`]), which renders
//!   as JSON, human text or JUnit XML. [`check_ids`] lists the checks.
//! - [`stateful`] and [`chaos`]: random lifecycle programs judged against a model, and the
//!   same with a fault proxy between the provider and its backend and a leak oracle.
//!
//! Errors that stop a run before any check (a worker that cannot be spawned, an unreadable
//! file) are [`HarnessError`]s. The harness's internals (the host side, the checks, the
//! transcript, packaging, replay) are private; the book describes what they do.

mod assert;
pub(crate) mod catalogue;
pub mod chaos;
pub(crate) mod check;
pub(crate) mod checks;
mod cli;
mod config_schema;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod host;
pub(crate) mod hostmodel;
pub(crate) mod ids;
pub(crate) mod ledger;
pub(crate) mod ledger_file;
pub(crate) mod package;
pub(crate) mod process;
mod reaper;
pub(crate) mod registry;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod requirements;
pub(crate) mod runner;
pub mod stateful;
pub(crate) mod sweep;
pub(crate) mod transcript;

pub use assert::assert_conformant;
pub use context::RunOptions;
pub use error::HarnessError;
pub use ledger_file::{LedgerFile, LedgerLease};
pub use process::WorkerCommand;
pub use report::{CheckOutcome, RunReport, Status, Summary};
pub use requirements::Level;
pub use runner::run;

/// The ids of the harness's checks, in running order (what `sandbox-conformance run --list`
/// prints). Each names a check of the book's check reference; a family is the part before the
/// first dot (`lifecycle`, `sync`, `newer`, …).
pub fn check_ids() -> impl Iterator<Item = &'static str> {
    registry::all().map(|check| check.id)
}

/// The `sandbox-conformance` binary's entry point: parses the process's arguments, runs the
/// subcommand and returns its exit code. Not a public API.
#[doc(hidden)]
pub fn __cli_main() -> std::process::ExitCode {
    cli::main()
}

/// What the crate's own integration tests read beyond the public API: the generator of the
/// book's reference pages and the report's text hardening. Not a public API; no stability.
#[doc(hidden)]
pub mod __internals {
    pub use crate::catalogue::{
        anchor, chapter_of, chapters, render_markdown, render_schema_index, CONTRACT_ONLY,
    };
    pub use crate::cli::sweep::INTERRUPT_ACQUIRE_WAIT;
    pub use crate::registry::all as checks;
    pub use crate::report::human::progress_line;
    pub use crate::report::safe::is_unsafe;
    pub use crate::requirements::REQUIREMENTS;
}
