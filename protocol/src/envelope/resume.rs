//! What the host makes of an `environmentResumeLease` result.

use serde_json::Value;

wire_enum! {
    /// Why the host replaces a reusable lease that did not resume.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ReplacementReason {
        /// `identity_mismatch`: `metadata.workspaceSentinel` is an object whose `result` is not
        /// `"matched"`.
        IdentityMismatch = "identity_mismatch",
        /// `not_found`: `metadata.expired === true`.
        NotFound = "not_found",
        /// `expired`: any other non-resumed result.
        Expired = "expired",
    }
}

/// The host's reading of a resume result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeOutcome {
    /// `providerLeaseId` is a non-empty string: the lease resumed.
    Resumed,
    /// Not resumable: the host destroys the stale lease and acquires a fresh one.
    Replace(ReplacementReason),
    /// `null` (a void answer): the host's property read throws, which fails the resume and
    /// preserves the lease (`ReusableSandboxResumeError`).
    Failed,
}

fn is_record(value: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
    value.and_then(Value::as_object)
}

/// How the host reads a resume result (HOST-2026-09).
pub fn resume_outcome(result: &Value) -> ResumeOutcome {
    if result.is_null() {
        return ResumeOutcome::Failed;
    }
    if result.get("providerLeaseId").and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
        return ResumeOutcome::Resumed;
    }
    let metadata = result.get("metadata");
    let sentinel = is_record(metadata.and_then(|m| m.get("workspaceSentinel")));
    let reason =
        if sentinel.is_some_and(|s| s.get("result").and_then(Value::as_str) != Some("matched")) {
            ReplacementReason::IdentityMismatch
        } else if metadata.and_then(|m| m.get("expired")).and_then(Value::as_bool) == Some(true) {
            ReplacementReason::NotFound
        } else {
            ReplacementReason::Expired
        };
    ResumeOutcome::Replace(reason)
}

/// The replacement reason of a non-resumed result; `None` when the lease resumed
/// (`providerLeaseId` is a non-empty string) or the result is `null` (see [`resume_outcome`]).
pub fn resume_replacement_reason(result: &Value) -> Option<ReplacementReason> {
    match resume_outcome(result) {
        ResumeOutcome::Replace(reason) => Some(reason),
        ResumeOutcome::Resumed | ResumeOutcome::Failed => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes() {
        assert_eq!(resume_outcome(&json!({"providerLeaseId": "s"})), ResumeOutcome::Resumed);
        assert_eq!(resume_outcome(&json!(null)), ResumeOutcome::Failed);
        let matched = json!({"providerLeaseId": null,
            "metadata": {"workspaceSentinel": {"result": "matched"}, "expired": true}});
        assert_eq!(resume_replacement_reason(&matched), Some(ReplacementReason::NotFound));
        let array_sentinel = json!({"metadata": {"workspaceSentinel": []}});
        assert_eq!(resume_replacement_reason(&array_sentinel), Some(ReplacementReason::Expired));
        assert_eq!(resume_replacement_reason(&json!("x")), Some(ReplacementReason::Expired));
    }
}
