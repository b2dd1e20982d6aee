//! Manifest checks: validity for the profile, removed keys, declared-but-unverifiable
//! capabilities, and the native-sync flag pair.
//!
//! `manifest.valid` uses the protocol crate's validator; its dedicated "removed" errors are
//! left to `manifest.removed-keys`, so one mistake fails one check.

use paperclip_sandbox_protocol::capabilities::{is_removed_key, Capability};
use paperclip_sandbox_protocol::manifest::{code, validate};
use serde_json::Value;

use crate::context::{fail, no_problems, CheckResult, Ctx, Finding};

fn manifest<'a>(ctx: &Ctx<'a>) -> &'a Value {
    ctx.env.manifest.as_ref().expect("the registry gates on the manifest")
}

/// MAN-1.
pub fn valid(ctx: &mut Ctx<'_>) -> CheckResult {
    let profile = ctx.env.options.profile;
    let report = validate(manifest(ctx), profile);
    let issues: Vec<String> = report
        .errors
        .iter()
        .filter(|issue| issue.code != code::REMOVED_CAPABILITY)
        .map(ToString::to_string)
        .collect();
    no_problems(&issues, format!("a manifest valid under {profile}"))
}

/// MAN-REMOVED-1.
pub fn removed_keys(ctx: &mut Ctx<'_>) -> CheckResult {
    let profile = ctx.env.options.profile;
    let mut found = vec![];
    let drivers = manifest(ctx)
        .get("environmentDrivers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, d) in drivers.iter().enumerate() {
        let Some(caps) = d.get("sandboxCapabilities").and_then(Value::as_object) else { continue };
        for key in caps.keys().filter(|k| is_removed_key(k, profile)) {
            found.push(format!(
                "environmentDrivers.{i}.sandboxCapabilities.{key}: removed from the contract (the runtime never read it)"
            ));
        }
    }
    no_problems(&found, format!("no capability key removed under {profile}"))
}
/// CAP-VERIFY-1.
pub fn capabilities_verified(ctx: &mut Ctx<'_>) -> CheckResult {
    if !ctx.facts.initialized() {
        return Err(Finding::Skip(
            "the worker did not initialize; see handshake.initialize".into(),
        ));
    }
    let mut never = vec![];
    for (key, value) in &ctx.facts.declared {
        let Some(capability) = Capability::from_key(key) else { continue };
        if value != &Value::Bool(true) || capability.verified_by(&ctx.facts.supported) {
            continue;
        }
        let missing: Vec<String> = capability
            .spec()
            .required
            .iter()
            .filter(|group| !group.iter().any(|m| ctx.facts.advertises(m)))
            .map(|group| group.join(" or "))
            .collect();
        never.push(format!(
            "{key}: true is declared but supportedMethods lacks {}, so it would never be granted",
            missing.join(" and ")
        ));
    }
    no_problems(&never, "every capability declared true is verified by supportedMethods")
}

/// SYNC-PAIR-2.
pub fn sync_flags_agree(ctx: &mut Ctx<'_>) -> CheckResult {
    let declared = &ctx.facts.declared;
    // An absent key defers to verification, which is the same as `true` here.
    let value = |key: &str| declared.get(key).cloned().unwrap_or(Value::Bool(true));
    let (a, b) = (value("nativeSyncIn"), value("nativeSyncOut"));
    if a == b {
        return Ok(());
    }
    Err(fail(
        "nativeSyncIn and nativeSyncOut declared with the same value",
        format!("nativeSyncIn: {a}, nativeSyncOut: {b} (absent counts as true)"),
    ))
}
