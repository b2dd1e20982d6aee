//! Property tests: the manifest validator never panics and `valid == errors.is_empty()`, on
//! arbitrary JSON and on mutations of the base manifest, in both profiles.

use paperclip_sandbox_protocol::manifest::{validate, TOP_LEVEL_FIELDS};
use paperclip_sandbox_protocol::HostProfile;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

mod common;
use common::base_manifest as base;

/// Keys below the top level that the validator reads, plus a few awkward ones; the top-level
/// fields come from `TOP_LEVEL_FIELDS`.
const NESTED_KEYS: &[&str] = &[
    "worker",
    "ui",
    "environmentDrivers",
    "driverKey",
    "kind",
    "configSchema",
    "type",
    "$ref",
    "sandboxCapabilities",
    "nativeSyncIn",
    "concurrentSyncOperations",
    "concurrentSyncAndExec",
    "templateConfigBinding",
    "field",
    "unsetFields",
    "supportsLoginPty",
    "supportsSetupTokenLogin",
    "defaultAcquireTimeoutMs",
    "creationOperationVersion",
    "jobs",
    "tools",
    "ui",
    "slots",
    "length",
    "__proto__",
    "0",
    "x",
];

fn keys() -> Vec<&'static str> {
    TOP_LEVEL_FIELDS.iter().chain(NESTED_KEYS).copied().collect()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![prop::sample::select(keys()).prop_map(str::to_owned), "[a-zA-Z0-9_.$-]{0,6}"]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        "\\PC{0,8}".prop_map(Value::String),
        prop::sample::select(
            &[
                "automation",
                "sandbox_provider",
                "1.0.0",
                "provider",
                "environment.drivers.register"
            ][..]
        )
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Replaces or removes the value at a path chosen by `choices`, or adds a key.
fn mutate(target: &mut Value, choices: &[usize], new: Value, k: String) {
    if let Some((&c, rest)) = choices.split_first() {
        match target {
            Value::Object(m) if !m.is_empty() => {
                let key = m.keys().nth(c % m.len()).unwrap().clone();
                return mutate(m.get_mut(&key).unwrap(), rest, new, k);
            }
            Value::Array(a) if !a.is_empty() => {
                let n = a.len();
                return mutate(&mut a[c % n], rest, new, k);
            }
            _ => {}
        }
    }
    match (target, k.len() % 3) {
        (Value::Object(m), 0) => {
            m.insert(k, new);
        }
        (Value::Object(m), 1) if !m.is_empty() => {
            let key = m.keys().next().unwrap().clone();
            m.shift_remove(&key);
        }
        (slot, _) => *slot = new,
    }
}

fn check(v: &Value) {
    for p in HostProfile::ALL {
        let r = validate(v, p);
        assert_eq!(r.valid, r.errors.is_empty());
        assert_eq!(r.valid, r.output.is_some());
        for e in &r.errors {
            assert!(!e.code.is_empty() && !e.message.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_json(v in json_value()) {
        check(&v);
    }

    #[test]
    fn never_panics_on_mutated_base(
        edits in prop::collection::vec((prop::collection::vec(any::<usize>(), 0..5), json_value(), key()), 1..4)
    ) {
        let mut m = base();
        for (path, new, k) in edits {
            mutate(&mut m, &path, new, k);
        }
        check(&m);
    }
}
