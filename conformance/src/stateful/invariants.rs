//! The invariants a stateful (or chaos) run judges, each with its requirement id. A run reports
//! one outcome per invariant: FAIL with the shrunk program, PASS when it was reached and held,
//! SKIP (with the count) when no case ever reached it.

use std::collections::BTreeMap;

/// One invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invariant {
    /// The check id of its outcome (`stateful.*`, `chaos.*`).
    pub id: &'static str,
    /// The requirement judged.
    pub requirement: &'static str,
    /// What it checks, in a few words.
    pub title: &'static str,
    /// Judged only in chaos runs.
    pub chaos: bool,
}

const fn inv(
    id: &'static str,
    requirement: &'static str,
    title: &'static str,
    chaos: bool,
) -> Invariant {
    Invariant { id, requirement, title, chaos }
}

/// Executes answer with the command's exit code.
pub const EXEC: &str = "stateful.execute";
/// A live or stopped lease resumes to itself.
pub const RESUME_LIVE: &str = "stateful.resume-live";
/// A destroyed lease never resumes.
pub const RESUME_DESTROYED: &str = "stateful.resume-destroyed";
/// Destroy succeeds from any phase, also twice at once.
pub const DESTROY: &str = "stateful.destroy-any-phase";
/// Release answers null or a receipt.
pub const RELEASE: &str = "stateful.release";
/// Stop answers a `stopped` receipt.
pub const STOP: &str = "stateful.stop";
/// A destroyed lease keeps nothing a command can read.
pub const DEAD: &str = "stateful.destroyed-is-gone";
/// Files survive, byte- and mode-exact, in the same lease.
pub const PERSIST: &str = "stateful.files-persist";
/// No nonce crosses leases.
pub const ISOLATE: &str = "stateful.isolation";
/// Two calls in flight equal a serial order.
pub const LINEAR: &str = "stateful.in-flight-serial";
/// Native sync agrees with the lease's files.
pub const SYNC: &str = "stateful.sync";
/// After a restart, leases resume or are gone, and can be destroyed.
pub const RESTART: &str = "stateful.restart";
/// Every lease a case created could be ended.
pub const LEAK: &str = "stateful.no-leak";
/// Every call answers within its budget while the backend misbehaves.
pub const BUDGET: &str = "chaos.budget";
/// A failed acquire allocated nothing, or named what to clean up and that could be destroyed.
pub const CLEANUP: &str = "chaos.failed-acquire-cleanup";
/// A destroy after a faulted destroy succeeds.
pub const IDEMP: &str = "chaos.destroy-after-fault";
/// Probe, resume and execute work again after the fault heals.
pub const RECOVER: &str = "chaos.recover";
/// No secret in a fault-induced error.
pub const SECRETS: &str = "chaos.no-secret";
/// Fault-induced error data is an allowlisted envelope.
pub const ENVELOPES: &str = "chaos.envelopes";

/// Every invariant, in report order.
pub const INVARIANTS: &[Invariant] = &[
    inv(
        EXEC,
        "EXEC-1",
        "executes report the command's exit code, in every phase of a program",
        false,
    ),
    inv(RESUME_LIVE, "LIFE-RESUME-1", "a live or stopped lease resumes to itself", false),
    inv(RESUME_DESTROYED, "LIFE-RESUME-2", "a destroyed lease never resumes", false),
    inv(DESTROY, "LIFE-DESTROY-1", "destroy succeeds from any phase, also twice at once", false),
    inv(RELEASE, "LIFE-RELEASE-1", "release answers null or a receipt naming the lease", false),
    inv(STOP, "LIFE-STOP-1", "stop answers a `stopped` receipt", false),
    inv(DEAD, "STATE-DEAD-1", "nothing of a destroyed lease can be read", false),
    inv(
        PERSIST,
        "STATE-PERSIST-1",
        "files survive execute, release, stop and resume byte- and mode-exact",
        false,
    ),
    inv(ISOLATE, "STATE-ISOLATE-1", "no nonce written in one lease is read in another", false),
    inv(
        LINEAR,
        "STATE-LINEAR-1",
        "two executes in flight in one lease equal a serial order",
        false,
    ),
    inv(
        SYNC,
        "STATE-SYNC-1",
        "syncIn lands what commands read; syncOut brings back what the lease holds",
        false,
    ),
    inv(
        RESTART,
        "STATE-RESTART-1",
        "after a worker restart, a lease resumes or is gone, never an error",
        false,
    ),
    inv(
        LEAK,
        "STATE-LEAK-1",
        "every lease a program created can be ended; nothing is left on the backend",
        false,
    ),
    inv(
        BUDGET,
        "CHAOS-BUDGET-1",
        "every call answers within its budget while the backend hangs",
        true,
    ),
    inv(
        CLEANUP,
        "CHAOS-CLEANUP-1",
        "a failed acquire allocated nothing, or returned the creation-cleanup envelope",
        true,
    ),
    inv(IDEMP, "CHAOS-IDEMP-1", "destroy after a faulted destroy succeeds", true),
    inv(
        RECOVER,
        "CHAOS-RECOVER-1",
        "probe, resume and execute work again after the fault heals",
        true,
    ),
    inv(SECRETS, "SECRET-1", "no planted secret in a fault-induced error", true),
    inv(ENVELOPES, "ENV-ALLOW-1", "fault-induced error data is an allowlisted envelope", true),
];

/// The invariant `id`.
///
/// # Panics
///
/// On an unknown id (a harness bug).
pub fn invariant(id: &str) -> &'static Invariant {
    INVARIANTS.iter().find(|i| i.id == id).unwrap_or_else(|| panic!("unknown invariant {id}"))
}

/// A broken invariant, at a step of a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant id.
    pub invariant: &'static str,
    /// The step (0-based) of the program at which it broke.
    pub step: usize,
    /// What the contract expects.
    pub expected: String,
    /// What the worker did.
    pub actual: String,
}

/// How often each invariant was reached (judged at least once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage(pub BTreeMap<&'static str, u64>);

impl Coverage {
    /// Counts one judgement of `id`.
    pub fn reach(&mut self, id: &'static str) {
        *self.0.entry(id).or_default() += 1;
    }

    /// How often `id` was judged.
    pub fn count(&self, id: &str) -> u64 {
        self.0.get(id).copied().unwrap_or(0)
    }

    /// Adds another coverage.
    pub fn merge(&mut self, other: &Coverage) {
        for (k, v) in &other.0 {
            *self.0.entry(k).or_default() += v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_invariant_names_a_known_requirement() {
        for i in INVARIANTS {
            let _ = crate::requirements::requirement(i.requirement);
            assert_eq!(invariant(i.id), i);
        }
    }
}
