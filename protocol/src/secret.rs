//! A secret value that is never printed or serialized in clear.
//!
//! [`Secret`] holds a string (a resolved credential, a token, a header value). Its `Debug`
//! and `Display` print `[redacted]`, and its `Serialize` writes the string `"[redacted]"`
//! ([`Secret::REDACTED`]): a string keeps a `"type": "string"` schema valid, and the marker
//! shows where a secret was elided instead of silently dropping the key. `Deserialize` reads
//! the clear value, so a provider config struct can hold resolved secrets.
//!
//! Where the wire must carry the clear value (a runner-ingress secret header, a setup
//! connection token), opt in explicitly with
//! `#[serde(serialize_with = "Secret::serialize_exposed")]`. Never round-trip a config through
//! a typed struct holding `Secret`s to build `normalizedConfig`: edit the original JSON object.
//!
//! As a JSON Schema a `Secret` is `{"type":"string","format":"secret-ref"}`, which is how the
//! host recognises the secret fields of a `configSchema`.
//!
//! On drop the bytes are overwritten with zeros (best effort: copies made before the value
//! reached the `Secret`, for example by a JSON parser's buffers, are not covered).

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A secret string: never printed, never serialized in clear unless asked for.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// What `Debug`, `Display` and `Serialize` write instead of the value.
    pub const REDACTED: &'static str = "[redacted]";
    /// The JSON Schema `format` the host uses for secret fields.
    pub const SCHEMA_FORMAT: &'static str = "secret-ref";

    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The clear value.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The clear value (alias of [`Secret::expose`], named as in the `secrecy` crate).
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Serializes the clear value; use with `#[serde(serialize_with = "…")]` where the wire
    /// must carry it.
    pub fn serialize_exposed<S: Serializer>(secret: &Secret, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&secret.0)
    }

    /// [`Secret::serialize_exposed`] for an `Option<Secret>` (`None` as `null`).
    pub fn serialize_exposed_option<S: Serializer>(
        secret: &Option<Secret>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match secret {
            Some(v) => s.serialize_some(v.expose()),
            None => s.serialize_none(),
        }
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

/// What a params type's `Debug` prints for its environment config (it carries resolved
/// secrets, which a JSON object cannot mark): [`Secret::REDACTED`].
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Secret::REDACTED)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(Self::REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

impl JsonSchema for Secret {
    fn schema_name() -> Cow<'static, str> {
        "Secret".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "format": "secret-ref" })
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        let mut bytes = std::mem::take(&mut self.0).into_bytes();
        bytes.iter_mut().for_each(|b| *b = 0);
        bytes.spare_capacity_mut().iter_mut().for_each(|b| {
            b.write(0);
        });
        std::hint::black_box(&mut bytes);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Config {
        host: String,
        api_key: Secret,
        #[serde(serialize_with = "Secret::serialize_exposed")]
        header: Secret,
    }

    #[test]
    fn never_printed_or_serialized_in_clear() {
        let c: Config =
            serde_json::from_value(json!({"host": "h", "api_key": "sk-123", "header": "t0k"}))
                .unwrap();
        assert_eq!(c.api_key.expose(), "sk-123");
        assert_eq!(c.api_key.expose_secret(), "sk-123");
        assert_eq!(format!("{:?} {}", c.api_key, c.api_key), "[redacted] [redacted]");
        let out = serde_json::to_string(&c).unwrap();
        assert!(!out.contains("sk-123"), "{out}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
            json!({"host": "h", "api_key": "[redacted]", "header": "t0k"})
        );
    }

    #[test]
    fn option_exposed_and_equality() {
        #[derive(Serialize)]
        struct T {
            #[serde(serialize_with = "Secret::serialize_exposed_option")]
            token: Option<Secret>,
        }
        let v = serde_json::to_value(T { token: Some("abc".into()) }).unwrap();
        assert_eq!(v, json!({"token": "abc"}));
        assert_eq!(serde_json::to_value(T { token: None }).unwrap(), json!({"token": null}));
        assert_eq!(Secret::new("a"), Secret::from(String::from("a")));
        assert!(Secret::default().is_empty());
    }

    #[test]
    fn schema_is_secret_ref() {
        let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
        assert_eq!(
            schema["properties"]["api_key"],
            json!({"type": "string", "format": "secret-ref"})
        );
    }
}
