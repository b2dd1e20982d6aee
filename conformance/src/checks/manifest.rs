//! Manifest checks: validity for the profile, removed keys, declared-but-unverifiable
//! capabilities, and the native-sync flag pair (protocol.md C, E.1; decisions.md D1–D4).
//!
//! `manifest.valid` applies a minimal local rule set (the fields a sandbox provider needs)
//! until the protocol crate's validator is available; issues about removed capability keys are
//! left to `manifest.removed-keys`, so one mistake fails one check.

use paperclip_sandbox_protocol::capabilities::{is_removed_key, Capability, REMOVED_KEYS};
use paperclip_sandbox_protocol::HostProfile;
use serde_json::{Map, Value};

use crate::context::{fail, CheckResult, Ctx, Finding};

/// `^[a-z0-9][a-z0-9._-]*$`, the id and driver-key pattern (protocol.md C.1, C.2).
fn is_key(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// Driver declaration keys accepted by both profiles (the strict schema of C.2).
const DRIVER_KEYS: &[&str] = &[
    "driverKey",
    "kind",
    "displayName",
    "description",
    "supportsReusableLeases",
    "sandboxCapabilities",
    "supportsInteractiveSetup",
    "supportsTemplateCapture",
    "supportsTemplateDelete",
    "interactiveSetupConnectionTypes",
    "templateRefKind",
    "templateConfigBinding",
    "templateIdentityPaths",
    "supportsLoginPty",
    "supportsSetupTokenLogin",
    "configSchema",
];

fn validate_driver(
    i: usize,
    d: &Map<String, Value>,
    profile: HostProfile,
    issues: &mut Vec<String>,
) {
    let at = format!("environmentDrivers.{i}");
    match d.get("driverKey").and_then(Value::as_str) {
        Some(k) if is_key(k) => {}
        other => issues
            .push(format!("{at}.driverKey: must match ^[a-z0-9][a-z0-9._-]*$ (got {other:?})")),
    }
    if !d
        .get("displayName")
        .and_then(Value::as_str)
        .is_some_and(|s| (1..=100).contains(&s.chars().count()))
    {
        issues.push(format!("{at}.displayName: a string of 1 to 100 characters is required"));
    }
    match d.get("kind").map(|k| k.as_str()) {
        None | Some(Some("sandbox_provider" | "environment_driver")) => {}
        Some(_) => {
            issues.push(format!("{at}.kind: \"sandbox_provider\" or \"environment_driver\""))
        }
    }
    if !d.get("configSchema").is_some_and(Value::is_object) {
        issues.push(format!("{at}.configSchema: a JSON Schema object is required"));
    }
    for key in d.keys() {
        let november =
            matches!(key.as_str(), "defaultAcquireTimeoutMs" | "creationOperationVersion");
        let accepted = DRIVER_KEYS.contains(&key.as_str()) || (november && profile.is_november());
        if !accepted {
            issues.push(format!("{at}: unrecognized key {key:?} under {profile}"));
        }
    }
    if let Some(v) = d.get("defaultAcquireTimeoutMs").filter(|_| profile.is_november()) {
        if !v.as_u64().is_some_and(|n| (1..=86_400_000).contains(&n)) {
            issues.push(format!(
                "{at}.defaultAcquireTimeoutMs: an integer from 1 to 86400000 (D2), got {v}"
            ));
        }
    }
    if let Some(v) = d.get("creationOperationVersion").filter(|_| profile.is_november()) {
        if v.as_u64() != Some(1) {
            issues.push(format!(
                "{at}.creationOperationVersion: unsupported creation operation version {v} (D3)"
            ));
        }
    }
    match d.get("sandboxCapabilities") {
        None => {}
        Some(Value::Object(caps)) => {
            for (key, value) in caps {
                if REMOVED_KEYS.contains(&key.as_str()) {
                    continue; // judged by manifest.removed-keys
                }
                match Capability::from_key(key).filter(|c| c.in_profile(profile)) {
                    None => {
                        issues.push(format!("{at}.sandboxCapabilities: unrecognized key {key:?}"))
                    }
                    Some(_) if !value.is_boolean() => {
                        issues.push(format!("{at}.sandboxCapabilities.{key}: expected boolean"))
                    }
                    Some(_) => {}
                }
            }
        }
        Some(_) => issues.push(format!("{at}.sandboxCapabilities: an object is required")),
    }
}

/// The issues of a manifest under `profile` (empty when valid).
pub fn local_issues(manifest: &Value, profile: HostProfile) -> Vec<String> {
    let mut issues = vec![];
    let Some(m) = manifest.as_object() else {
        return vec!["the manifest must be a JSON object".into()];
    };
    if !m.get("id").and_then(Value::as_str).is_some_and(is_key) {
        issues.push("id: must match ^[a-z0-9][a-z0-9._-]*$".into());
    }
    if m.get("apiVersion") != Some(&Value::from(1)) {
        issues.push("apiVersion: must be 1".into());
    }
    for field in ["version", "displayName", "description", "author"] {
        if m.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            issues.push(format!("{field}: a non-empty string is required"));
        }
    }
    let worker = m.get("entrypoints").and_then(|e| e.get("worker")).and_then(Value::as_str);
    if worker.is_none_or(str::is_empty) {
        issues.push("entrypoints.worker: a non-empty string is required".into());
    }
    let drivers =
        m.get("environmentDrivers").and_then(Value::as_array).cloned().unwrap_or_default();
    let has_register = m
        .get("capabilities")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|v| v == "environment.drivers.register"));
    if !drivers.is_empty() && !has_register {
        issues.push("capabilities: Capability 'environment.drivers.register' is required when environmentDrivers are declared".into());
    }
    let mut keys = vec![];
    for (i, d) in drivers.iter().enumerate() {
        match d.as_object() {
            Some(d) => {
                validate_driver(i, d, profile, &mut issues);
                keys.extend(d.get("driverKey").and_then(Value::as_str));
            }
            None => issues.push(format!("environmentDrivers.{i}: an object is required")),
        }
    }
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != keys.len() {
        issues.push("environmentDrivers: Duplicate environment driver keys".into());
    }
    issues
}

fn manifest<'a>(ctx: &Ctx<'a>) -> &'a Value {
    ctx.env.manifest.as_ref().expect("the registry gates on the manifest")
}

/// MAN-1.
pub fn valid(ctx: &mut Ctx<'_>) -> CheckResult {
    let profile = ctx.env.options.profile;
    let issues = local_issues(manifest(ctx), profile);
    if issues.is_empty() {
        Ok(())
    } else {
        Err(fail(format!("a manifest valid under {profile}"), issues.join("; ")))
    }
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
        for key in caps.keys() {
            let accepted = Capability::from_key(key).is_some_and(|c| c.in_profile(profile));
            if is_removed_key(key, profile) || (REMOVED_KEYS.contains(&key.as_str()) && !accepted) {
                found.push(format!(
                    "environmentDrivers.{i}.sandboxCapabilities.{key}: removed from the contract (the runtime never read it)"
                ));
            }
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(fail(format!("no capability key removed under {profile}"), found.join("; ")))
    }
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
    if never.is_empty() {
        Ok(())
    } else {
        Err(fail(
            "every capability declared true is verified by supportedMethods",
            never.join("; "),
        ))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({"id":"acme.rust-sandbox","apiVersion":1,"version":"0.1.0","displayName":"Rust Sandbox",
          "description":"test","author":"Acme","categories":["automation"],
          "capabilities":["environment.drivers.register"],"entrypoints":{"worker":"./dist/worker.js"},
          "environmentDrivers":[{"driverKey":"rust-sbx","kind":"sandbox_provider","displayName":"Rust SBX",
            "configSchema":{"type":"object","properties":{}}}]})
    }

    #[test]
    fn local_rules_follow_the_vectors_that_matter() {
        let p11 = HostProfile::Paperclip2026_11;
        let p09 = HostProfile::Paperclip2026_09;
        assert!(local_issues(&base(), p11).is_empty());
        let mut m3 = base();
        m3["environmentDrivers"][0]["defaultAcquireTimeoutMs"] = json!(300000);
        assert!(local_issues(&m3, p11).is_empty());
        assert_eq!(local_issues(&m3, p09).len(), 1);
        let mut m8 = base();
        m8["environmentDrivers"][0]["driverKey"] = json!("Rust");
        assert_eq!(local_issues(&m8, p11).len(), 1);
        let mut m2 = base();
        m2["capabilities"] = json!(["http.outbound"]);
        assert_eq!(local_issues(&m2, p11).len(), 1);
        // Removed keys are left to manifest.removed-keys.
        let mut m6 = base();
        m6["environmentDrivers"][0]["sandboxCapabilities"] =
            json!({"concurrentSyncOperations": true});
        assert!(local_issues(&m6, p11).is_empty());
        let mut m7 = base();
        m7["environmentDrivers"][0]["sandboxCapabilities"] = json!({"nativeSyncIn": "yes"});
        assert_eq!(local_issues(&m7, p11).len(), 1);
    }
}
