//! Worker→host service calls a sandbox provider may make besides `log` and `config.get`
//! ([`super::host`]): secrets, spans, plugin state, HTTP, metrics, telemetry, activity and
//! events (`WorkerToHostMethods` of the upstream SDK protocol).
//!
//! | method | params | result |
//! |---|---|---|
//! | `secrets.resolve` | [`SecretsResolveParams`] | the secret's value (a string) |
//! | `span.record` | [`SpanRecordParams`] | `null` |
//! | `state.get` | [`StateKey`] | the stored JSON value (or `null`) |
//! | `state.set` | [`StateSetParams`] | `null` |
//! | `state.delete` | [`StateKey`] | `null` |
//! | `http.fetch` | [`HttpFetchParams`] | [`HttpFetchResult`] |
//! | `metrics.write` | [`MetricsWriteParams`] | `null` |
//! | `telemetry.track` | [`TelemetryTrackParams`] | `null` |
//! | `activity.log` | [`ActivityLogParams`] | `null` |
//! | `events.emit` | [`EventsEmitParams`] | `null` |
//!
//! The host gates each by the plugin's manifest capabilities and by the invocation's company;
//! a refused call is a JSON-RPC error.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::lease::JsonObject;

/// What `secrets.resolve` resolves: a secret reference string, or a structured binding
/// (`{type:"secret_ref", secretId, version?}` and the host's other binding kinds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SecretRef {
    /// A reference string as the config holds it.
    Ref(String),
    /// A structured binding (host-defined shape).
    Binding(JsonObject),
}

/// Params of `secrets.resolve`. The result is the secret's value: hold it in a
/// [`Secret`](crate::secret::Secret) and never log it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SecretsResolveParams {
    /// The reference.
    pub secret_ref: SecretRef,
    /// The company; the invocation's company when absent.
    pub company_id: Option<String>,
    /// The config path the reference came from (lets the host check it).
    pub config_path: Option<String>,
}

impl SecretsResolveParams {
    /// Params resolving the reference string `secret_ref`.
    pub fn new(secret_ref: impl Into<String>) -> Self {
        SecretsResolveParams {
            secret_ref: SecretRef::Ref(secret_ref.into()),
            company_id: None,
            config_path: None,
        }
    }

    /// Sets the config path.
    pub fn with_config_path(mut self, path: impl Into<String>) -> Self {
        self.config_path = Some(path.into());
        self
    }

    /// Sets the company.
    pub fn with_company(mut self, company_id: impl Into<String>) -> Self {
        self.company_id = Some(company_id.into());
        self
    }
}

/// A span attribute or telemetry dimension value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AttributeValue {
    /// A string.
    String(String),
    /// A number.
    Number(f64),
    /// A boolean.
    Bool(bool),
}

impl_from!(AttributeValue {
    &str => |v| AttributeValue::String(v.to_owned()),
    String => |v| AttributeValue::String(v),
    f64 => |v| AttributeValue::Number(v),
    bool => |v| AttributeValue::Bool(v),
});

/// The status of a span.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SpanStatus {
    /// The status code (OpenTelemetry: 0 unset, 1 ok, 2 error).
    pub code: i64,
    /// A message.
    pub message: Option<String>,
}

/// Params of `span.record`: one finished provider span. The host clamps the name to its
/// closed set and drops attributes outside its allowlist; it derives the parent from the
/// invocation, never from the worker.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SpanRecordParams {
    /// A bounded span name (`pack`, `transfer`, …).
    pub name: String,
    /// Attributes.
    pub attributes: Option<BTreeMap<String, AttributeValue>>,
    /// The status.
    pub status: Option<SpanStatus>,
    /// Start, in epoch milliseconds.
    pub start_time_ms: Option<i64>,
    /// End, in epoch milliseconds.
    pub end_time_ms: Option<i64>,
}

impl SpanRecordParams {
    /// A span `name` from `start_time_ms` to `end_time_ms` without attributes or status.
    pub fn new(name: impl Into<String>, start_time_ms: i64, end_time_ms: i64) -> Self {
        SpanRecordParams {
            name: name.into(),
            attributes: None,
            status: None,
            start_time_ms: Some(start_time_ms),
            end_time_ms: Some(end_time_ms),
        }
    }

    /// Adds an attribute.
    pub fn with_attribute(
        mut self,
        key: impl Into<String>,
        value: impl Into<AttributeValue>,
    ) -> Self {
        self.attributes.get_or_insert_with(BTreeMap::new).insert(key.into(), value.into());
        self
    }

    /// Sets the status.
    pub fn with_status(mut self, code: i64, message: Option<String>) -> Self {
        self.status = Some(SpanStatus { code, message });
        self
    }
}

/// The key of a plugin state entry: params of `state.get` and `state.delete`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StateKey {
    /// The scope kind (`instance`, `company`, `project`, …).
    pub scope_kind: String,
    /// The scope's id (absent for `instance`).
    pub scope_id: Option<String>,
    /// A namespace inside the scope.
    pub namespace: Option<String>,
    /// The key.
    pub state_key: String,
}

impl StateKey {
    /// The key `state_key` in scope `scope_kind` / `scope_id`.
    pub fn new(
        scope_kind: impl Into<String>,
        scope_id: Option<String>,
        state_key: impl Into<String>,
    ) -> Self {
        StateKey {
            scope_kind: scope_kind.into(),
            scope_id,
            namespace: None,
            state_key: state_key.into(),
        }
    }
}

/// Params of `state.set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StateSetParams {
    /// The key.
    #[serde(flatten)]
    pub key: StateKey,
    /// The value to store.
    pub value: Value,
}

impl StateSetParams {
    /// Stores `value` under `key`.
    pub fn new(key: StateKey, value: Value) -> Self {
        StateSetParams { key, value }
    }
}

/// Params of `http.fetch`: a request the host makes on the worker's behalf.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HttpFetchParams {
    /// The URL.
    pub url: String,
    /// The fetch init (`method`, `headers`, `body`, …).
    pub init: Option<JsonObject>,
}

impl HttpFetchParams {
    /// A GET of `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpFetchParams { url: url.into(), init: None }
    }
}

/// Result of `http.fetch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HttpFetchResult {
    /// The HTTP status.
    pub status: u16,
    /// The status text.
    #[serde(default)]
    pub status_text: String,
    /// The response headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body as text.
    #[serde(default)]
    pub body: String,
}

/// Params of `metrics.write`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MetricsWriteParams {
    /// The metric.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Tags.
    pub tags: Option<BTreeMap<String, String>>,
    /// The owning company (instance scope when absent).
    pub company_id: Option<String>,
}

impl MetricsWriteParams {
    /// `name = value` without tags.
    pub fn new(name: impl Into<String>, value: f64) -> Self {
        MetricsWriteParams { name: name.into(), value, tags: None, company_id: None }
    }
}

/// Params of `telemetry.track`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TelemetryTrackParams {
    /// The event.
    pub event_name: String,
    /// Its dimensions.
    pub dimensions: Option<BTreeMap<String, AttributeValue>>,
}

impl TelemetryTrackParams {
    /// The event `event_name` without dimensions.
    pub fn new(event_name: impl Into<String>) -> Self {
        TelemetryTrackParams { event_name: event_name.into(), dimensions: None }
    }
}

/// Params of `activity.log`: an entry in the company's activity log.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ActivityLogParams {
    /// The company.
    pub company_id: String,
    /// The message; never include secrets.
    pub message: String,
    /// The entity kind it is about.
    pub entity_type: Option<String>,
    /// The entity it is about.
    pub entity_id: Option<String>,
    /// Structured fields.
    pub metadata: Option<JsonObject>,
}

impl ActivityLogParams {
    /// `message` for `company_id`.
    pub fn new(company_id: impl Into<String>, message: impl Into<String>) -> Self {
        ActivityLogParams {
            company_id: company_id.into(),
            message: message.into(),
            entity_type: None,
            entity_id: None,
            metadata: None,
        }
    }
}

/// Params of `events.emit`: a plugin event on the host's bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventsEmitParams {
    /// The event name.
    pub name: String,
    /// The company.
    pub company_id: String,
    /// The payload.
    pub payload: Value,
}

impl EventsEmitParams {
    /// The event `name` for `company_id`.
    pub fn new(name: impl Into<String>, company_id: impl Into<String>, payload: Value) -> Self {
        EventsEmitParams { name: name.into(), company_id: company_id.into(), payload }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn secrets_and_spans_wire() {
        assert_eq!(
            serde_json::to_value(SecretsResolveParams::new("ref-1").with_config_path("apiKeyRef"))
                .unwrap(),
            json!({"secretRef": "ref-1", "configPath": "apiKeyRef"})
        );
        let b: SecretsResolveParams =
            from_json(json!({"secretRef": {"type": "secret_ref", "secretId": "s1"}}));
        assert!(matches!(b.secret_ref, SecretRef::Binding(_)));
        let span = SpanRecordParams::new("transfer", 10, 20)
            .with_attribute("bytes", 42.0)
            .with_attribute("ok", true)
            .with_status(1, None);
        assert_eq!(
            serde_json::to_value(&span).unwrap(),
            json!({"name": "transfer", "attributes": {"bytes": 42.0, "ok": true},
                   "status": {"code": 1}, "startTimeMs": 10, "endTimeMs": 20})
        );
    }

    #[test]
    fn state_http_and_the_rest_wire() {
        let key = StateKey::new("company", Some("c1".into()), "k");
        assert_eq!(
            serde_json::to_value(StateSetParams::new(key, json!({"v": 1}))).unwrap(),
            json!({"scopeKind": "company", "scopeId": "c1", "stateKey": "k", "value": {"v": 1}})
        );
        let r: HttpFetchResult = from_json(json!({"status": 200, "statusText": "OK",
            "headers": {"content-type": "text/plain"}, "body": "hi"}));
        assert_eq!(r.status, 200);
        assert_eq!(
            serde_json::to_value(MetricsWriteParams::new("m", 1.5)).unwrap(),
            json!({"name": "m", "value": 1.5})
        );
        assert_eq!(
            serde_json::to_value(TelemetryTrackParams::new("e")).unwrap(),
            json!({"eventName": "e"})
        );
        assert_eq!(
            serde_json::to_value(ActivityLogParams::new("c1", "m")).unwrap(),
            json!({"companyId": "c1", "message": "m"})
        );
        assert_eq!(
            serde_json::to_value(EventsEmitParams::new("n", "c1", json!(null))).unwrap(),
            json!({"name": "n", "companyId": "c1", "payload": null})
        );
    }
}
