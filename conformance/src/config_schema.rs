//! What the driver's `configSchema` tells the harness about the config it sends: the fields
//! that hold secrets (`format: "secret-ref"`, where the harness plants sentinels) and the
//! fields the config must have (`required`).

use serde_json::{Map, Value};

/// The schema format of a field that holds a secret reference; the host resolves it to the
/// secret before a call.
pub(crate) const SECRET_REF: &str = "secret-ref";

/// True when `property` is a secret: its `format` is `secret-ref`, or that of one of its
/// `anyOf`/`oneOf` branches (an optional secret).
fn is_secret(property: &Value) -> bool {
    let format = |v: &Value| v.get("format").and_then(Value::as_str) == Some(SECRET_REF);
    format(property)
        || ["anyOf", "oneOf"].iter().any(|k| {
            property.get(*k).and_then(Value::as_array).is_some_and(|a| a.iter().any(format))
        })
}

/// The top-level config fields `schema` marks as secrets, in schema order.
pub(crate) fn secret_fields(schema: Option<&Value>) -> Vec<String> {
    let Some(properties) = schema.and_then(|s| s.get("properties")).and_then(Value::as_object)
    else {
        return Vec::new();
    };
    properties.iter().filter(|(_, p)| is_secret(p)).map(|(k, _)| k.clone()).collect()
}

/// The fields `schema` requires that `config` lacks, in schema order.
pub(crate) fn missing_required(schema: Option<&Value>, config: &Map<String, Value>) -> Vec<String> {
    let Some(required) = schema.and_then(|s| s.get("required")).and_then(Value::as_array) else {
        return Vec::new();
    };
    required
        .iter()
        .filter_map(Value::as_str)
        .filter(|k| !config.contains_key(*k))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_fields_are_the_secret_ref_properties_also_when_optional() {
        let schema = json!({"type": "object", "properties": {
            "baseUrl": {"type": "string"},
            "apiKey": {"type": "string", "format": "secret-ref"},
            "other": {"anyOf": [{"type": "string", "format": "secret-ref"}, {"type": "null"}]},
            "plain": {"type": "string", "format": "uri"}
        }});
        assert_eq!(secret_fields(Some(&schema)), ["apiKey", "other"]);
        assert!(secret_fields(None).is_empty());
        assert!(secret_fields(Some(&json!({"type": "object"}))).is_empty());
    }

    #[test]
    fn missing_required_fields_are_named_in_schema_order() {
        let schema = json!({"required": ["token", "baseUrl", "region"]});
        let config = json!({"baseUrl": "https://x"});
        let missing = missing_required(Some(&schema), config.as_object().unwrap());
        assert_eq!(missing, ["token", "region"]);
        assert!(missing_required(None, config.as_object().unwrap()).is_empty());
    }
}
