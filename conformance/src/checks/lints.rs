//! Contract lints from the manifest and the config schema: combinations that are valid JSON
//! but that the host never acts on, so a provider built around them misbehaves in production.

use paperclip_sandbox_protocol::capabilities::Capability;
use serde_json::Value;

use crate::context::{fail, CheckResult, Ctx};

/// Whether a JSON Schema (object) offers `key` as a property, at any depth of `properties`.
fn offers(schema: &Value, key: &str) -> bool {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return false };
    props.contains_key(key) || props.values().any(|p| offers(p, key))
}

/// CAP-LINT-1: a config schema that offers `reuseLease` while `reusableLeases` is not declared
/// true. The host only resumes a lease of a provider that declares it (the lease policy is
/// `reuse_by_environment` only then), so a provider that keeps the sandbox alive on release
/// because the config says `reuseLease` strands it.
pub fn reuse_lease_offered(ctx: &mut Ctx<'_>) -> CheckResult {
    let schema =
        ctx.env.driver.as_ref().and_then(|d| d.get("configSchema")).cloned().unwrap_or(Value::Null);
    if !offers(&schema, "reuseLease") {
        return Ok(());
    }
    let declared = ctx.facts.declared.get(Capability::ReusableLeases.key()).cloned();
    if declared == Some(Value::Bool(true)) {
        return Ok(());
    }
    Err(fail(
        "a config schema offers `reuseLease` only when the driver declares reusableLeases: true",
        format!(
            "configSchema offers reuseLease, reusableLeases is {}: the host never resumes such a \
             lease, so keeping it alive on release strands it",
            declared.map_or("not declared".into(), |v| v.to_string())
        ),
    ))
}
