//! Lease lifecycle checks: validateConfig, probe, acquire (and its remote cwd), realize,
//! release, resume, destroy and stop. Every lease goes through the run's ledger.

use paperclip_sandbox_protocol::methods::{name, Method};
use serde_json::{json, Value};

use paperclip_sandbox_protocol::envelope::accept_termination_receipt;

use crate::context::{fail, CheckResult, Ctx};
use crate::host::{clip, Reply};
use crate::hostmodel::{self, Exec};
use crate::ledger::Lease;

fn show(v: &Value) -> String {
    clip(&v.to_string())
}

/// Checks a termination receipt with the host's acceptance rule: it names
/// `lease` and its state is one of `states`. A `null` result is accepted when `allow_void`.
fn receipt(result: &Value, lease: &Lease, states: &[&str], allow_void: bool) -> Result<(), String> {
    if result.is_null() && allow_void {
        return Ok(());
    }
    match accept_termination_receipt(result, &lease.id) {
        Ok(r) if states.contains(&r.state.as_str()) => Ok(()),
        Ok(_) => Err(format!("{}: state not in {states:?}", show(result))),
        Err(rejection) => Err(format!("{} ({rejection}; lease {:?})", show(result), lease.id)),
    }
}

/// The methods every run calls, with the SDK hook of each: the host acquires a lease, runs the
/// agent's commands in it, and releases it.
const LEASE_HOOKS: &[(Method, &str)] = &[
    (Method::EnvironmentAcquireLease, "acquire_lease"),
    (Method::EnvironmentExecute, "execute"),
    (Method::EnvironmentReleaseLease, "release_lease"),
];

/// LIFE-HOOKS-1: without these a host cannot use the provider at all, yet every check that
/// needs them would only be skipped; this check fails instead, naming what is missing.
pub fn lease_hooks(ctx: &mut Ctx<'_>) -> CheckResult {
    let missing: Vec<String> = LEASE_HOOKS
        .iter()
        .filter(|(method, _)| !ctx.facts.advertises(method.as_str()))
        .map(|(method, hook)| format!("{method} (SDK hook `{hook}`)"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(fail(
        "supportedMethods with environmentAcquireLease, environmentExecute and \
         environmentReleaseLease: a host acquires a lease for every run, runs commands in it and \
         releases it",
        format!(
            "missing {}: implement them (in the `#[provider]` impl block with the Rust SDK); the \
             checks that need them are skipped until then",
            missing.join(", ")
        ),
    ))
}

/// LIFE-VALIDATE-1.
pub fn validate_config(ctx: &mut Ctx<'_>) -> CheckResult {
    let params = json!({"driverKey": ctx.env.driver_key, "config": ctx.env.validate_config});
    let expected = "{ok: true, warnings?: string[], errors?: string[], normalizedConfig?: object}";
    let result = ctx.call_ok(name::ENVIRONMENT_VALIDATE_CONFIG, params, expected)?;
    let strings = |k: &str| {
        result.get(k).is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)))
    };
    let normalized_ok = result.get("normalizedConfig").is_none_or(Value::is_object);
    if result.get("ok") == Some(&Value::Bool(true))
        && strings("warnings")
        && strings("errors")
        && normalized_ok
    {
        Ok(())
    } else {
        Err(fail(expected, show(&result)))
    }
}

/// LIFE-PROBE-1: a check of shape, not of health. `{ok: false, summary}` is a conforming
/// answer (the backend is down); it is noted once, and later failures name it as the cause.
// Upstream packages/plugins/sdk/src/protocol.ts: `environmentProbe` answers
// `{ok: boolean, summary?, diagnostics?[{severity, message, code?, details?}], metadata?}`; the
// host shows `ok: false` to the operator as an unhealthy environment, it is not a protocol
// error. So the probe is judged on its shape only.
pub fn probe(ctx: &mut Ctx<'_>) -> CheckResult {
    let params = Value::Object(ctx.base_params());
    let expected = "{ok: boolean, summary?: string, diagnostics?: array, metadata?: object}";
    let result = ctx.call_ok(name::ENVIRONMENT_PROBE, params, expected)?;
    let shape_ok = result.get("ok").is_some_and(Value::is_boolean)
        && result.get("summary").is_none_or(|v| v.is_string() || v.is_null())
        && result.get("diagnostics").is_none_or(|v| v.is_array() || v.is_null())
        && result.get("metadata").is_none_or(|v| v.is_object() || v.is_null());
    if !shape_ok {
        return Err(fail(expected, show(&result)));
    }
    if result.get("ok") == Some(&Value::Bool(false)) {
        let summary = result
            .get("summary")
            .and_then(Value::as_str)
            .map_or_else(|| "no summary".to_owned(), clip);
        ctx.notes.push(format!("the backend is unreachable: probe answered ok: false ({summary})"));
        ctx.observations.lock().backend_down = Some(summary);
    }
    Ok(())
}

/// LIFE-ACQUIRE-1: acquired with the params the host sends.
pub fn acquire(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let expires_ok = lease.expires_at.is_null() || lease.expires_at.is_string();
    if !expires_ok {
        return Err(fail("expiresAt: an ISO string or null", show(&lease.expires_at)));
    }
    Ok(())
}

/// LIFE-CWD-1: the lease names its workspace in `metadata.remoteCwd`; without it the host runs
/// every command in `/tmp`.
pub fn remote_cwd(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    if hostmodel::names_remote_cwd(&lease) {
        return Ok(());
    }
    Err(fail(
        "metadata.remoteCwd: the lease's workspace directory (a non-empty string)",
        format!(
            "metadata {}: the host runs every command in {} and puts its runtime files there",
            show(&lease.metadata),
            hostmodel::DEFAULT_REMOTE_CWD
        ),
    ))
}

/// LIFE-REALIZE-1.
pub fn realize(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let cwd = ctx.realize(&lease)?;
    if cwd.is_none() {
        ctx.notes.push(format!(
            "no cwd in the realize result: the host records {:?} (metadata.remoteCwd, else the \
             workspace path)",
            hostmodel::remote_cwd(&lease)
        ));
    }
    Ok(())
}

/// LIFE-RELEASE-1.
///
// Upstream environment-runtime.ts (release): sent only when advertised, with
// `{…base, providerLeaseId, leaseMetadata}` and `cancelActiveWork` only when set, no
// runStatus; the answer is void or a termination receipt for that lease.
pub fn release(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected =
        "null or a receipt {providerLeaseId: <the lease>, state: \"stopped\"|\"destroyed\"}";
    let result = ctx.call_ok(name::ENVIRONMENT_RELEASE_LEASE, params, expected)?;
    receipt(&result, &lease, &["stopped", "destroyed"], true).map_err(|a| fail(expected, a))
}

/// LIFE-RESUME-1.
pub fn resume_live(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected = format!("the lease back: {{providerLeaseId: {:?}, …}}", lease.id);
    let result = ctx.call_ok(name::ENVIRONMENT_RESUME_LEASE, params, &expected)?;
    if let Some(resumed) = Lease::from_result(&result) {
        ctx.track(&resumed);
    }
    match result.get("providerLeaseId").and_then(Value::as_str) {
        Some(id) if id == lease.id => Ok(()),
        _ => Err(fail(expected, show(&result))),
    }
}

/// LIFE-RESUME-2.
pub fn resume_destroyed(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    ctx.call_ok(
        name::ENVIRONMENT_DESTROY_LEASE,
        params.clone(),
        "environmentDestroyLease succeeds",
    )?;
    ctx.ledger.ended(&lease.id);
    let expected = "{providerLeaseId: null, metadata: {…}} (not resumable)";
    let result = ctx.call_ok(name::ENVIRONMENT_RESUME_LEASE, params, expected)?;
    let null_id = result.get("providerLeaseId") == Some(&Value::Null);
    let metadata_ok = result.get("metadata").is_none_or(Value::is_object);
    if !null_id || !metadata_ok {
        if let Some(resumed) = Lease::from_result(&result) {
            ctx.track(&resumed);
        }
        return Err(fail(expected, show(&result)));
    }
    if result.get("metadata").is_none() {
        ctx.notes.push("no metadata: the host derives the replacement reason `expired`".into());
    }
    Ok(())
}

/// LIFE-DESTROY-1.
pub fn destroy_idempotent(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected = "null or a receipt {providerLeaseId: <the lease>, state: \"destroyed\"}";
    let first = ctx
        .session()
        .call(name::ENVIRONMENT_DESTROY_LEASE, params.clone())
        .into_result()
        .map_err(|a| fail(expected, format!("first destroy: {a}")))?;
    ctx.ledger.ended(&lease.id);
    receipt(&first, &lease, &["destroyed"], true)
        .map_err(|a| fail(expected, format!("first destroy: {a}")))?;
    let second = ctx.call_ok(
        name::ENVIRONMENT_DESTROY_LEASE,
        params,
        "a second destroy of the same lease succeeds",
    )?;
    // A second destroy may answer `{state: "destroyed"}` without naming the lease (D.6).
    let id_ok = second.get("providerLeaseId").is_none_or(|v| v.as_str() == Some(lease.id.as_str()));
    let state_ok = second.get("state").is_none_or(|v| v == "destroyed");
    if !(second.is_null() || (second.is_object() && id_ok && state_ok)) {
        return Err(fail("second destroy: null or {state: \"destroyed\"}", show(&second)));
    }
    if !ctx.facts.advertises(name::ENVIRONMENT_EXECUTE) {
        return Ok(());
    }
    // A command on the destroyed lease: an error, never a command result (the host would take
    // a sandbox that is gone for a command that failed, and go on using it).
    let params = Exec::sh("true").params(ctx.facts, &lease, ctx.lease_params(&lease));
    match ctx.session().call(name::ENVIRONMENT_EXECUTE, params) {
        Reply::Result(v) => Err(fail(
            "environmentExecute on a destroyed lease answers an error",
            format!("a command result: {}", show(&v)),
        )),
        _ => Ok(()),
    }
}

/// LIFE-STOP-1.
///
// Upstream environment-runtime.ts (stop): needs advertisement, the receipt state must be
// "stopped", and the host resumes the stopped lease later only on the reuse path
// (reusableLeases effective); sandbox-stop-and-retain keeps the sandbox's files.
pub fn stop_keeps_files(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = crate::checks::execute::lease(ctx)?;
    let can_exec = ctx.facts.advertises(name::ENVIRONMENT_EXECUTE);
    let marker = format!("pcconf-stop-{}", crate::ids::hex(8));
    if can_exec {
        let r = ctx.exec(&lease, &Exec::sh(format!("printf kept > {marker}")))?;
        if r.get("exitCode") != Some(&json!(0)) {
            return Err(fail("writing a marker file before stop succeeds", show(&r)));
        }
    }
    let mut params = ctx.lease_id_params(&lease);
    params.insert("cancelActiveWork".into(), json!(true));
    params.insert("resourceDisposition".into(), json!("stop_and_retain"));
    let expected = "a receipt {providerLeaseId: <the lease>, state: \"stopped\"}";
    let result = ctx.call_ok(name::ENVIRONMENT_STOP_LEASE, Value::Object(params), expected)?;
    receipt(&result, &lease, &["stopped"], false).map_err(|a| fail(expected, a))?;
    // The host resumes a stopped lease only when reusableLeases is effective.
    let resumable =
        hostmodel::host_makes(hostmodel::HostCall::Resume, ctx.facts, ctx.env.options.profile)
            .is_ok();
    if !can_exec || !resumable {
        ctx.notes.push(
            "files not verified: needs environmentExecute and an effective reusableLeases (the \
             host resumes a stopped lease only then)"
                .into(),
        );
        return Ok(());
    }
    let params = Value::Object(ctx.lease_id_params(&lease));
    let resumed =
        ctx.call_ok(name::ENVIRONMENT_RESUME_LEASE, params, "the stopped lease resumes")?;
    let lease = Lease::from_result(&resumed)
        .ok_or_else(|| fail("the stopped lease resumes", show(&resumed)))?;
    ctx.track(&lease);
    let r = ctx.exec(&lease, &Exec::sh(format!("cat {marker}")))?;
    if r.get("stdout") == Some(&json!("kept")) {
        Ok(())
    } else {
        Err(fail(format!("the file {marker} written before stop is still there"), show(&r)))
    }
}
