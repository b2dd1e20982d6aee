//! One test per manifest rule, through the public API.

use paperclip_sandbox_protocol::capabilities::Capability;
use paperclip_sandbox_protocol::manifest::{
    code, validate, DriverDeclaration, Issue, Manifest, SandboxCapabilities, ValidationReport,
    DRIVERS_CAPABILITY_MESSAGE, JSON_SCHEMA_MESSAGE, LOGIN_ALIAS_MESSAGE,
};
use paperclip_sandbox_protocol::HostProfile::{
    self, Paperclip2026_09 as P09, Paperclip2026_11 as P11,
};
use serde_json::{json, Value};

mod common;
use common::base_manifest as base;

fn with(f: impl FnOnce(&mut Value)) -> Value {
    let mut m = base();
    f(&mut m);
    m
}

fn driver(f: impl FnOnce(&mut Value)) -> Value {
    with(|m| f(&mut m["environmentDrivers"][0]))
}

/// The errors as `(path, code)` pairs.
fn errs(report: &ValidationReport) -> Vec<(&str, &str)> {
    report.errors.iter().map(|e| (e.path.as_str(), e.code.as_str())).collect()
}

fn only_error(m: &Value, profile: HostProfile) -> Issue {
    let r = validate(m, profile);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(!r.valid);
    r.errors[0].clone()
}

#[test]
fn base_is_valid_in_both_profiles_with_output() {
    for p in HostProfile::ALL {
        let r = validate(&base(), p);
        assert!(r.valid && r.errors.is_empty() && r.warnings.is_empty(), "{p}: {r:?}");
        assert_eq!(r.output.unwrap(), base());
    }
}

#[test]
fn top_level_must_be_an_object_and_required_fields_present() {
    let e = only_error(&json!([]), P11);
    assert_eq!((e.path.as_str(), e.code.as_str()), ("", "invalid_type"));
    assert_eq!(e.to_string(), "(manifest): Invalid input: expected object, received array");
    let r = validate(&json!({}), P09);
    let paths: Vec<_> = r.errors.iter().map(|e| e.path.as_str()).collect();
    let required =
        "id apiVersion version displayName description author categories capabilities entrypoints";
    assert_eq!(paths.join(" "), required);
    assert_eq!(r.errors[0].message, "Invalid input: expected string, received undefined");
}

#[test]
fn id_pattern_and_empty_id_report_both_checks() {
    let e = only_error(&with(|m| m["id"] = json!("Acme")), P09);
    assert_eq!((e.path.as_str(), e.code.as_str()), ("id", code::INVALID_FORMAT));
    let r = validate(&with(|m| m["id"] = json!("")), P09);
    assert_eq!(errs(&r), [("id", "too_small"), ("id", "invalid_format")]);
}

#[test]
fn api_version_is_the_literal_one() {
    assert!(validate(&with(|m| m["apiVersion"] = json!(1.0)), P09).valid);
    for bad in [json!(2), json!("1"), json!(null)] {
        let e = only_error(&with(|m| m["apiVersion"] = bad), P09);
        assert_eq!(
            (e.path.as_str(), e.code.as_str(), e.message.as_str()),
            ("apiVersion", "invalid_value", "Invalid input: expected 1")
        );
    }
}

#[test]
fn versions_follow_semver_and_must_match() {
    assert_eq!(only_error(&with(|m| m["version"] = json!("1.0")), P09).code, code::INVALID_FORMAT);
    let e = only_error(&with(|m| m["minimumHostVersion"] = json!("v1")), P09);
    assert_eq!(e.message, "minimumHostVersion must follow semver (e.g. 1.0.0)");
    let both = with(|m| {
        m["minimumHostVersion"] = json!("1.0.0");
        m["minimumPaperclipVersion"] = json!("1.0.1");
    });
    let e = only_error(&both, P09);
    assert_eq!((e.path.as_str(), e.code.as_str()), ("minimumHostVersion", "custom"));
    assert!(
        validate(
            &with(|m| {
                m["minimumHostVersion"] = json!("1.0.0");
                m["minimumPaperclipVersion"] = json!("1.0.0");
            }),
            P11
        )
        .valid
    );
}

#[test]
fn lengths_count_code_points() {
    let emoji = |n: usize| json!("\u{1F600}".repeat(n));
    assert!(validate(&with(|m| m["displayName"] = emoji(100)), P09).valid);
    let e = only_error(&with(|m| m["displayName"] = emoji(101)), P09);
    assert_eq!(e.message, "Too big: expected string to have <=100 characters");
    assert!(validate(&with(|m| m["description"] = json!("d".repeat(500))), P09).valid);
    assert_eq!(
        only_error(&with(|m| m["description"] = json!("d".repeat(501))), P09).path,
        "description"
    );
    assert_eq!(
        only_error(&with(|m| m["author"] = json!("a".repeat(201))), P09).code,
        code::TOO_BIG
    );
    assert_eq!(
        only_error(&driver(|d| d["description"] = json!("d".repeat(501))), P09).path,
        "environmentDrivers.0.description"
    );
}

#[test]
fn categories_and_capabilities_are_non_empty_enums() {
    let e = only_error(&with(|m| m["categories"] = json!([])), P09);
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("too_small", "Too small: expected array to have >=1 items")
    );
    let e = only_error(&with(|m| m["categories"] = json!(["tools"])), P09);
    assert_eq!(e.path, "categories.0");
    assert_eq!(
        e.message,
        "Invalid option: expected one of \"connector\"|\"workspace\"|\"automation\"|\"ui\""
    );
    assert_eq!(
        only_error(&with(|m| m["capabilities"] = json!(["nope"])), P09).path,
        "capabilities.0"
    );
}

#[test]
fn drivers_need_the_register_capability_unless_empty() {
    let e = only_error(&with(|m| m["capabilities"] = json!(["http.outbound"])), P11);
    assert_eq!((e.path.as_str(), e.message.as_str()), ("capabilities", DRIVERS_CAPABILITY_MESSAGE));
    assert!(
        validate(
            &with(|m| {
                m["capabilities"] = json!(["http.outbound"]);
                m["environmentDrivers"] = json!([]);
            }),
            P11
        )
        .valid
    );
}

#[test]
fn duplicate_driver_keys_are_listed_once_in_order() {
    let m = with(|m| {
        let d = m["environmentDrivers"][0].clone();
        let mut other = d.clone();
        other["driverKey"] = json!("b");
        m["environmentDrivers"] = json!([other.clone(), d.clone(), other.clone(), d, other]);
    });
    let e = only_error(&m, P09);
    assert_eq!(
        (e.path.as_str(), e.message.as_str()),
        ("environmentDrivers", "Duplicate environment driver keys: b, rust-sbx")
    );
}

#[test]
fn a_type_error_suppresses_the_cross_field_rules_but_a_pattern_error_does_not() {
    let dup_and_kind = with(|m| {
        let mut d = m["environmentDrivers"][0].clone();
        d["kind"] = json!("sandbox");
        m["environmentDrivers"] = json!([d.clone(), d]);
    });
    let r = validate(&dup_and_kind, P09);
    assert_eq!(
        errs(&r),
        [
            ("environmentDrivers.0.kind", "invalid_value"),
            ("environmentDrivers.1.kind", "invalid_value")
        ]
    );
    let pattern_and_cap = with(|m| {
        m["capabilities"] = json!(["http.outbound"]);
        m["environmentDrivers"][0]["driverKey"] = json!("Rust");
    });
    let r = validate(&pattern_and_cap, P09);
    assert_eq!(
        errs(&r),
        [("environmentDrivers.0.driverKey", "invalid_format"), ("capabilities", "custom")]
    );
}

#[test]
fn config_schema_shapes() {
    for ok in [
        json!({}),
        json!({"type": "object"}),
        json!({"$ref": null}),
        json!({"oneOf": []}),
        json!({"__proto__": {"x": 1}}),
    ] {
        assert!(validate(&driver(|d| d["configSchema"] = ok.clone()), P09).valid, "{ok}");
    }
    for bad in [json!({"type": 1}), json!({"properties": {}}), json!({"__proto__": 1, "x": 1})] {
        let e = only_error(&driver(|d| d["configSchema"] = bad.clone()), P09);
        assert_eq!((e.code.as_str(), e.message.as_str()), ("custom", JSON_SCHEMA_MESSAGE), "{bad}");
    }
    let e = only_error(&driver(|d| d["configSchema"] = json!([])), P09);
    assert_eq!(e.message, "Invalid input: expected record, received array");
    assert_eq!(
        only_error(&with(|m| m["instanceConfigSchema"] = json!({"properties": {}})), P09).path,
        "instanceConfigSchema"
    );
}

#[test]
fn driver_is_strict_and_lists_unknown_keys_in_javascript_order() {
    let e = only_error(
        &driver(|d| {
            d["zeta"] = json!(1);
            d["5"] = json!(1);
            d["supportsLoginPTY"] = json!(true);
        }),
        P09,
    );
    assert_eq!((e.path.as_str(), e.code.as_str()), ("environmentDrivers.0", "unrecognized_keys"));
    assert_eq!(e.message, "Unrecognized keys: \"5\", \"zeta\", \"supportsLoginPTY\"");
}

#[test]
fn sandbox_capabilities_are_strict_booleans() {
    let e = only_error(&driver(|d| d["sandboxCapabilities"] = json!({"nativeSyncIn": "yes"})), P11);
    assert_eq!(e.message, "Invalid input: expected boolean, received string");
    let e = only_error(&driver(|d| d["sandboxCapabilities"] = json!({"fooBar": true})), P11);
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("unrecognized_keys", "Unrecognized key: \"fooBar\"")
    );
    assert_eq!(
        only_error(&driver(|d| d["sandboxCapabilities"] = json!([])), P09).code,
        code::INVALID_TYPE
    );
}

#[test]
fn removed_keys_differ_by_profile() {
    let removed = driver(|d| {
        d["sandboxCapabilities"] =
            json!({"concurrentSyncOperations": true, "concurrentSyncAndExec": true, "x": true})
    });
    let r = validate(&removed, P11);
    assert_eq!(
        errs(&r),
        [
            ("environmentDrivers.0.sandboxCapabilities", "removed_capability"),
            ("environmentDrivers.0.sandboxCapabilities", "removed_capability"),
            ("environmentDrivers.0.sandboxCapabilities", "unrecognized_keys"),
        ]
    );
    assert!(
        r.errors[0].message.contains("concurrentSyncOperations")
            && r.errors[0].message.contains("removed")
    );
    assert!(r.errors[1].message.contains("concurrentSyncAndExec"));
    assert_eq!(r.errors[2].message, "Unrecognized key: \"x\"");
    let r = validate(&removed, P09);
    assert_eq!(errs(&r), [("environmentDrivers.0.sandboxCapabilities", "unrecognized_keys")]);
    assert_eq!(r.errors[0].message, "Unrecognized keys: \"concurrentSyncAndExec\", \"x\"");
}

#[test]
fn supports_tasks_is_an_optional_boolean_of_the_november_profile() {
    let tasks = |v: Value| driver(|d| d["supportsTasks"] = v);
    for ok in [json!(true), json!(false)] {
        let r = validate(&tasks(ok.clone()), P11);
        assert!(r.valid && r.errors.is_empty(), "{ok}: {r:?}");
        assert_eq!(r.output.unwrap()["environmentDrivers"][0]["supportsTasks"], ok);
        // The published September host's strict driver schema has no such key.
        assert_eq!(only_error(&tasks(ok), P09).message, "Unrecognized key: \"supportsTasks\"");
    }
    for bad in [json!("true"), json!(1), json!(null)] {
        let e = only_error(&tasks(bad.clone()), P11);
        assert_eq!(
            (e.path.as_str(), e.code.as_str()),
            ("environmentDrivers.0.supportsTasks", "invalid_type"),
            "{bad}"
        );
    }
    let typed = Manifest::sandbox_provider(
        "acme.rust-sandbox",
        "0.1.0",
        "Rust Sandbox",
        "./dist/worker.js",
    )
    .with_description("test")
    .with_author("Acme")
    .with_driver(
        DriverDeclaration::sandbox_provider("rust-sbx", "Rust SBX").with_supports_tasks(true),
    );
    assert_eq!(typed.to_value()["environmentDrivers"][0]["supportsTasks"], true);
    assert!(typed.validate(P11).valid);
}

#[test]
fn november_driver_fields() {
    let timeout = |v: Value| driver(|d| d["defaultAcquireTimeoutMs"] = v);
    for ok in [json!(1), json!(300000), json!(86400000), json!(5.0)] {
        assert!(validate(&timeout(ok.clone()), P11).valid, "{ok}");
        assert_eq!(
            only_error(&timeout(ok), P09).message,
            "Unrecognized key: \"defaultAcquireTimeoutMs\""
        );
    }
    for (bad, c) in [
        (json!(0), "too_small"),
        (json!(-1), "too_small"),
        (json!(86400001), "too_big"),
        (json!(1.5), "invalid_type"),
        (json!("300000"), "invalid_type"),
    ] {
        let e = only_error(&timeout(bad.clone()), P11);
        assert_eq!(
            (e.path.as_str(), e.code.as_str()),
            ("environmentDrivers.0.defaultAcquireTimeoutMs", c),
            "{bad}"
        );
        assert!(e.message.contains("86400000"));
    }
    let version = |v: Value| driver(|d| d["creationOperationVersion"] = v);
    assert!(validate(&version(json!(1)), P11).valid);
    for bad in [json!(2), json!(0), json!("1"), json!(1.5)] {
        let e = only_error(&version(bad), P11);
        assert!(e.message.starts_with("unsupported creation operation version"), "{e}");
    }
    assert_eq!(only_error(&version(json!(2)), P11).code, code::UNSUPPORTED_VERSION);
}

#[test]
fn template_config_binding_rules() {
    let b = |v: Value| driver(|d| d["templateConfigBinding"] = v);
    assert!(validate(&b(json!({"field": "image", "unsetFields": ["snapshot"]})), P09).valid);
    let e = only_error(&b(json!({"field": "provider"})), P09);
    assert_eq!(e.path, "environmentDrivers.0.templateConfigBinding.field");
    assert_eq!(only_error(&b(json!({"field": "1x"})), P09).code, code::INVALID_FORMAT);
    let r = validate(&b(json!({"field": "image", "unsetFields": ["a", "image", "a"]})), P09);
    let msgs: Vec<_> = r.errors.iter().map(|e| (e.path.as_str(), e.message.as_str())).collect();
    assert_eq!(
        msgs,
        [
            (
                "environmentDrivers.0.templateConfigBinding.unsetFields.1",
                "Template config binding cannot unset the same field it sets"
            ),
            (
                "environmentDrivers.0.templateConfigBinding.unsetFields.2",
                "Template config binding unsetFields must be unique"
            ),
        ]
    );
    assert_eq!(
        only_error(&b(json!({"field": "image", "x": 1})), P09).code,
        code::UNRECOGNIZED_KEYS
    );
    let many: Vec<String> = (0..21).map(|i| format!("f{i}")).collect();
    assert_eq!(
        only_error(&b(json!({"field": "image", "unsetFields": many})), P09).code,
        code::TOO_BIG
    );
}

#[test]
fn login_alias_is_checked_and_folded() {
    let e = only_error(
        &driver(|d| {
            d["supportsLoginPty"] = json!(false);
            d["supportsSetupTokenLogin"] = json!(true);
        }),
        P09,
    );
    assert_eq!(
        (e.path.as_str(), e.message.as_str()),
        ("environmentDrivers.0.supportsLoginPty", LOGIN_ALIAS_MESSAGE)
    );
    let r = validate(&driver(|d| d["supportsSetupTokenLogin"] = json!(true)), P09);
    let out = &r.output.unwrap()["environmentDrivers"][0];
    assert_eq!(out["supportsLoginPty"], json!(true));
    assert!(out.get("supportsSetupTokenLogin").is_none());
}

#[test]
fn unknown_top_level_keys_are_stripped() {
    let r = validate(
        &with(|m| {
            m["somethingNew"] = json!({"x": 1});
            m["__proto__"] = json!(1);
        }),
        P11,
    );
    assert!(r.valid);
    let out = r.output.unwrap();
    assert!(out.get("somethingNew").is_none() && out.get("__proto__").is_none());
}

#[test]
fn array_limits_of_driver_lists() {
    let ten: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    assert!(validate(&driver(|d| d["interactiveSetupConnectionTypes"] = json!(ten)), P09).valid);
    let eleven: Vec<String> = (0..11).map(|i| format!("t{i}")).collect();
    assert_eq!(
        only_error(&driver(|d| d["interactiveSetupConnectionTypes"] = json!(eleven)), P09).message,
        "Too big: expected array to have <=10 items"
    );
    assert_eq!(
        only_error(&driver(|d| d["templateIdentityPaths"] = json!(["p".repeat(201)])), P09).path,
        "environmentDrivers.0.templateIdentityPaths.0"
    );
}

#[test]
fn warnings_do_not_reject() {
    let r = validate(
        &driver(|d| {
            d.as_object_mut().unwrap().shift_remove("kind");
        }),
        P09,
    );
    assert!(r.valid);
    assert_eq!(r.warnings[0].code, code::KIND_OMITTED);
    let r = validate(
        &driver(|d| {
            d["sandboxCapabilities"] = json!({"nativeSyncIn": true, "nativeSyncOut": false})
        }),
        P11,
    );
    assert!(r.valid);
    assert_eq!(r.warnings[0].code, code::NATIVE_SYNC_MISMATCH);
    let ext = driver(|d| d["sandboxCapabilities"] = json!({"runnerWebSocketIngress": true}));
    assert_eq!(validate(&ext, P11).extension_keys(), ["runnerWebSocketIngress"]);
    assert!(validate(&ext, P09).extension_keys().is_empty());
    let r = validate(&with(|m| m["agents"] = json!([{"agentKey": "a"}])), P09);
    assert_eq!(r.warnings[0].code, code::NOT_CHECKED);
}

#[test]
fn jobs_webhooks_tools() {
    let r = validate(
        &with(|m| m["jobs"] = json!([{"jobKey": "j", "displayName": "J", "schedule": "bad"}])),
        P09,
    );
    assert_eq!(errs(&r), [("jobs.0.schedule", "custom"), ("capabilities", "custom")]);
    let r = validate(
        &with(|m| {
            m["jobs"] = json!([{"jobKey": "j", "displayName": "J"}]);
        }),
        P09,
    );
    assert_eq!(
        r.errors[0].message,
        "Capability 'jobs.schedule' is required when jobs are declared"
    );
    let r = validate(
        &with(|m| {
            m["capabilities"] = json!(["environment.drivers.register", "webhooks.receive"]);
            m["webhooks"] = json!([{"endpointKey": "w", "displayName": "W"}, {"endpointKey": "w", "displayName": "W"}]);
        }),
        P09,
    );
    assert_eq!(errs(&r), [("webhooks", "custom")]);
    let r = validate(
        &with(
            |m| m["tools"] = json!([{"name": "t", "displayName": "T", "description": "d", "parametersSchema": {"properties": {}}}]),
        ),
        P09,
    );
    assert_eq!(errs(&r), [("tools.0.parametersSchema", "custom"), ("capabilities", "custom")]);
    assert_eq!(
        r.errors[1].message,
        "Capability 'agent.tools.register' is required when tools are declared"
    );
}

#[test]
fn typed_manifest_builds_and_validates_per_profile() {
    let caps = SandboxCapabilities::new()
        .with(Capability::NativeSyncOut, true)
        .with(Capability::ReusableLeases, false);
    let m = Manifest::sandbox_provider(
        "acme.rust-sandbox",
        "0.1.0",
        "Rust Sandbox",
        "./dist/worker.js",
    )
    .with_driver(
        DriverDeclaration::sandbox_provider("rust-sbx", "Rust SBX").with_capabilities(caps.clone()),
    );
    let v = m.to_value();
    assert_eq!(v["apiVersion"], json!(1));
    let keys: Vec<_> = v["environmentDrivers"][0]["sandboxCapabilities"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["reusableLeases", "nativeSyncOut"], "table order");
    assert!(m.validate(P09).valid && m.validate(P11).valid);
    let back: Manifest = serde_json::from_value(v).unwrap();
    assert_eq!(back, m);

    let nov = m.clone().with_driver(
        DriverDeclaration::sandbox_provider("rust-sbx-2", "Rust SBX 2")
            .with_default_acquire_timeout_ms(300_000)
            .with_creation_operation_version(1),
    );
    assert!(nov.validate(P11).valid);
    assert_eq!(errs(&nov.validate(P09)), [("environmentDrivers.1", "unrecognized_keys")]);

    let removed = m.clone().with_driver(
        DriverDeclaration::sandbox_provider("x", "X")
            .with_capability(Capability::ConcurrentSyncOperations, true),
    );
    assert!(removed.validate(P09).valid);
    assert_eq!(removed.validate(P11).errors[0].code, code::REMOVED_CAPABILITY);
}

#[test]
fn sandbox_capabilities_serde_and_schema() {
    let err = serde_json::from_value::<SandboxCapabilities>(json!({"concurrentSyncAndExec": true}))
        .unwrap_err();
    assert!(err.to_string().contains("concurrentSyncAndExec"), "{err}");
    let caps: SandboxCapabilities =
        serde_json::from_value(json!({"runnerWebSocketIngress": true, "nativeSyncIn": false}))
            .unwrap();
    assert_eq!(
        serde_json::to_string(&caps).unwrap(),
        r#"{"nativeSyncIn":false,"runnerWebSocketIngress":true}"#
    );
    let schema = serde_json::to_value(schemars::schema_for!(Manifest)).unwrap();
    let text = schema.to_string();
    assert!(text.contains("runnerWebSocketIngress") && text.contains("defaultAcquireTimeoutMs"));
}
