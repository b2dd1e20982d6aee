//! The records of a lease ledger file: their line format, what a file holds once folded
//! ([`LedgerContents`]), and the one rule for removing a file ([`removable`]).
//!
//! One JSON object per line, appended and flushed one `write` at a time (a killed run leaves
//! every line it wrote whole, but the last may be cut; the reader skips a cut last line):
//!
//! | `record` | Written | Fields |
//! |---|---|---|
//! | `run` | when the file is created | `version`, `harness`, `pid`, `command` (`program`, `args`, `env`, `cwd`) |
//! | `manifest` | at the first `initialize` | `manifest` |
//! | `acquiring` | before an acquire is sent | `attempt`, `environmentId` |
//! | `lease` | when an acquire or resume answers a lease, or an acquire fails with a creation-cleanup envelope | `attempt`, `providerLeaseId`, `metadata`, `params` (`driverKey`, `companyId`, `environmentId`, `config`) |
//! | `answered` | when an acquire answers without a lease | `attempt` |
//! | `destroyed` | when a destroy of a lease succeeds | `providerLeaseId` |

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::process::{RedactedValues, WorkerCommand};

/// The version of the ledger's line format.
pub(crate) const LEDGER_VERSION: u64 = 1;

/// The file name prefix of ledger files inside a run directory.
pub(crate) const FILE_PREFIX: &str = "ledger-";

/// A lease a ledger lists as possibly live: what `sweep` destroys. Its `Debug` shows the
/// config's keys, not their values (they may be secrets).
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct LedgerLease {
    /// The provider lease id.
    pub provider_lease_id: String,
    /// The lease metadata to send back (`leaseMetadata`).
    pub metadata: Value,
    /// `driverKey`, `companyId`, `environmentId` and `config` of the call that made it.
    pub params: Map<String, Value>,
}

/// What a ledger file holds, folded: the worker, and what may still exist. Its `Debug` shows
/// no config or environment value (they may be secrets).
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub(crate) struct LedgerContents {
    /// The worker command of the run.
    pub command: Option<WorkerCommand>,
    /// The pid of the run that wrote the file.
    pub pid: Option<u64>,
    /// The manifest the run initialized its workers with.
    pub manifest: Option<Value>,
    /// The leases not known to be destroyed, in the order they were made.
    pub leases: Vec<LedgerLease>,
    /// Acquires sent and never answered: whatever they made, if anything, the ledger cannot name.
    pub unanswered: usize,
}

/// The keys of a JSON object whose values may be secrets (`<redacted>` when not an object).
fn redacted(v: &Value) -> Box<dyn fmt::Debug + '_> {
    match v.as_object() {
        Some(m) => Box::new(RedactedValues(m.keys().map(String::as_str).collect())),
        None => Box::new(RedactedValues(vec![])),
    }
}

impl fmt::Debug for LedgerLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Params<'a>(&'a Map<String, Value>);
        impl fmt::Debug for Params<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut m = f.debug_map();
                for (k, v) in self.0 {
                    match k.as_str() {
                        "config" => m.entry(k, &redacted(v)),
                        _ => m.entry(k, v),
                    };
                }
                m.finish()
            }
        }
        f.debug_struct("LedgerLease")
            .field("provider_lease_id", &self.provider_lease_id)
            .field("metadata", &self.metadata)
            .field("params", &Params(&self.params))
            .finish()
    }
}

impl fmt::Debug for LedgerContents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LedgerContents")
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("manifest", &self.manifest)
            .field("leases", &self.leases)
            .field("unanswered", &self.unanswered)
            .finish()
    }
}

impl LedgerContents {
    /// Folds the lines of a ledger file; a line that is not a JSON object (a cut last line) is
    /// skipped.
    pub(crate) fn parse(text: &str) -> LedgerContents {
        let mut c = LedgerContents::default();
        let mut attempts = BTreeSet::new();
        for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            match v.get("record").and_then(Value::as_str) {
                Some("run") => {
                    c.pid = v.get("pid").and_then(Value::as_u64);
                    c.command = v.get("command").and_then(command_from_json);
                }
                Some("manifest") => c.manifest = v.get("manifest").cloned(),
                Some("acquiring") => {
                    attempts.extend(s("attempt"));
                }
                Some("answered") => {
                    attempts.remove(&s("attempt").unwrap_or_default());
                }
                Some("lease") => {
                    attempts.remove(&s("attempt").unwrap_or_default());
                    let Some(id) = s("providerLeaseId") else { continue };
                    c.leases.retain(|l| l.provider_lease_id != id);
                    c.leases.push(LedgerLease {
                        provider_lease_id: id,
                        metadata: v.get("metadata").cloned().unwrap_or(json!({})),
                        params: v
                            .get("params")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                    });
                }
                Some("destroyed") => {
                    let id = s("providerLeaseId").unwrap_or_default();
                    c.leases.retain(|l| l.provider_lease_id != id);
                }
                _ => {}
            }
        }
        c.unanswered = attempts.len();
        c
    }
}

/// What an acquire that was sent and never answered means for removing a ledger file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unanswered {
    /// It keeps the file: what it made, if anything, may still be learned or cleaned up from
    /// the file (the run itself, at its end or on an interrupt).
    KeepFile,
    /// It was reported to the user, who is told the ledger cannot name what it made: it no
    /// longer keeps the file. Only `sweep` of a killed run's file, which can never learn more
    /// about such an acquire than the file says, removes a file so.
    Reported,
}

/// The one rule for removing a ledger file: every lease it lists has ended — destroyed (it is
/// no longer in `live`) or released (its id is in `released`; a worker without destroy ends its
/// leases so) — and no acquire is unanswered, unless `unanswered` says they were
/// [reported](Unanswered::Reported).
pub(crate) fn removable(
    live: &[LedgerLease],
    released: &BTreeSet<String>,
    unanswered: usize,
    policy: Unanswered,
) -> bool {
    live.iter().all(|l| released.contains(&l.provider_lease_id))
        && (unanswered == 0 || policy == Unanswered::Reported)
}

pub(super) fn command_to_json(c: &WorkerCommand) -> Value {
    json!({"program": c.program, "args": c.args, "env": c.env, "cwd": c.cwd})
}

fn command_from_json(v: &Value) -> Option<WorkerCommand> {
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect()
    };
    let env = v
        .get("env")?
        .as_array()?
        .iter()
        .map(|p| Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.as_str()?.to_owned())))
        .collect::<Option<Vec<_>>>()?;
    Some(WorkerCommand {
        program: v.get("program")?.as_str()?.to_owned(),
        args: strings(v.get("args"))?,
        env,
        cwd: v.get("cwd").and_then(Value::as_str).map(PathBuf::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_removable_when_every_lease_ended_and_no_acquire_is_unanswered() {
        let lease = |id: &str| LedgerLease {
            provider_lease_id: id.into(),
            metadata: json!({}),
            params: Map::new(),
        };
        let none = BTreeSet::new();
        let released = BTreeSet::from(["l1".to_owned()]);
        let keep = Unanswered::KeepFile;
        assert!(removable(&[], &none, 0, keep), "every lease destroyed");
        assert!(!removable(&[lease("l1")], &none, 0, keep), "l1 is live");
        assert!(removable(&[lease("l1")], &released, 0, keep), "l1 was released");
        assert!(!removable(&[lease("l1"), lease("l2")], &released, 0, keep), "l2 is live");
        assert!(!removable(&[], &none, 1, keep), "an acquire is unanswered");
        assert!(removable(&[], &none, 1, Unanswered::Reported), "sweep reported it");
        assert!(!removable(&[lease("l2")], &none, 1, Unanswered::Reported), "l2 is live");
    }
}
