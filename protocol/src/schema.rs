//! JSON Schemas of every message type and of the manifest.
//!
//! [`message_schemas`] exports one JSON Schema (draft 2020-12, every subschema inlined, no
//! `$ref`) per params and result type, keyed by wire method name plus `Params` or `Result`
//! (`environmentExecuteParams`, `execute.logParams`, …), plus `ErrorObject`, `Invocation` and
//! `Manifest` (the plugin manifest as a provider emits it).
//!
//! Each schema describes the worker's side of the wire: what a worker accepts for what it
//! receives (params of host→worker methods, results of worker→host calls, the invocation) and
//! what it emits for what it sends (results of host→worker methods, params of worker→host
//! calls, error objects). So a field with a default is optional in a params schema, and a
//! field that is always serialized is required in a result schema.
//!
//! `protocol/tests/schema_snapshot.rs` compares the export with a committed snapshot, so any
//! change of the wire shape fails a test until the snapshot is updated on purpose.

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use crate::jsonrpc::{ErrorObject, Invocation};
use crate::methods::{visit_methods, Direction, MethodVisitor, RpcMethod, RpcNotification};

/// Which side of a (de)serialization a schema describes.
#[derive(Clone, Copy)]
enum Side {
    /// What the worker accepts.
    Accepts,
    /// What the worker emits.
    Emits,
}

fn schema_of<T: JsonSchema>(side: Side) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let settings = match side {
        Side::Accepts => settings.for_deserialize(),
        Side::Emits => settings.for_serialize(),
    };
    settings.into_generator().into_root_schema_for::<T>().to_value()
}

struct Collect(BTreeMap<String, Value>);

impl MethodVisitor for Collect {
    fn method<M: RpcMethod>(&mut self) {
        let (params, result) = match M::DIRECTION {
            Direction::HostToWorker => (Side::Accepts, Side::Emits),
            Direction::WorkerToHost => (Side::Emits, Side::Accepts),
        };
        self.0.insert(format!("{}Params", M::NAME), schema_of::<M::Params>(params));
        self.0.insert(format!("{}Result", M::NAME), schema_of::<M::Result>(result));
    }

    fn notification<N: RpcNotification>(&mut self) {
        let side = match N::DIRECTION {
            Direction::HostToWorker => Side::Accepts,
            Direction::WorkerToHost => Side::Emits,
        };
        self.0.insert(format!("{}Params", N::NAME), schema_of::<N::Params>(side));
    }
}

/// The JSON Schema of every params and result type, the error object, the invocation and the
/// manifest.
pub fn message_schemas() -> BTreeMap<String, Value> {
    let mut collect = Collect(BTreeMap::new());
    visit_methods(&mut collect);
    let mut out = collect.0;
    out.insert("ErrorObject".to_owned(), schema_of::<ErrorObject>(Side::Emits));
    out.insert("Invocation".to_owned(), schema_of::<Invocation>(Side::Accepts));
    out.insert("Manifest".to_owned(), schema_of::<crate::manifest::Manifest>(Side::Emits));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_ref(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref),
            Value::Array(a) => a.iter().any(has_ref),
            _ => false,
        }
    }

    #[test]
    fn every_method_has_inline_schemas() {
        let s = message_schemas();
        assert!(s.contains_key("environmentExecuteParams"));
        assert!(s.contains_key("environmentStopLeaseResult"));
        assert!(s.contains_key("execute.logParams"));
        assert!(s.contains_key("ErrorObject"));
        assert!(s.contains_key("Manifest"));
        assert!(s.contains_key("prepareIdleSleepResult"));
        assert!(s.contains_key("duplexChannel.dataParams"));
        assert!(s.contains_key("releaseIdleSleepParams"));
        // 44 request methods with types (params and result), 6 notifications of their own
        // (`log` shares the request's params), ErrorObject, Invocation, Manifest.
        assert_eq!(s.len(), 44 * 2 + 6 + 3);
        for (k, v) in &s {
            assert!(!has_ref(v), "{k} has a $ref");
        }
    }

    #[test]
    fn result_schemas_require_always_serialized_fields() {
        let s = message_schemas();
        let required = |k: &str| s[k]["required"].clone();
        let exec = required("environmentExecuteResult");
        assert!(exec.as_array().unwrap().contains(&"exitCode".into()), "{exec}");
        let params = required("environmentExecuteParams");
        assert!(!params.as_array().unwrap().contains(&"args".into()));
        assert!(params.as_array().unwrap().contains(&"companyId".into()));
    }
}
