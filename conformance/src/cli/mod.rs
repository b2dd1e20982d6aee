//! Subcommands of `sandbox-conformance`.

pub mod replay;
pub mod run;
