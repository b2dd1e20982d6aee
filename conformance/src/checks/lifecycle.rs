//! Lease lifecycle checks: validateConfig, probe, acquire, realize, release, resume, destroy
//! and stop (protocol.md D.1–D.8; decisions.md D6). Every lease comes from the check's ledger.

use paperclip_sandbox_protocol::methods::name;
use serde_json::{json, Value};

use paperclip_sandbox_protocol::envelope::accept_termination_receipt;

use crate::checks::execute::exec;
use crate::context::{fail, CheckResult, Ctx};
use crate::host::clip;
use crate::ledger::Lease;

fn show(v: &Value) -> String {
    clip(&v.to_string())
}

/// Checks a termination receipt with the host's acceptance rule (protocol.md D.1, P7): it names
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

/// LIFE-VALIDATE-1.
pub fn validate_config(ctx: &mut Ctx<'_>) -> CheckResult {
    let params = json!({"driverKey": ctx.env.driver_key, "config": ctx.env.validate_config});
    let expected = "{ok: true, warnings?: string[], errors?: string[], normalizedConfig?: object}";
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_VALIDATE_CONFIG, params)
        .into_result()
        .map_err(|a| fail(expected, a))?;
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

/// LIFE-PROBE-1.
pub fn probe(ctx: &mut Ctx<'_>) -> CheckResult {
    let params = Value::Object(ctx.base_params());
    let expected = "{ok: true, summary?, diagnostics?: array, metadata?}";
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_PROBE, params)
        .into_result()
        .map_err(|a| fail(expected, a))?;
    let diagnostics_ok = result.get("diagnostics").is_none_or(Value::is_array);
    if result.get("ok") == Some(&Value::Bool(true)) && diagnostics_ok {
        Ok(())
    } else {
        Err(fail(expected, show(&result)))
    }
}

/// LIFE-ACQUIRE-1.
pub fn acquire(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let expires_ok = lease.expires_at.is_null() || lease.expires_at.is_string();
    if !expires_ok {
        return Err(fail("expiresAt: an ISO string or null", show(&lease.expires_at)));
    }
    Ok(())
}

/// LIFE-REALIZE-1.
pub fn realize(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    ctx.realize(&lease)?;
    Ok(())
}

/// LIFE-RELEASE-1.
pub fn release(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected =
        "null or a receipt {providerLeaseId: <the lease>, state: \"stopped\"|\"destroyed\"}";
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_RELEASE_LEASE, params)
        .into_result()
        .map_err(|a| fail(expected, a))?;
    receipt(&result, &lease, &["stopped", "destroyed"], true).map_err(|a| fail(expected, a))
}

/// LIFE-RESUME-1.
pub fn resume_live(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    let expected = format!("the lease back: {{providerLeaseId: {:?}, …}}", lease.id);
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_RESUME_LEASE, params)
        .into_result()
        .map_err(|a| fail(&expected, a))?;
    match result.get("providerLeaseId").and_then(Value::as_str) {
        Some(id) if id == lease.id => Ok(()),
        _ => Err(fail(expected, show(&result))),
    }
}

/// LIFE-RESUME-2.
pub fn resume_destroyed(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let params = Value::Object(ctx.lease_id_params(&lease));
    ctx.session()
        .call(name::ENVIRONMENT_DESTROY_LEASE, params.clone())
        .into_result()
        .map_err(|a| fail("environmentDestroyLease succeeds", a))?;
    ctx.ledger.forget(&lease.id);
    let expected = "{providerLeaseId: null, metadata: {…}} (not resumable)";
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_RESUME_LEASE, params)
        .into_result()
        .map_err(|a| fail(expected, a))?;
    let null_id = result.get("providerLeaseId") == Some(&Value::Null);
    let metadata_ok = result.get("metadata").is_none_or(Value::is_object);
    if !null_id || !metadata_ok {
        if let Some(resumed) = Lease::from_result(&result) {
            ctx.ledger.track(resumed);
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
    ctx.ledger.forget(&lease.id);
    receipt(&first, &lease, &["destroyed"], true)
        .map_err(|a| fail(expected, format!("first destroy: {a}")))?;
    let second = ctx
        .session()
        .call(name::ENVIRONMENT_DESTROY_LEASE, params)
        .into_result()
        .map_err(|a| fail("a second destroy of the same lease succeeds", a))?;
    // A second destroy may answer `{state: "destroyed"}` without naming the lease (D.6).
    let id_ok = second.get("providerLeaseId").is_none_or(|v| v.as_str() == Some(lease.id.as_str()));
    let state_ok = second.get("state").is_none_or(|v| v == "destroyed");
    if second.is_null() || (second.is_object() && id_ok && state_ok) {
        Ok(())
    } else {
        Err(fail("second destroy: null or {state: \"destroyed\"}", show(&second)))
    }
}

/// LIFE-STOP-1.
pub fn stop_keeps_files(ctx: &mut Ctx<'_>) -> CheckResult {
    let lease = ctx.acquire()?;
    let can_exec = ctx.facts.advertises(name::ENVIRONMENT_EXECUTE);
    let cwd = if can_exec { ctx.realize(&lease)? } else { None };
    let marker = format!("pcconf-stop-{}", crate::ids::hex(8));
    if can_exec {
        let r = exec(ctx, &lease, cwd.as_deref(), &format!("printf kept > {marker}"), json!({}))?;
        if r.get("exitCode") != Some(&json!(0)) {
            return Err(fail("writing a marker file before stop succeeds", show(&r)));
        }
    }
    let mut params = ctx.lease_id_params(&lease);
    params.insert("cancelActiveWork".into(), json!(true));
    params.insert("resourceDisposition".into(), json!("stop_and_retain"));
    let expected = "a receipt {providerLeaseId: <the lease>, state: \"stopped\"}";
    let result = ctx
        .session()
        .call(name::ENVIRONMENT_STOP_LEASE, Value::Object(params))
        .into_result()
        .map_err(|a| fail(expected, a))?;
    receipt(&result, &lease, &["stopped"], false).map_err(|a| fail(expected, a))?;
    if !can_exec || !ctx.facts.advertises(name::ENVIRONMENT_RESUME_LEASE) {
        ctx.notes
            .push("files not verified: needs environmentExecute and environmentResumeLease".into());
        return Ok(());
    }
    let params = Value::Object(ctx.lease_id_params(&lease));
    let resumed = ctx
        .session()
        .call(name::ENVIRONMENT_RESUME_LEASE, params)
        .into_result()
        .map_err(|a| fail("the stopped lease resumes", a))?;
    let lease = Lease::from_result(&resumed)
        .ok_or_else(|| fail("the stopped lease resumes", show(&resumed)))?;
    let r = exec(ctx, &lease, cwd.as_deref(), &format!("cat {marker}"), json!({}))?;
    if r.get("stdout") == Some(&json!("kept")) {
        Ok(())
    } else {
        Err(fail(format!("the file {marker} written before stop is still there"), show(&r)))
    }
}
