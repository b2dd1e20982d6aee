//! Stateful (and chaos) runs: random lifecycle programs over logical lease handles, drawn from
//! the observed model and gated as the host gates its calls, judged step by step against a
//! model with "maybe" states; a failing program is shrunk within a budget, re-run to rate its
//! flakiness, and kept as a case file that `replay` re-executes and re-judges.
//!
//! | Module | Role |
//! |---|---|
//! | [`program`] | the alphabet ([`Op`]) and the case file ([`Case`]) |
//! | [`rng`] | ChaCha8 with the harness's own range mapping |
//! | [`model`] | the per-handle model, the gates, generation |
//! | [`invariants`] | the invariants, their requirement ids, coverage |
//! | [`step`] | running and judging a program, cleanup and the leak oracle |
//! | [`target`] | what a program runs against (a worker process) |
//! | [`shrink`] | budgeted shrinking |
//! | [`report`] | the run: cases, shrinking, re-runs, case files, the report |

pub mod invariants;
mod lifecycle;
pub mod model;
pub mod program;
pub mod report;
pub mod rng;
pub mod shrink;
pub mod step;
pub mod target;

#[cfg(test)]
mod fake;

pub use program::{Case, FaultKind, Op, Restart, CASE_KIND};
pub use report::{replay_case, run, StatefulOptions, StatefulRun};
