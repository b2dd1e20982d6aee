//! The parsed output of a valid manifest, built as zod builds it: declared keys in declaration
//! order, unknown top-level keys (and unknown keys of the non-strict nested objects) stripped,
//! `supportsSetupTokenLogin` folded into `supportsLoginPty`.

use serde_json::{Map, Value};

use super::driver::{DRIVER_FIELDS, NOVEMBER_FIELDS};
use super::zod::js_key_order;
use super::TOP_LEVEL_FIELDS;
use crate::capabilities::Capability;
use crate::profile::HostProfile;

/// The output of a manifest that passed validation.
pub(crate) fn manifest(m: &Map<String, Value>, profile: HostProfile) -> Value {
    let mut out = Map::new();
    for &key in TOP_LEVEL_FIELDS {
        let Some(v) = m.get(key) else { continue };
        let parsed = match key {
            "entrypoints" => pick(v, &["worker", "ui"]),
            "instanceConfigSchema" => record(v),
            "jobs" => each(v, |j| pick(j, &["jobKey", "displayName", "description", "schedule"])),
            "webhooks" => each(v, |w| pick(w, &["endpointKey", "displayName", "description"])),
            "tools" => each(v, |t| {
                let mut tool = pick(t, &["name", "displayName", "description"]);
                if let (Value::Object(o), Some(s)) = (&mut tool, t.get("parametersSchema")) {
                    o.insert("parametersSchema".into(), record(s));
                }
                tool
            }),
            "environmentDrivers" => each(v, |d| driver(d, profile)),
            _ => v.clone(),
        };
        out.insert(key.into(), parsed);
    }
    Value::Object(out)
}

fn each(v: &Value, f: impl Fn(&Value) -> Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(f).collect()),
        other => other.clone(),
    }
}

/// The keys of `fields` present in `v`, in that order.
fn pick(v: &Value, fields: &[&str]) -> Value {
    let mut out = Map::new();
    for &f in fields {
        if let Some(x) = v.get(f) {
            out.insert(f.into(), x.clone());
        }
    }
    Value::Object(out)
}

/// A `z.record(z.string(), z.unknown())`: own keys in JavaScript order, `__proto__` dropped.
fn record(v: &Value) -> Value {
    let Value::Object(m) = v else { return v.clone() };
    let mut out = Map::new();
    for k in js_key_order(m).into_iter().filter(|k| *k != "__proto__") {
        out.insert(k.into(), m[k].clone());
    }
    Value::Object(out)
}

fn driver(d: &Value, profile: HostProfile) -> Value {
    let Value::Object(src) = d else { return d.clone() };
    let november: &[&str] = if profile.is_november() { NOVEMBER_FIELDS } else { &[] };
    let mut out = Map::new();
    for &key in DRIVER_FIELDS.iter().chain(november) {
        if key == "supportsSetupTokenLogin" {
            continue;
        }
        let Some(v) = src.get(key) else { continue };
        let parsed = match key {
            "sandboxCapabilities" => {
                let keys: Vec<&str> =
                    Capability::for_profile(profile).map(Capability::key).collect();
                pick(v, &keys)
            }
            "templateConfigBinding" => pick(v, &["field", "unsetFields"]),
            "configSchema" => record(v),
            _ => v.clone(),
        };
        out.insert(key.into(), parsed);
    }
    if !out.contains_key("supportsLoginPty") {
        if let Some(alias) = src.get("supportsSetupTokenLogin") {
            out.insert("supportsLoginPty".into(), alias.clone());
        }
    }
    Value::Object(out)
}
