//! Run-wide checks on what the worker sent: only allowlisted `error.data` envelopes
//! (protocol.md B, F.2; decisions.md D6) and no planted secret anywhere (protocol.md A.7, H.4).
//!
//! The envelope check reads the schema key and the allowed top-level keys of each envelope, and
//! the methods each envelope belongs to.

use paperclip_sandbox_protocol::methods::name;
use serde_json::Value;

use crate::context::{fail, CheckResult, Ctx};
use crate::host::clip;
use crate::transcript::Direction;

/// The creation-cleanup envelope schema (protocol.md F.1).
pub const CREATION_CLEANUP_SCHEMA: &str = "paperclip/environment-creation-cleanup/v1";
/// The sync diagnostic schema (protocol.md B).
pub const SYNC_ERROR_SCHEMA: &str = "paperclip/environment-sync-error/v1";
/// The stop error schema (decisions.md D6).
pub const STOP_ERROR_SCHEMA: &str = "paperclip/environment-stop-error/v1";

/// An allowlisted envelope: its schema, its allowed keys and the methods it may answer
/// (`None`: any method, where the contract does not say).
struct Allowed {
    schema: &'static str,
    keys: &'static [&'static str],
    methods: Option<&'static [&'static str]>,
}

const ALLOWED: &[Allowed] = &[
    Allowed {
        schema: CREATION_CLEANUP_SCHEMA,
        keys: &["schema", "cleanup", "acquisitionDiagnostic"],
        methods: Some(&[name::ENVIRONMENT_ACQUIRE_LEASE, name::ENVIRONMENT_DESTROY_LEASE]),
    },
    Allowed { schema: SYNC_ERROR_SCHEMA, keys: &["schema", "diagnostic"], methods: None },
    Allowed {
        schema: STOP_ERROR_SCHEMA,
        keys: &["schema", "reason"],
        methods: Some(&[name::ENVIRONMENT_STOP_LEASE]),
    },
];

/// Why `data` (answering `method`) is not an allowlisted envelope, or `None` when it is.
pub fn envelope_problem(data: &Value, method: Option<&str>) -> Option<String> {
    let Some(obj) = data.as_object() else { return Some("error.data is not an object".into()) };
    let schema = obj.get("schema").and_then(Value::as_str).unwrap_or_default();
    let Some(allowed) = ALLOWED.iter().find(|a| a.schema == schema) else {
        return Some(format!("unknown schema {schema:?}"));
    };
    if let Some(extra) = obj.keys().find(|k| !allowed.keys.contains(&k.as_str())) {
        return Some(format!("key {extra:?} is not allowed in {schema}"));
    }
    if let (Some(methods), Some(method)) = (allowed.methods, method) {
        if !methods.contains(&method) {
            return Some(format!("{schema} is not sent on {method}"));
        }
    }
    if schema == CREATION_CLEANUP_SCHEMA
        && method != Some(name::ENVIRONMENT_ACQUIRE_LEASE)
        && obj.contains_key("acquisitionDiagnostic")
    {
        return Some("acquisitionDiagnostic is only sent on environmentAcquireLease".into());
    }
    None
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
    if bad.is_empty() {
        Ok(())
    } else {
        Err(fail("error.data absent or an allowlisted envelope", bad.join("; ")))
    }
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
        let cleanup = json!({"schema": CREATION_CLEANUP_SCHEMA, "cleanup": {}});
        assert_eq!(envelope_problem(&cleanup, Some("environmentAcquireLease")), None);
        assert!(envelope_problem(&cleanup, Some("environmentProbe")).is_some());
        let leaky = json!({"schema": SYNC_ERROR_SCHEMA, "diagnostic": {}, "stderr": "x"});
        assert!(envelope_problem(&leaky, Some("environmentSyncIn")).unwrap().contains("stderr"));
        assert!(envelope_problem(&json!({"foo": 1}), None).is_some());
        let diag =
            json!({"schema": CREATION_CLEANUP_SCHEMA, "cleanup": {}, "acquisitionDiagnostic": {}});
        assert!(envelope_problem(&diag, Some("environmentDestroyLease")).is_some());
    }

    #[test]
    fn masking_hides_secrets() {
        assert_eq!(mask("key pcsecret-1 here", &["pcsecret-1".into()]), "key <secret> here");
    }
}
