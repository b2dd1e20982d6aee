//! initialize, health, shutdown and configChanged.
//!
//! Every `initialize` field is tolerant of absence: SDK tests send only
//! `{manifest, config, databaseNamespace}`.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_with::skip_serializing_none;

use super::lease::JsonObject;

/// Instance metadata of `initialize` (`instanceInfo`). The published SDK type declares only
/// `instanceId` and `hostVersion`; HOST-2026-09 also sends the deployment keys.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstanceInfo {
    /// The Paperclip instance (the host's default is "default").
    pub instance_id: Option<String>,
    /// The host's semver (the host's default is "0.0.0").
    pub host_version: Option<String>,
    /// The deployment mode.
    pub deployment_mode: Option<String>,
    /// The deployment exposure.
    pub deployment_exposure: Option<String>,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of `initialize` (A.3).
#[skip_serializing_none]
#[derive(Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeParams {
    /// The validated manifest, verbatim.
    #[serde(default)]
    pub manifest: JsonObject,
    /// The bootstrap config (always `{}` from HOST-2026-09; company config comes through
    /// `configChanged`).
    #[serde(default)]
    pub config: JsonObject,
    /// Instance metadata.
    pub instance_info: Option<InstanceInfo>,
    /// The host API version (`manifest.apiVersion`, 1).
    pub api_version: Option<u64>,
    /// The plugin database namespace (`null` reads as absent).
    pub database_namespace: Option<String>,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `config` is printed as `[redacted]`: it carries resolved secrets.
impl std::fmt::Debug for InitializeParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitializeParams")
            .field("manifest", &self.manifest)
            .field("config", &crate::secret::Redacted)
            .field("instance_info", &self.instance_info)
            .field("api_version", &self.api_version)
            .field("database_namespace", &self.database_namespace)
            .field("extra", &self.extra)
            .finish()
    }
}

/// Result of `initialize`. A missing `supportedMethods` counts as `[]`, which verifies no
/// capability.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// `false` makes the host kill the worker.
    pub ok: bool,
    /// The methods the worker implements (the discovery list).
    pub supported_methods: Option<Vec<String>>,
}

impl InitializeResult {
    /// `{ok: true, supportedMethods}`.
    pub fn ok<I: IntoIterator<Item = S>, S: Into<String>>(supported_methods: I) -> Self {
        InitializeResult {
            ok: true,
            supported_methods: Some(supported_methods.into_iter().map(Into::into).collect()),
        }
    }

    /// The advertised methods, empty when absent.
    pub fn supported_methods(&self) -> &[String] {
        self.supported_methods.as_deref().unwrap_or_default()
    }
}

/// Declares params that carry nothing (`Record<string, never>`): any value, `null` included,
/// is accepted and ignored; serialized as `{}`.
macro_rules! empty_params {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::ser::SerializeMap::end(s.serialize_map(Some(0))?)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                IgnoredAny::deserialize(d).map(|_| $name)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "object" })
            }
        }
    };
}

empty_params! {
    /// Params of `health`: `{}`.
    HealthParams
}

empty_params! {
    /// Params of `shutdown`: `{}`. The result is `null`; the worker then exits with 0.
    ShutdownParams
}

/// `health` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HealthStatus {
    /// Healthy.
    #[default]
    Ok,
    /// Working with reduced function.
    Degraded,
    /// Not working.
    Error,
}

/// Result of `health` (`PluginHealthDiagnostics`); the default is `{status: "ok"}`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HealthResult {
    /// Status.
    pub status: HealthStatus,
    /// Human-readable description.
    pub message: Option<String>,
    /// Key-value diagnostics.
    pub details: Option<JsonObject>,
}

impl HealthResult {
    /// `{status}`.
    pub fn new(status: HealthStatus) -> Self {
        HealthResult { status, message: None, details: None }
    }

    /// Sets the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Params of `configChanged`: a company's config, replayed after initialize. The result is
/// `null`.
#[skip_serializing_none]
#[derive(Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConfigChangedParams {
    /// The company-scoped config.
    #[serde(default)]
    pub config: JsonObject,
    /// The company (`null` reads as absent).
    pub company_id: Option<String>,
    /// Keys this crate does not know, preserved verbatim.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `config` is printed as `[redacted]`: it carries resolved secrets.
impl std::fmt::Debug for ConfigChangedParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigChangedParams")
            .field("config", &crate::secret::Redacted)
            .field("company_id", &self.company_id)
            .field("extra", &self.extra)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn initialize_full_as_host_2026_09_sends_it() {
        let v = json!({
            "manifest": {"id": "acme.sbx", "apiVersion": 1},
            "config": {},
            "instanceInfo": {"instanceId": "default", "hostVersion": "2026.916.1",
                             "deploymentMode": "local_trusted", "deploymentExposure": "private", "region": "eu"},
            "apiVersion": 1,
            "databaseNamespace": "plugin_acme",
            "future": true
        });
        let p: InitializeParams = from_json(v.clone());
        let info = p.instance_info.as_ref().unwrap();
        assert_eq!(info.host_version.as_deref(), Some("2026.916.1"));
        assert_eq!(info.extra["region"], "eu");
        assert_eq!(p.manifest["id"], "acme.sbx");
        assert_eq!(p.extra["future"], true);
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
    }

    #[test]
    fn initialize_tolerates_missing_fields() {
        let p: InitializeParams =
            from_json(json!({"manifest": {"id": "x"}, "config": {}, "databaseNamespace": null}));
        assert_eq!(p.instance_info, None);
        assert_eq!(p.api_version, None);
        assert_eq!(p.database_namespace, None);
        let empty: InitializeParams = from_json(json!({}));
        assert!(empty.manifest.is_empty());
    }

    #[test]
    fn initialize_result_wire() {
        let r = InitializeResult::ok(["health", "environmentExecute"]);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"ok": true, "supportedMethods": ["health", "environmentExecute"]})
        );
        let bare: InitializeResult = from_json(json!({"ok": false}));
        assert!(bare.supported_methods().is_empty());
    }

    #[test]
    fn health_and_shutdown() {
        assert_eq!(serde_json::to_value(HealthResult::default()).unwrap(), json!({"status": "ok"}));
        let d = HealthResult::new(HealthStatus::Degraded).with_message("slow");
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"status": "degraded", "message": "slow"})
        );
        for v in [json!({}), Value::Null, json!({"x": 1})] {
            assert_eq!(from_json::<ShutdownParams>(v.clone()), ShutdownParams);
            assert_eq!(from_json::<HealthParams>(v), HealthParams);
        }
        assert_eq!(serde_json::to_value(ShutdownParams).unwrap(), json!({}));
        assert_eq!(serde_json::to_value(()).unwrap(), Value::Null);
    }

    #[test]
    fn config_changed_wire() {
        let v = json!({"config": {"apiKey": "k"}, "companyId": "c1"});
        let p: ConfigChangedParams = from_json(v.clone());
        assert_eq!(p.company_id.as_deref(), Some("c1"));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let null: ConfigChangedParams = from_json(json!({"config": {}, "companyId": null}));
        assert_eq!(null.company_id, None);
    }
}
