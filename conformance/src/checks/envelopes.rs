//! Run-wide checks on what the worker sent: only allowlisted `error.data` envelopes
//! and no planted secret anywhere.
//!
//! Envelopes are judged with the protocol crate's readers: an envelope is allowlisted when the
//! host's reader accepts it and rebuilding it from what the reader kept gives back exactly the
//! data sent (so no extra key, at any depth, and the per-method gating of F.2 and C3/C4).

use paperclip_sandbox_protocol::envelope::creation_cleanup::{
    creation_cleanup_data, read_creation_cleanup_envelope,
};
use paperclip_sandbox_protocol::envelope::{
    read_stop_error, read_sync_error, stop_error_data, CREATION_CLEANUP_SCHEMA, STOP_ERROR_SCHEMA,
    SYNC_ERROR_SCHEMA,
};
use paperclip_sandbox_protocol::methods::name;
use serde_json::Value;

use crate::context::{fail, no_problems, CheckResult, Ctx};
use crate::host::clip;
use crate::transcript::Direction;

/// Why `data` (answering `method`) is not an allowlisted envelope, or `None` when it is.
pub fn envelope_problem(data: &Value, method: Option<&str>) -> Option<String> {
    let schema = data.get("schema").and_then(Value::as_str).unwrap_or_default();
    let rebuilt = match schema {
        CREATION_CLEANUP_SCHEMA => {
            let Some(envelope) = read_creation_cleanup_envelope(data) else {
                return Some("the creation-cleanup reader rejects it (F.2)".into());
            };
            let method = method.unwrap_or(name::ENVIRONMENT_ACQUIRE_LEASE);
            let Some(rebuilt) =
                creation_cleanup_data(method, &envelope.ownership, envelope.diagnostic.as_ref())
            else {
                return Some(format!("a creation-cleanup envelope is never sent on {method}"));
            };
            rebuilt
        }
        SYNC_ERROR_SCHEMA => match read_sync_error(data).and_then(|d| d.to_data()) {
            Some(rebuilt) => rebuilt,
            None => return Some("the sync-error reader rejects it".into()),
        },
        STOP_ERROR_SCHEMA => {
            if method.is_some_and(|m| m != name::ENVIRONMENT_STOP_LEASE) {
                return Some(format!(
                    "a stop error is only sent on {}",
                    name::ENVIRONMENT_STOP_LEASE
                ));
            }
            match read_stop_error(data) {
                Some(reason) => stop_error_data(reason),
                None => return Some("the stop-error reader rejects it (D6)".into()),
            }
        }
        other => return Some(format!("unknown schema {other:?}")),
    };
    (rebuilt != *data).then(|| {
        format!(
            "it carries more than the allowlisted fields (the host keeps only {})",
            clip(&rebuilt.to_string())
        )
    })
}

/// ENV-ALLOW-1.
pub fn allowlisted(ctx: &mut Ctx<'_>) -> CheckResult {
    let seen = ctx.observations.lock();
    let mut bad = vec![];
    for e in &seen.errors {
        let Some(data) = &e.error.data else { continue };
        if let Some(problem) = envelope_problem(data, e.method.as_deref()) {
            let method = e.method.as_deref().unwrap_or("an unknown request");
            bad.push(format!("{method}: {problem}: {}", clip(&data.to_string())));
        }
    }
    no_problems(&bad, "error.data absent or an allowlisted envelope")
}

/// Replaces every secret in `text` by `<secret>`.
fn mask(text: &str, secrets: &[String]) -> String {
    secrets.iter().fold(text.to_owned(), |t, s| t.replace(s.as_str(), "<secret>"))
}

/// SECRET-1: every stdout and stderr line of every worker of the run.
pub fn no_secret_leak(ctx: &mut Ctx<'_>) -> CheckResult {
    let secrets = &ctx.env.secrets;
    let seen = ctx.observations.lock();
    let mut leaks = vec![];
    for transcript in &seen.transcripts {
        for entry in transcript.entries() {
            if entry.dir == Direction::Send
                || !secrets.iter().any(|s| entry.line.contains(s.as_str()))
            {
                continue;
            }
            let stream = if entry.dir == Direction::Stderr { "stderr" } else { "stdout" };
            leaks.push(format!(
                "{} worker {stream} at {} ms: {}",
                transcript.label(),
                entry.t_ms,
                clip(&mask(&entry.line, secrets))
            ));
        }
    }
    if leaks.is_empty() {
        Ok(())
    } else {
        Err(fail(
            "no planted secret in any worker output",
            format!("{} leak(s); {}", leaks.len(), leaks.join("; ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes_are_judged_by_schema_keys_and_method() {
        let ownership = json!({"providerLeaseId": "paperclip-create-attempt-1",
            "companyId": "company-1", "environmentId": "environment-1", "runId": "run-1",
            "attemptId": "attempt-1", "accountFingerprint": "a".repeat(64),
            "labels": {"paperclip-provider": "daytona"}});
        let cleanup = json!({"schema": CREATION_CLEANUP_SCHEMA, "cleanup": ownership});
        assert_eq!(envelope_problem(&cleanup, Some("environmentAcquireLease")), None);
        assert!(envelope_problem(&cleanup, Some("environmentProbe")).is_some());
        let mut leaky_cleanup = cleanup.clone();
        leaky_cleanup["cleanup"]["accessToken"] = json!("secret-token");
        assert!(envelope_problem(&leaky_cleanup, Some("environmentAcquireLease")).is_some());
        let sync = json!({"schema": SYNC_ERROR_SCHEMA, "diagnostic": {"errorCode": "ENOSPC"}});
        assert_eq!(envelope_problem(&sync, Some("environmentSyncIn")), None);
        let mut leaky = sync.clone();
        leaky["stderr"] = json!("x");
        assert!(envelope_problem(&leaky, Some("environmentSyncIn")).is_some());
        assert!(envelope_problem(&json!({"foo": 1}), None).is_some());
        let stop = json!({"schema": STOP_ERROR_SCHEMA, "reason": "busy"});
        assert_eq!(envelope_problem(&stop, Some("environmentStopLease")), None);
        assert!(envelope_problem(&stop, Some("environmentProbe")).is_some());
    }

    #[test]
    fn masking_hides_secrets() {
        assert_eq!(mask("key pcsecret-1 here", &["pcsecret-1".into()]), "key <secret> here");
    }
}
