//! Typed `error.data` envelopes and host-side result validation.
//!
//! | Module | Contract |
//! |---|---|
//! | [`creation_cleanup`] | creation-cleanup ownership envelope, per-method gating (F.1, F.2) |
//! | [`diagnostic`] | acquisition diagnostic (F.5) |
//! | [`sync_error`] | sync diagnostic envelope: producer, builder, host reader (B) |
//! | [`stop_error`] | typed stop error of `environmentStopLease` |
//! | [`receipt`] | termination receipts (D.1, P7) |
//! | [`ingress`] | runner ingress endpoint validation (D.11, P6) |
//! | [`resume`] | resume outcome and replacement reason (D.5, P8) |
//!
//! Every reader builds a fresh value from allowlisted fields only, so no credential, config,
//! message or provider exception ever crosses. The envelopes are a November feature: the
//! `*_for_profile` builders never attach data under `paperclip-2026-09`.

pub mod creation_cleanup;
pub mod diagnostic;
pub mod ingress;
pub mod receipt;
pub mod resume;
pub mod stop_error;
pub mod sync_error;

pub use creation_cleanup::{
    creation_cleanup_data, creation_cleanup_data_for_profile, read_acquisition_diagnostic,
    read_acquisition_diagnostic_from_error, read_creation_cleanup,
    read_creation_cleanup_from_error, Ownership, OwnershipError, OwnershipFields,
    CREATION_CLEANUP_SCHEMA,
};
pub use diagnostic::{AcquisitionDiagnostic, AcquisitionPhase};
pub use ingress::{validate_runner_ingress, IngressRejection};
pub use receipt::{accept_termination_receipt, Receipt, ReceiptRejection, TerminationState};
pub use resume::{resume_replacement_reason, ReplacementReason};
pub use stop_error::{read_stop_error, stop_error_data, StopErrorReason, STOP_ERROR_SCHEMA};
pub use sync_error::{read_sync_error, sync_error_data, SyncDiagnostic, SYNC_ERROR_SCHEMA};

use serde_json::Value;

/// The largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// A JSON number that JavaScript's `Number.isSafeInteger` accepts (an integral float such as
/// `5.0` counts, as `JSON.parse` makes it `5`); `None` for fractions and every non-number.
pub(crate) fn as_integer(value: &Value) -> Option<i64> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i).then_some(i);
    }
    if n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}
