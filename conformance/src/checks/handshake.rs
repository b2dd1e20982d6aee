//! Handshake checks: initialize, `supportedMethods`, a second initialize, and capability
//! honesty both ways.

use paperclip_sandbox_protocol::methods::{name, MethodFamily, MethodInfo, METHODS};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{json, Value};

use crate::context::{fail, no_problems, CheckResult, Ctx, Finding};
use crate::host::{clip, Reply, INITIALIZE_TIMEOUT};
use crate::ledger::Lease;

fn require_initialized(ctx: &Ctx<'_>) -> CheckResult {
    if ctx.facts.initialized() {
        Ok(())
    } else {
        Err(Finding::Skip("the worker did not initialize; see handshake.initialize".into()))
    }
}

/// INIT-1.
pub fn initialize(ctx: &mut Ctx<'_>) -> CheckResult {
    let facts = ctx.facts;
    let expected = "an initialize result with `ok: true` within 15 s";
    match &facts.init {
        Reply::Result(v) if v.get("ok") == Some(&Value::Bool(true)) => {
            if facts.init_elapsed > INITIALIZE_TIMEOUT {
                return Err(fail(
                    expected,
                    format!("answered after {} ms", facts.init_elapsed.as_millis()),
                ));
            }
            Ok(())
        }
        other => Err(fail(expected, other.describe())),
    }
}

/// INIT-2.
pub fn supported_methods(ctx: &mut Ctx<'_>) -> CheckResult {
    require_initialized(ctx)?;
    let Reply::Result(result) = &ctx.facts.init else { unreachable!("initialized") };
    match result.get("supportedMethods") {
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Ok(()),
        Some(other) => {
            Err(fail("`supportedMethods`: an array of strings", clip(&other.to_string())))
        }
        None => Err(fail(
            "`supportedMethods`: an array of strings",
            "absent (the host then verifies no capability and calls no optional method)",
        )),
    }
}

/// INIT-3.
pub fn second_initialize(ctx: &mut Ctx<'_>) -> CheckResult {
    require_initialized(ctx)?;
    let manifest = ctx.env.manifest.clone().unwrap_or_else(|| json!({}));
    let (reply, _) = ctx.session().initialize(&manifest);
    match reply {
        Reply::Error(_) => Ok(()),
        other => Err(fail("an error (\"Worker already initialized\")", other.describe())),
    }
}

/// Params that every environment method accepts well enough to answer: base params plus a
/// lease that does not exist and harmless operands.
fn probing_params(ctx: &Ctx<'_>, method: &str, missing: &Lease) -> Value {
    if method == name::ENVIRONMENT_VALIDATE_CONFIG {
        return json!({"driverKey": ctx.env.driver_key, "config": ctx.env.validate_config});
    }
    let mut p = ctx.lease_params(missing);
    for (k, v) in [
        ("providerLeaseId", json!(missing.id)),
        ("leaseMetadata", json!({})),
        ("runId", json!(crate::ids::uuid())),
        ("command", json!("true")),
        ("args", json!([])),
        ("timeoutMs", json!(10_000)),
        ("operations", json!([])),
        ("workspace", json!({})),
        ("port", json!(8080)),
        ("path", json!("/runner")),
        ("sessionId", json!(crate::ids::uuid())),
        ("templateRef", json!("pcconf-missing-template")),
    ] {
        p.insert(k.into(), v);
    }
    Value::Object(p)
}

/// The environment methods of the run's profile.
fn environment_methods(profile: HostProfile) -> impl Iterator<Item = &'static MethodInfo> {
    METHODS.iter().filter(move |m| m.family == MethodFamily::Environment && m.since <= profile)
}

/// Calls a method with probing params; a lease an acquire hands out goes into the ledger.
fn probe_method(ctx: &mut Ctx<'_>, method: &str, missing: &Lease) -> Reply {
    let params = probing_params(ctx, method, missing);
    let reply = ctx.session().call(method, params);
    if let Reply::Result(v) = &reply {
        if let Some(lease) =
            Lease::from_result(v).filter(|_| method == name::ENVIRONMENT_ACQUIRE_LEASE)
        {
            ctx.track(&lease);
        }
    }
    reply
}

fn missing_lease() -> Lease {
    Lease {
        id: format!("pcconf-missing-{}", crate::ids::hex(8)),
        metadata: json!({}),
        expires_at: Value::Null,
    }
}

/// CAP-HONEST-1.
pub fn advertised_implemented(ctx: &mut Ctx<'_>) -> CheckResult {
    require_initialized(ctx)?;
    let missing = missing_lease();
    let mut bad = vec![];
    for m in environment_methods(HostProfile::Paperclip2026_11) {
        if !ctx.facts.advertises(m.name) {
            continue;
        }
        let reply = probe_method(ctx, m.name, &missing);
        match reply {
            Reply::Result(_) => {}
            Reply::Error(ref e) if e.code != -32004 && e.code != -32601 => {}
            other => bad.push(format!("{}: {}", m.name, other.describe())),
        }
    }
    no_problems(&bad, "every advertised method answers something other than -32004/-32601")
}

/// CAP-HONEST-2.
pub fn unadvertised_not_implemented(ctx: &mut Ctx<'_>) -> CheckResult {
    require_initialized(ctx)?;
    let missing = missing_lease();
    let mut bad = vec![];
    for m in environment_methods(ctx.env.options.profile) {
        if ctx.facts.advertises(m.name) {
            continue;
        }
        let november_only = m.since == HostProfile::Paperclip2026_11;
        let reply = probe_method(ctx, m.name, &missing);
        match reply.error_code() {
            Some(-32004) => {}
            Some(-32601) if november_only => ctx.notes.push(format!(
                "{} answered -32601: tolerated for a November-only method (a worker built on the September SDK does not know it)",
                m.name
            )),
            _ => bad.push(format!("{}: {}", m.name, reply.describe())),
        }
    }
    no_problems(&bad, "every known method missing from supportedMethods answers -32004")
}

/// SYNC-PAIR-1.
pub fn sync_pair(ctx: &mut Ctx<'_>) -> CheckResult {
    require_initialized(ctx)?;
    let sync_in = ctx.facts.advertises(name::ENVIRONMENT_SYNC_IN);
    let sync_out = ctx.facts.advertises(name::ENVIRONMENT_SYNC_OUT);
    if sync_in == sync_out {
        return Ok(());
    }
    let (has, lacks) = if sync_in {
        (name::ENVIRONMENT_SYNC_IN, name::ENVIRONMENT_SYNC_OUT)
    } else {
        (name::ENVIRONMENT_SYNC_OUT, name::ENVIRONMENT_SYNC_IN)
    };
    Err(fail(
        "environmentSyncIn and environmentSyncOut both or neither (\"Define both or neither\")",
        format!("{has} is advertised without {lacks}; the host would fall back to base64-over-exec for every transfer"),
    ))
}
