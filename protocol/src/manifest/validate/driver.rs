//! Rules of one environment driver declaration.

use serde_json::{Map, Value};

use super::patterns;
use super::zod::{self, Check, Ctx, Seg};
use crate::capabilities::{is_removed_key, Capability, CAPABILITIES, REMOVED_KEYS};
use crate::manifest::report::code;
use crate::manifest::vocabulary::{
    CREATION_OPERATION_VERSION, DRIVER_KINDS, MAX_DEFAULT_ACQUIRE_TIMEOUT_MS,
};

/// The message of the driver key pattern.
pub const DRIVER_KEY_MESSAGE: &str = "Environment driver key must start with a lowercase alphanumeric and contain only lowercase letters, digits, dots, hyphens, or underscores";
/// The message of the login alias rule.
pub const LOGIN_ALIAS_MESSAGE: &str = "supportsSetupTokenLogin is a deprecated alias for supportsLoginPty; the two flags must not carry different values";
const FIELD_PATTERN_MESSAGE: &str = "Template config binding fields must be top-level config keys using letters, digits, underscores, or hyphens";
const FIELD_PROVIDER_MESSAGE: &str =
    "Template config binding must not replace the sandbox provider key";
const UNSET_SAME_MESSAGE: &str = "Template config binding cannot unset the same field it sets";
const UNSET_UNIQUE_MESSAGE: &str = "Template config binding unsetFields must be unique";

/// The driver fields of `pluginEnvironmentDriverDeclarationSchema`, in declaration order.
pub(crate) const DRIVER_FIELDS: &[&str] = &[
    "driverKey",
    "kind",
    "displayName",
    "description",
    "supportsReusableLeases",
    "sandboxCapabilities",
    "supportsInteractiveSetup",
    "interactiveSetupConnectionTypes",
    "supportsTemplateCapture",
    "templateRefKind",
    "templateConfigBinding",
    "templateIdentityPaths",
    "supportsTemplateDelete",
    "supportsLoginPty",
    "supportsSetupTokenLogin",
    "configSchema",
];

/// The driver fields added by the 2026-11 contract and by the newest upstream SDK
/// (`supportsTasks`); the 2026-09 host's strict schema rejects them.
pub(crate) const NOVEMBER_FIELDS: &[&str] =
    &["supportsTasks", "defaultAcquireTimeoutMs", "creationOperationVersion"];

/// Validates `environmentDrivers.<i>`; the context path points at the driver.
pub(crate) fn check_driver(cx: &mut Ctx, v: &Value) {
    let Some(d) = zod::object(cx, Some(v)) else { return };
    let start = cx.issues.len();
    cx.key("driverKey", |cx| {
        zod::string(
            cx,
            d.get("driverKey"),
            &[Check::Min(1), Check::Pattern(patterns::is_key, DRIVER_KEY_MESSAGE)],
        );
    });
    zod::optional(cx, d, "kind", |cx, v| {
        zod::enumeration(cx, Some(v), DRIVER_KINDS);
    });
    cx.key("displayName", |cx| {
        zod::string(cx, d.get("displayName"), &[Check::Min(1), Check::Max(100)]);
    });
    zod::optional(cx, d, "description", |cx, v| {
        zod::string(cx, Some(v), &[Check::Max(500)]);
    });
    zod::opt_bool(cx, d, "supportsReusableLeases");
    zod::optional(cx, d, "sandboxCapabilities", check_capabilities);
    zod::opt_bool(cx, d, "supportsInteractiveSetup");
    zod::optional(cx, d, "interactiveSetupConnectionTypes", |cx, v| {
        zod::array(cx, Some(v), &[Check::Max(10)], |cx, item| {
            zod::string(cx, Some(item), &[Check::Min(1), Check::Max(100)]);
        });
    });
    zod::opt_bool(cx, d, "supportsTemplateCapture");
    zod::optional(cx, d, "templateRefKind", |cx, v| {
        zod::string(cx, Some(v), &[Check::Min(1), Check::Max(100)]);
    });
    zod::optional(cx, d, "templateConfigBinding", check_binding);
    zod::optional(cx, d, "templateIdentityPaths", |cx, v| {
        zod::array(cx, Some(v), &[Check::Max(20)], |cx, item| {
            zod::string(cx, Some(item), &[Check::Min(1), Check::Max(200)]);
        });
    });
    zod::opt_bool(cx, d, "supportsTemplateDelete");
    zod::opt_bool(cx, d, "supportsLoginPty");
    zod::opt_bool(cx, d, "supportsSetupTokenLogin");
    cx.key("configSchema", |cx| zod::json_schema(cx, d.get("configSchema")));

    let november = cx.profile.is_november();
    if november {
        zod::opt_bool(cx, d, "supportsTasks");
        zod::optional(cx, d, "defaultAcquireTimeoutMs", check_acquire_timeout);
        zod::optional(cx, d, "creationOperationVersion", check_creation_version);
    }
    let known: Vec<&str> =
        DRIVER_FIELDS.iter().chain(if november { NOVEMBER_FIELDS } else { &[] }).copied().collect();
    zod::strict_keys(cx, d, &known);

    // superRefine: runs only when nothing above aborted.
    if !cx.aborted_since(start) {
        if let (Some(Value::Bool(pty)), Some(Value::Bool(alias))) =
            (d.get("supportsLoginPty"), d.get("supportsSetupTokenLogin"))
        {
            if pty != alias {
                cx.push_at(
                    &[Seg::Key("supportsLoginPty".into())],
                    code::CUSTOM,
                    LOGIN_ALIAS_MESSAGE,
                );
            }
        }
    }
    driver_warnings(cx, d);
}

/// `sandboxCapabilities`: strict, every value an optional boolean; the accepted keys come
/// from the capability table for the profile; removed keys get a dedicated error in 2026-11.
fn check_capabilities(cx: &mut Ctx, v: &Value) {
    let Some(caps) = zod::object(cx, Some(v)) else { return };
    let profile = cx.profile;
    let accepted: Vec<&str> = Capability::for_profile(profile).map(Capability::key).collect();
    for spec in CAPABILITIES.iter().filter(|s| accepted.contains(&s.key)) {
        zod::opt_bool(cx, caps, spec.key);
    }
    let mut unknown = Vec::new();
    for key in zod::js_key_order(caps) {
        if accepted.contains(&key) {
            continue;
        }
        if is_removed_key(key, profile) {
            cx.push(
                code::REMOVED_CAPABILITY,
                format!(
                    "sandboxCapabilities key \"{key}\" was removed from the capability contract in {profile}; delete it (the removed keys are {})",
                    REMOVED_KEYS.join(" and ")
                ),
                true,
            );
        } else {
            unknown.push(key);
        }
    }
    if !unknown.is_empty() {
        cx.push(code::UNRECOGNIZED_KEYS, zod::unrecognized_message(&unknown), true);
    }
}

/// `templateConfigBinding`: strict `{field, unsetFields?}` with its uniqueness rules.
fn check_binding(cx: &mut Ctx, v: &Value) {
    let Some(b) = zod::object(cx, Some(v)) else { return };
    let start = cx.issues.len();
    let field = cx.key("field", |cx| config_field(cx, b.get("field")));
    let mut unset: Vec<&str> = Vec::new();
    zod::optional(cx, b, "unsetFields", |cx, v| {
        if let Some(items) = zod::array(cx, Some(v), &[Check::Max(20)], |cx, item| {
            config_field(cx, Some(item));
        }) {
            unset = items.iter().filter_map(Value::as_str).collect();
        }
    });
    zod::strict_keys(cx, b, &["field", "unsetFields"]);
    if cx.aborted_since(start) {
        return;
    }
    for (i, f) in unset.iter().enumerate() {
        let at = [Seg::Key("unsetFields".into()), Seg::Index(i)];
        if Some(*f) == field {
            cx.push_at(&at, code::CUSTOM, UNSET_SAME_MESSAGE);
        }
        if unset[..i].contains(f) {
            cx.push_at(&at, code::CUSTOM, UNSET_UNIQUE_MESSAGE);
        }
    }
}

/// One template config field: 1–100 characters, the field pattern, not `provider`.
fn config_field<'v>(cx: &mut Ctx, v: Option<&'v Value>) -> Option<&'v str> {
    let s = zod::string(
        cx,
        v,
        &[
            Check::Min(1),
            Check::Max(100),
            Check::Pattern(patterns::is_config_field, FIELD_PATTERN_MESSAGE),
        ],
    )?;
    if s == "provider" {
        cx.push(code::CUSTOM, FIELD_PROVIDER_MESSAGE, true);
    }
    Some(s)
}

/// An integer from 1 to 86,400,000.
fn check_acquire_timeout(cx: &mut Ctx, v: &Value) {
    let rule = format!(
        "defaultAcquireTimeoutMs must be an integer number of milliseconds from 1 to {MAX_DEFAULT_ACQUIRE_TIMEOUT_MS}"
    );
    let Some(n) = v.as_f64() else {
        cx.push(code::INVALID_TYPE, format!("{rule}; got a {}", zod::type_name(Some(v))), false);
        return;
    };
    if n.fract() != 0.0 {
        cx.push(code::INVALID_TYPE, format!("{rule}; got {v}, which is not an integer"), false);
    } else if n < 1.0 {
        cx.push(code::TOO_SMALL, format!("{rule}; got {v}"), true);
    } else if n > MAX_DEFAULT_ACQUIRE_TIMEOUT_MS as f64 {
        cx.push(code::TOO_BIG, format!("{rule}; got {v}"), true);
    }
}

/// Exactly 1.
fn check_creation_version(cx: &mut Ctx, v: &Value) {
    match v.as_f64() {
        Some(n) if n == f64::from(CREATION_OPERATION_VERSION) => {}
        Some(_) => cx.push(
            code::UNSUPPORTED_VERSION,
            format!("unsupported creation operation version {v}: only version {CREATION_OPERATION_VERSION} is defined"),
            true,
        ),
        None => cx.push(
            code::INVALID_TYPE,
            format!(
                "unsupported creation operation version: expected the integer {CREATION_OPERATION_VERSION}, got a {}",
                zod::type_name(Some(v))
            ),
            false,
        ),
    }
}

/// Warnings: no `kind`, differing native sync flags (D4), extension keys in 2026-11 (D1).
fn driver_warnings(cx: &mut Ctx, d: &Map<String, Value>) {
    let name = d.get("driverKey").and_then(Value::as_str).unwrap_or("?");
    if !d.contains_key("kind") {
        cx.warn(
            &[Seg::Key("kind".into())],
            code::KIND_OMITTED,
            format!("driver \"{name}\" declares no kind; the host resolves only kind \"sandbox_provider\" drivers as sandbox providers"),
        );
    }
    let Some(Value::Object(caps)) = d.get("sandboxCapabilities") else { return };
    let at = |k: &str| [Seg::Key("sandboxCapabilities".into()), Seg::Key(k.into())];
    let (sync_in, sync_out) = (Capability::NativeSyncIn.key(), Capability::NativeSyncOut.key());
    if let (Some(Value::Bool(i)), Some(Value::Bool(o))) = (caps.get(sync_in), caps.get(sync_out)) {
        if i != o {
            cx.warn(
                &at(sync_out)[..1],
                code::NATIVE_SYNC_MISMATCH,
                format!("{sync_in} is {i} but {sync_out} is {o}; the host uses native sync only when both directions are available, so declare both or neither"),
            );
        }
    }
    if cx.profile.is_november() {
        for spec in CAPABILITIES.iter().filter(|s| s.extension) {
            if caps.contains_key(spec.key) {
                cx.warn(
                    &at(spec.key),
                    code::EXTENSION_CAPABILITY,
                    format!("{} is an extension key: accepted and resolved by the host, but not part of the {} capability contract", spec.key, cx.profile),
                );
            }
        }
    }
}
