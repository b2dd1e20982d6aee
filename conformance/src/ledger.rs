//! The lease ledger of a run: every lease any check creates, on any worker, is recorded here
//! with the check that created it, and ended for good (destroyed, or released when the worker
//! cannot destroy) when that check ends — pass, fail, panic or timeout. Whatever is still live
//! at the end of the run is swept with the main worker, and the `ledger.clean` check reports
//! what was created and ended, and fails on any lease the worker could not end.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};

/// A lease as the host keeps it and passes it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    /// The provider lease id.
    pub id: String,
    /// The lease metadata (`{}` when the worker returned none).
    pub metadata: Value,
    /// The expiry, an ISO string or null.
    pub expires_at: Value,
}

impl Lease {
    /// A lease from an acquire (or resume) result; `None` without a non-empty providerLeaseId.
    pub fn from_result(result: &Value) -> Option<Lease> {
        let id = result.get("providerLeaseId")?.as_str().filter(|s| !s.is_empty())?;
        Some(Lease {
            id: id.to_owned(),
            metadata: result
                .get("metadata")
                .filter(|m| m.is_object())
                .cloned()
                .unwrap_or(json!({})),
            expires_at: result.get("expiresAt").cloned().unwrap_or(Value::Null),
        })
    }

    /// The `lease` param: `{providerLeaseId, metadata, expiresAt}`.
    pub fn to_value(&self) -> Value {
        json!({"providerLeaseId": self.id, "metadata": self.metadata, "expiresAt": self.expires_at})
    }
}

/// Where a lease of the ledger stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// Still held: nobody ended it yet.
    Live,
    /// Ended for good (destroyed, or released by a worker that cannot destroy).
    Ended,
    /// The worker refused or failed to end it (the reason, as answered).
    Stuck(String),
    /// The worker offers neither destroy nor release: the lease can only expire.
    Unendable,
}

/// One lease of the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The lease.
    pub lease: Lease,
    /// The check that created it.
    pub check: String,
    /// The worker session it was created on.
    pub session: String,
    /// Where it stands.
    pub state: LeaseState,
}

/// The run's lease ledger, shared by every check.
#[derive(Debug, Clone, Default)]
pub struct Ledger(Arc<Mutex<Vec<Entry>>>);

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a lease `check` holds (created on `session`). A lease already recorded live
    /// (a resume handing back the same id) is not recorded twice.
    pub fn track(&self, check: &str, session: &str, lease: Lease) {
        let mut entries = self.lock();
        if entries.iter().any(|e| e.lease.id == lease.id && e.state == LeaseState::Live) {
            return;
        }
        entries.push(Entry {
            lease,
            check: check.to_owned(),
            session: session.to_owned(),
            state: LeaseState::Live,
        });
    }

    /// Marks a lease the check ended itself.
    pub fn ended(&self, id: &str) {
        self.set_state(id, LeaseState::Ended);
    }

    /// Sets the state of every live entry of lease `id`.
    pub fn set_state(&self, id: &str, state: LeaseState) {
        for e in self.lock().iter_mut().filter(|e| e.lease.id == id && e.state == LeaseState::Live)
        {
            e.state = state.clone();
        }
    }

    /// The live leases, of `check` only when given.
    pub fn live(&self, check: Option<&str>) -> Vec<Lease> {
        self.lock()
            .iter()
            .filter(|e| e.state == LeaseState::Live && check.is_none_or(|c| e.check == c))
            .map(|e| e.lease.clone())
            .collect()
    }

    /// A copy of every entry.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_need_a_provider_lease_id_and_are_tracked_once() {
        assert_eq!(Lease::from_result(&json!({"providerLeaseId": null})), None);
        assert_eq!(Lease::from_result(&json!({"providerLeaseId": ""})), None);
        let lease = Lease::from_result(&json!({"providerLeaseId": "l1"})).unwrap();
        assert_eq!(
            lease.to_value(),
            json!({"providerLeaseId": "l1", "metadata": {}, "expiresAt": null})
        );
        let ledger = Ledger::default();
        ledger.track("a", "main", lease.clone());
        ledger.track("a", "main", lease.clone());
        ledger.track("b", "fresh-1", Lease { id: "l2".into(), ..lease });
        assert_eq!(ledger.live(None).len(), 2);
        assert_eq!(ledger.live(Some("b")).len(), 1);
        ledger.ended("l1");
        ledger.set_state("l2", LeaseState::Stuck("error".into()));
        assert!(ledger.live(None).is_empty());
        assert_eq!(ledger.entries().len(), 2);
    }
}
