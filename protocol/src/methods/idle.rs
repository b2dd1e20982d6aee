//! Idle sleep: `prepareIdleSleep` and `releaseIdleSleep` (`paperclip-2026-11`).
//!
//! Before it lets an idle worker sleep, the host asks it to prove that nothing runs in the
//! background. `prepareIdleSleep {ownerId, expiresAt}` asks; the worker answers the same
//! `ownerId` and `expiresAt` with `backgroundWork`:
//!
//! * `"none"`: the worker is quiescent and now **sealed**: every other call (requests,
//!   notifications, its own worker→host calls) is refused until the matching
//!   `releaseIdleSleep {ownerId}` arrives or the hold expires at `expiresAt`;
//! * `"present"`: work is running (or the worker cannot be sealed); the worker stays open;
//! * `"unknown"`: the request or the check could not be trusted; the worker stays open.
//!
//! A `releaseIdleSleep` whose `ownerId` is not the current hold's is ignored (a stale owner
//! cannot unseal another owner's hold). The pair is advertised in `supportedMethods` only by a
//! worker that implements an idle-drain hook, but every worker answers `prepareIdleSleep`
//! (`"present"` without the hook) and accepts `releaseIdleSleep`, as the upstream SDK does.
//!
//! The request rules (owner non-empty, deadline in the future and at most
//! [`MAX_IDLE_HOLD_MS`] away) are [`PrepareIdleSleepParams::is_acceptable_at`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest hold a worker accepts, in milliseconds from now: a `prepareIdleSleep` whose
/// `expiresAt` is further away is answered `"unknown"` without sealing.
pub const MAX_IDLE_HOLD_MS: i64 = 300_000;

/// The message of a call refused while the worker is sealed for idle sleep.
pub const IDLE_SEALED_MESSAGE: &str = "Plugin is held for idle sleep";

/// Params of `prepareIdleSleep`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PrepareIdleSleepParams {
    /// The host's opaque owner of the hold; only a release with this owner unseals.
    pub owner_id: String,
    /// When the hold ends on its own, in epoch milliseconds.
    pub expires_at: i64,
}

impl PrepareIdleSleepParams {
    /// A hold for `owner_id` until `expires_at` (epoch milliseconds).
    pub fn new(owner_id: impl Into<String>, expires_at: i64) -> Self {
        PrepareIdleSleepParams { owner_id: owner_id.into(), expires_at }
    }

    /// True when a worker may seal for this request at `now_ms` (epoch milliseconds): the
    /// owner is non-empty and the deadline is after `now_ms` and at most [`MAX_IDLE_HOLD_MS`]
    /// after it. Otherwise the answer is `"unknown"`.
    pub fn is_acceptable_at(&self, now_ms: i64) -> bool {
        !self.owner_id.is_empty()
            && self.expires_at > now_ms
            && self.expires_at <= now_ms.saturating_add(MAX_IDLE_HOLD_MS)
    }

    /// The answer to this request: the same owner and deadline with `background_work`.
    pub fn answer(&self, background_work: BackgroundWork) -> PrepareIdleSleepResult {
        PrepareIdleSleepResult {
            owner_id: self.owner_id.clone(),
            expires_at: self.expires_at,
            background_work,
        }
    }
}

/// Whether a worker has background work, as an idle-drain check reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackgroundWork {
    /// Quiescent: nothing runs and nothing can start until the hold ends.
    None,
    /// Work is running or may start (a command, an open session, a timer).
    Present,
    /// The check failed or could not be trusted; sleep is blocked.
    Unknown,
}

impl BackgroundWork {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            BackgroundWork::None => "none",
            BackgroundWork::Present => "present",
            BackgroundWork::Unknown => "unknown",
        }
    }
}

/// Result of `prepareIdleSleep`: the request's owner and deadline, echoed, and the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PrepareIdleSleepResult {
    /// The request's `ownerId`.
    pub owner_id: String,
    /// The request's `expiresAt`.
    pub expires_at: i64,
    /// The verdict; only `"none"` seals the worker.
    pub background_work: BackgroundWork,
}

/// Params of `releaseIdleSleep` (request or notification; the result is `null`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReleaseIdleSleepParams {
    /// The owner whose hold ends; any other owner's release is ignored.
    pub owner_id: String,
}

impl ReleaseIdleSleepParams {
    /// A release for `owner_id`.
    pub fn new(owner_id: impl Into<String>) -> Self {
        ReleaseIdleSleepParams { owner_id: owner_id.into() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn prepare_wire_and_echo() {
        let p: PrepareIdleSleepParams =
            from_json(json!({"ownerId": "o1", "expiresAt": 1_800_000_000_000_i64, "x": 1}));
        assert_eq!(p, PrepareIdleSleepParams::new("o1", 1_800_000_000_000));
        let r = p.answer(BackgroundWork::Present);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"ownerId": "o1", "expiresAt": 1_800_000_000_000_i64, "backgroundWork": "present"})
        );
        let back: PrepareIdleSleepResult =
            from_json(json!({"ownerId": "o1", "expiresAt": 5, "backgroundWork": "none"}));
        assert_eq!(back.background_work, BackgroundWork::None);
        assert!(serde_json::from_value::<PrepareIdleSleepResult>(
            json!({"ownerId": "o1", "expiresAt": 5, "backgroundWork": "maybe"})
        )
        .is_err());
        assert!(serde_json::from_value::<PrepareIdleSleepParams>(json!({"ownerId": "o1"})).is_err());
    }

    #[test]
    fn acceptable_holds() {
        let now = 1_000_000;
        assert!(PrepareIdleSleepParams::new("o", now + 1).is_acceptable_at(now));
        assert!(PrepareIdleSleepParams::new("o", now + MAX_IDLE_HOLD_MS).is_acceptable_at(now));
        assert!(!PrepareIdleSleepParams::new("o", now + MAX_IDLE_HOLD_MS + 1).is_acceptable_at(now));
        assert!(!PrepareIdleSleepParams::new("o", now).is_acceptable_at(now));
        assert!(!PrepareIdleSleepParams::new("o", now - 5).is_acceptable_at(now));
        assert!(!PrepareIdleSleepParams::new("", now + 10).is_acceptable_at(now));
        assert!(!PrepareIdleSleepParams::new("o", i64::MIN).is_acceptable_at(now));
    }

    #[test]
    fn release_wire() {
        assert_eq!(
            serde_json::to_value(ReleaseIdleSleepParams::new("o1")).unwrap(),
            json!({"ownerId": "o1"})
        );
        assert_eq!(BackgroundWork::Unknown.as_str(), "unknown");
    }
}
