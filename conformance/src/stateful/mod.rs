//! Stateful (and chaos) runs: random lifecycle programs over logical lease handles, drawn from
//! the observed model and gated as the host gates its calls, judged step by step against a
//! model with "maybe" states; a failing program is shrunk within a budget, re-run to rate its
//! flakiness, and kept as a case file that `replay` re-executes and re-judges.
//!
//! From a test: [`run`] with [`RunOptions`](crate::RunOptions) and [`StatefulOptions`] gives a
//! [`StatefulRun`]: the report, the seed, the [`Coverage`](invariants::Coverage) of each
//! invariant (ids in [`invariants`]) and the kept cases. The modules below are private:
//!
//! | Module | Role |
//! |---|---|
//! | `program` | the alphabet ([`Op`]) and the case file ([`Case`]) |
//! | `rng` | ChaCha8 with the harness's own range mapping |
//! | `model` | the per-handle model, the gates, generation |
//! | [`invariants`] | the invariants, their requirement ids, coverage |
//! | `step` | running and judging a program, cleanup and the leak oracle |
//! | `sync` | the native sync steps (`syncIn`/`syncOut` through host temp dirs) |
//! | `target` | what a program runs against (a worker process) |
//! | `shrink` | budgeted shrinking |
//! | `report` | the run: cases, shrinking, re-runs, case files, the report |

//! Where this differs from the first design, and why:
//!
//! - A kept case is a program, never just a seed: the program is drawn from *observed*
//!   answers, so a seed reproduces it only against the same worker and harness. `replay` takes
//!   case files (the file's `kind` tells them from transcripts) instead of a new subcommand.
//! - A released lease is "maybe kept": the host's release may stop or destroy, so a resume of a
//!   released lease may answer the lease or null, and only a resume that hands back the *same*
//!   lease is held to its files (STATE-PERSIST-1).
//! - The model's own property test is a seeded loop of thousands of programs against an
//!   in-process fake (`fake.rs`) with one switchable defect each, instead of proptest or
//!   stateright: it exercises the harness's own generator and shrinker (the things under
//!   test), runs in seconds, and adds no dependency.
//! - The chaos proxy counts requests by turn taking (the client sends after the backend last
//!   answered) instead of parsing HTTP, so it counts inside TLS tunnels too; a heal closes only
//!   the connections a hang holds, so a provider's healthy kept-alive connections survive it.
//! - The Docker leak oracle lists containers whose *any* label carries the case's environment
//!   id, so it needs no provider-specific label key.
//! - Sync steps move single-file mappings straight between a host temp dir and the lease's
//!   cwd, where executes write and read the same files, so one model of the files judges all
//!   three; they are drawn only where the host syncs natively (nativeSyncIn and nativeSyncOut
//!   effective), as the fixed sync check is gated.
//! - The write-ahead ledger file is written by the host side of every session (not by the
//!   program runner), so fixed checks, stateful and chaos runs share it; `sweep` and the
//!   SIGINT/SIGTERM cleanup are in `crate::sweep`.
//! - Not built yet: MITM faults (HTTP status codes and partial bodies inside TLS).

pub mod invariants;
mod lifecycle;
pub(crate) mod model;
pub(crate) mod program;
pub(crate) mod report;
pub(crate) mod rng;
pub(crate) mod shrink;
pub(crate) mod step;
mod sync;
pub(crate) mod target;

#[cfg(test)]
mod fake;

pub use program::{Case, FaultKind, Op, Restart, CASE_KIND};
pub(crate) use report::replay_case;
pub use report::{run, StatefulOptions, StatefulRun};
