//! The lease ledger of one check: every lease the check acquired is destroyed (or released)
//! when the check ends, pass or fail, so one failure does not leak into the next check.

use serde_json::{json, Value};

/// A lease as the host keeps it and passes it back (protocol.md D.1).
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

/// The leases of one check that still need cleaning up.
#[derive(Debug, Default)]
pub struct Ledger {
    live: Vec<Lease>,
}

impl Ledger {
    /// Records a lease the check holds.
    pub fn track(&mut self, lease: Lease) {
        self.live.push(lease);
    }

    /// Forgets a lease the check already destroyed itself.
    pub fn forget(&mut self, id: &str) {
        self.live.retain(|l| l.id != id);
    }

    /// The leases still held, emptying the ledger.
    pub fn take_live(&mut self) -> Vec<Lease> {
        std::mem::take(&mut self.live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_need_a_provider_lease_id() {
        assert_eq!(Lease::from_result(&json!({"providerLeaseId": null})), None);
        assert_eq!(Lease::from_result(&json!({"providerLeaseId": ""})), None);
        let lease = Lease::from_result(&json!({"providerLeaseId": "l1"})).unwrap();
        assert_eq!(
            lease.to_value(),
            json!({"providerLeaseId": "l1", "metadata": {}, "expiresAt": null})
        );
        let mut ledger = Ledger::default();
        ledger.track(lease.clone());
        ledger.track(Lease { id: "l2".into(), ..lease });
        ledger.forget("l1");
        assert_eq!(ledger.take_live().len(), 1);
        assert!(ledger.take_live().is_empty());
    }
}
