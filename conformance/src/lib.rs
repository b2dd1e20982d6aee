//! Conformance harness for Paperclip sandbox-provider workers.
//!
//! The harness spawns any worker binary in its own process group and acts as the Paperclip
//! host over NDJSON stdio, judging every frame through the protocol crate (never through the
//! SDK). The pieces, bottom up:
//!
//! | Module | Role |
//! |---|---|
//! | [`process`] | spawn in a process group, stdio threads, shutdown ladder, kill on drop |
//! | [`transcript`] | every line both ways with timestamps; failure artifacts |
//! | [`host`] | the host side: requests, worker→host calls, notifications, observations |
//! | [`hostmodel`] | how the real host drives a worker: acquire params, cwd, gating, transfers |
//! | [`requirements`] | the requirement catalogue (id, level, statement, reference) |
//! | [`catalogue`] | the book's generated reference pages (checks, JSON Schema index) |
//! | [`check`] | what a check is: id, requirement, scope, gates |
//! | [`registry`] | the check groups in running order, their gates and skip reasons |
//! | [`context`] | what a check sees: options, manifest, facts, session, ledger |
//! | [`ledger`] | every lease of the run, ended when its check ends; the final sweep |
//! | [`checks`] | the checks, one module per family |
//! | [`runner`] | a whole run: prepare, run, report |
//! | [`report`] | human, JSON and JUnit output; the expected-failures baseline |
//! | [`stateful`] | random lifecycle programs judged against a model; shrinking, case files |
//! | [`chaos`] | the fault proxy between provider and backend, the leak oracle |
//! | [`replay`] | re-send a failure transcript to a fresh worker and diff the answers |
//! | [`package`] | turn a worker binary into an npm-installable plugin folder (Node shim) |

mod assert;
pub mod catalogue;
pub mod chaos;
pub mod check;
pub mod checks;
mod config_schema;
pub mod context;
pub mod error;
pub mod host;
pub mod hostmodel;
pub mod ids;
pub mod ledger;
pub mod package;
pub mod process;
mod reaper;
pub mod registry;
pub mod replay;
pub mod report;
pub mod requirements;
pub mod runner;
pub mod stateful;
pub mod transcript;

pub use assert::assert_conformant;
pub use context::RunOptions;
pub use error::HarnessError;
pub use report::RunReport;
