//! The typed stop error of `environmentStopLease`:
//! `{"schema":"paperclip/environment-stop-error/v1","reason": …}`.
//!
//! Seed 001 names `PluginEnvironmentStopError` but no published source shows its shape; this
//! envelope is the project's provisional rule, isolated here so that it can be replaced when
//! the November host code is published. It belongs to `paperclip-2026-11` only (the method
//! does not exist in `paperclip-2026-09`). No other field is ever added.

use std::str::FromStr;

use serde_json::{json, Value};

/// The `schema` string of the (provisional) stop-error envelope.
pub const STOP_ERROR_SCHEMA: &str = "paperclip/environment-stop-error/v1";

wire_enum! {
    /// Why a stop failed or could not be confirmed.
    #[derive(
        Debug,
        Clone,
        Copy,
        PartialEq,
        Eq,
        Hash,
        serde::Serialize,
        serde::Deserialize,
        schemars::JsonSchema,
    )]
    #[serde(rename_all = "snake_case")]
    #[non_exhaustive]
    pub enum StopErrorReason {
        /// `unrecoverable`: an unrecoverable provider error.
        Unrecoverable = "unrecoverable",
        /// `recovery_failed`: the sandbox is back in error after recovery.
        RecoveryFailed = "recovery_failed",
        /// `recovery_incomplete`: recovery did not finish.
        RecoveryIncomplete = "recovery_incomplete",
        /// `policy_unconfirmed`: the retention policy is unavailable or unconfirmed.
        PolicyUnconfirmed = "policy_unconfirmed",
        /// `busy`: the provider asks for a retry (for example while the sandbox is being deleted).
        Busy = "busy",
    }
    /// Every reason.
    const ALL;
}

impl StopErrorReason {
    /// The reason of a wire string, if known.
    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// The error of parsing an unknown stop-error reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stop error reason (expected unrecoverable, recovery_failed, recovery_incomplete, policy_unconfirmed or busy)")]
pub struct UnknownStopErrorReason;

impl FromStr for StopErrorReason {
    type Err = UnknownStopErrorReason;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StopErrorReason::ALL.into_iter().find(|r| r.as_str() == s).ok_or(UnknownStopErrorReason)
    }
}

/// The `error.data` of a typed stop error: `{schema, reason}`.
pub fn stop_error_data(reason: StopErrorReason) -> Value {
    json!({"schema": STOP_ERROR_SCHEMA, "reason": reason.as_str()})
}

/// Reads a stop-error `error.data` value: the reason, or `None` for another schema or an
/// unknown reason. Other keys are ignored.
pub fn read_stop_error(data: &Value) -> Option<StopErrorReason> {
    if data.get("schema").and_then(Value::as_str) != Some(STOP_ERROR_SCHEMA) {
        return None;
    }
    data.get("reason")?.as_str()?.parse().ok()
}

/// [`read_stop_error`] of an error object's `data` (`{data: {...}}`).
pub fn read_stop_error_from_error(error: &Value) -> Option<StopErrorReason> {
    read_stop_error(error.get("data")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejections() {
        for reason in StopErrorReason::ALL {
            let data = stop_error_data(reason);
            assert_eq!(data.as_object().unwrap().len(), 2);
            assert_eq!(read_stop_error(&data), Some(reason));
            assert_eq!(read_stop_error_from_error(&json!({"data": data})), Some(reason));
        }
        assert_eq!(read_stop_error(&json!({"schema": STOP_ERROR_SCHEMA, "reason": "Busy"})), None);
        assert_eq!(read_stop_error(&json!({"schema": "x", "reason": "busy"})), None);
        assert_eq!(read_stop_error(&json!(null)), None);
    }
}
