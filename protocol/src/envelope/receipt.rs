//! Termination receipts of release, destroy and stop (protocol.md D.1, P7):
//! `{"providerLeaseId": …, "state": "stopped"|"destroyed"}`, accepted by the host only for the
//! exact lease (`remoteTerminationReceipt`, npm @paperclipai/server 2026.916.1).

use std::fmt;

use serde_json::{json, Value};

/// The confirmed end state of a provider allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminationState {
    /// `stopped`: execution ended, files kept.
    Stopped,
    /// `destroyed`: the allocation is gone.
    Destroyed,
}

impl TerminationState {
    /// The wire value.
    pub const fn as_str(self) -> &'static str {
        match self {
            TerminationState::Stopped => "stopped",
            TerminationState::Destroyed => "destroyed",
        }
    }

    /// The state of a wire value.
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "stopped" => Some(TerminationState::Stopped),
            "destroyed" => Some(TerminationState::Destroyed),
            _ => None,
        }
    }
}

impl fmt::Display for TerminationState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An accepted termination receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The lease's provider lease id.
    pub provider_lease_id: String,
    /// The confirmed state.
    pub state: TerminationState,
}

impl Receipt {
    /// A `stopped` receipt for `provider_lease_id`.
    pub fn stopped(provider_lease_id: impl Into<String>) -> Self {
        Receipt { provider_lease_id: provider_lease_id.into(), state: TerminationState::Stopped }
    }

    /// A `destroyed` receipt for `provider_lease_id`.
    pub fn destroyed(provider_lease_id: impl Into<String>) -> Self {
        Receipt { provider_lease_id: provider_lease_id.into(), state: TerminationState::Destroyed }
    }

    /// The wire result `{providerLeaseId, state}`.
    pub fn to_json(&self) -> Value {
        json!({"providerLeaseId": self.provider_lease_id, "state": self.state.as_str()})
    }

    /// True when the receipt settles a stop-and-retain intent: only `stopped` does; a
    /// `destroyed` receipt leaves that cleanup pending (protocol.md D.7).
    pub fn settles_stop_and_retain(&self) -> bool {
        self.state == TerminationState::Stopped
    }
}

/// Why the host does not accept a result as a receipt. A rejected receipt on a
/// `cancelActiveWork` release sends the lease to `pending_cleanup`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiptRejection {
    /// The lease itself has no provider lease id, so no receipt can bind to it.
    #[error("the lease has no providerLeaseId, so no termination receipt can be accepted")]
    LeaseWithoutProviderLeaseId,
    /// The result is not an object (`null` for a void answer, or another JSON type).
    #[error("the result is not a termination receipt object (void results grant no receipt)")]
    NotAnObject,
    /// `providerLeaseId` is absent or differs from the lease's.
    #[error("receipt providerLeaseId must equal the lease's providerLeaseId")]
    ProviderLeaseIdMismatch,
    /// `state` is not `"stopped"` or `"destroyed"`.
    #[error("receipt state must be \"stopped\" or \"destroyed\"")]
    InvalidState,
}

/// Host acceptance of a release/destroy/stop result for the lease whose provider lease id is
/// `lease_provider_lease_id` (P7). The host's other preconditions (the lease has a run, its
/// provider is not `local`) are about the lease row, not the result, and are left to the caller.
///
/// `state` must be a JSON string; the host's `String(state)` would also accept, say,
/// `["stopped"]`, which this function rejects.
pub fn accept_termination_receipt(
    result: &Value,
    lease_provider_lease_id: &str,
) -> Result<Receipt, ReceiptRejection> {
    if lease_provider_lease_id.is_empty() {
        return Err(ReceiptRejection::LeaseWithoutProviderLeaseId);
    }
    let obj = result.as_object().ok_or(ReceiptRejection::NotAnObject)?;
    if obj.get("providerLeaseId").and_then(Value::as_str) != Some(lease_provider_lease_id) {
        return Err(ReceiptRejection::ProviderLeaseIdMismatch);
    }
    let state = obj
        .get("state")
        .and_then(Value::as_str)
        .and_then(TerminationState::from_wire)
        .ok_or(ReceiptRejection::InvalidState)?;
    Ok(Receipt { provider_lease_id: lease_provider_lease_id.to_owned(), state })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptance_rules() {
        let ok = accept_termination_receipt(&Receipt::destroyed("s").to_json(), "s").unwrap();
        assert!(!ok.settles_stop_and_retain());
        assert!(Receipt::stopped("s").settles_stop_and_retain());
        assert_eq!(
            accept_termination_receipt(&json!({"state": "destroyed"}), "s"),
            Err(ReceiptRejection::ProviderLeaseIdMismatch)
        );
        assert_eq!(
            accept_termination_receipt(&json!({"providerLeaseId": "", "state": "stopped"}), ""),
            Err(ReceiptRejection::LeaseWithoutProviderLeaseId)
        );
        assert_eq!(
            accept_termination_receipt(&json!({"providerLeaseId": "s", "state": ["stopped"]}), "s"),
            Err(ReceiptRejection::InvalidState)
        );
    }
}
