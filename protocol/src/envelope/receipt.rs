//! Termination receipts of release, destroy and stop:
//! `{"providerLeaseId": …, "state": "stopped"|"destroyed"}`, accepted by the host only for the
//! exact lease (`remoteTerminationReceipt`, npm @paperclipai/server 2026.916.1).

use serde_json::Value;

pub use crate::methods::lease::{TerminationReceipt as Receipt, TerminationState};

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
    Ok(Receipt::new(lease_provider_lease_id, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
