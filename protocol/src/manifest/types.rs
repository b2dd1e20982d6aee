//! Typed manifest parts with builders.
//!
//! These types serialize to the JSON the host reads (camelCase, unset options omitted). They
//! do not enforce the rules; [`Manifest::validate`] runs the validator on the serialized form.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};
use serde_with::skip_serializing_none;

use super::report::ValidationReport;
use super::vocabulary::*;
use crate::capabilities::{Capability, CAPABILITIES};
use crate::profile::HostProfile;

/// A plugin category (`categories`). Sandbox providers use [`Category::Automation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// `connector`.
    Connector,
    /// `workspace`.
    Workspace,
    /// `automation`.
    Automation,
    /// `ui`.
    Ui,
}

/// A driver's `kind`. The host resolves only [`DriverKind::SandboxProvider`] drivers as
/// sandbox providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriverKind {
    /// `environment_driver`: a generic environment driver.
    EnvironmentDriver,
    /// `sandbox_provider`: a sandbox provider.
    SandboxProvider,
}

/// `entrypoints`: the worker script and the optional UI bundle.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Entrypoints {
    /// The worker entry point (at least 1 character).
    pub worker: String,
    /// The UI bundle, required when the manifest declares UI slots or launchers.
    pub ui: Option<String>,
}

/// The plugin manifest. Fields a sandbox provider does not use are kept raw
/// in [`Manifest::extra`].
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Plugin id: `^[a-z0-9][a-z0-9._-]*$`.
    pub id: String,
    /// Always [`PLUGIN_API_VERSION`].
    pub api_version: u32,
    /// Plugin version (semver, e.g. `1.0.0` or `1.0.0-beta.1`).
    pub version: String,
    /// 1–100 characters.
    pub display_name: String,
    /// 1–500 characters.
    pub description: String,
    /// 1–200 characters.
    pub author: String,
    /// At least one category.
    pub categories: Vec<Category>,
    /// Lowest host version (semver); must equal `minimumPaperclipVersion` when both are set.
    pub minimum_host_version: Option<String>,
    /// Legacy alias of `minimumHostVersion`.
    pub minimum_paperclip_version: Option<String>,
    /// At least one entry of [`PLUGIN_CAPABILITIES`]; providers need
    /// [`ENVIRONMENT_DRIVERS_REGISTER`].
    pub capabilities: Vec<String>,
    /// Entry points.
    pub entrypoints: Entrypoints,
    /// The plugin's instance config schema (a JSON Schema object).
    pub instance_config_schema: Option<Value>,
    /// The environment drivers this plugin provides.
    pub environment_drivers: Option<Vec<DriverDeclaration>>,
    /// Other top-level fields (`jobs`, `tools`, `ui`, …), kept as raw JSON.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Manifest {
    /// A sandbox-provider manifest: `apiVersion` 1, category `automation`, capability
    /// `environment.drivers.register`, description and author defaulting to the display name,
    /// and no drivers yet.
    pub fn sandbox_provider(
        id: impl Into<String>,
        version: impl Into<String>,
        display_name: impl Into<String>,
        worker: impl Into<String>,
    ) -> Self {
        let display_name = display_name.into();
        Manifest {
            id: id.into(),
            api_version: PLUGIN_API_VERSION,
            version: version.into(),
            description: display_name.clone(),
            author: display_name.clone(),
            display_name,
            categories: vec![Category::Automation],
            minimum_host_version: None,
            minimum_paperclip_version: None,
            capabilities: vec![ENVIRONMENT_DRIVERS_REGISTER.to_owned()],
            entrypoints: Entrypoints { worker: worker.into(), ui: None },
            instance_config_schema: None,
            environment_drivers: Some(Vec::new()),
            extra: Map::new(),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the author.
    pub fn with_author(mut self, author: impl Into<String>) -> Self {
        self.author = author.into();
        self
    }

    /// Sets `minimumHostVersion`.
    pub fn with_minimum_host_version(mut self, version: impl Into<String>) -> Self {
        self.minimum_host_version = Some(version.into());
        self
    }

    /// Adds a capability (ignored when already present).
    pub fn with_capability(mut self, capability: impl Into<String>) -> Self {
        let capability = capability.into();
        if !self.capabilities.contains(&capability) {
            self.capabilities.push(capability);
        }
        self
    }

    /// Appends an environment driver.
    pub fn with_driver(mut self, driver: DriverDeclaration) -> Self {
        self.environment_drivers.get_or_insert_with(Vec::new).push(driver);
        self
    }

    /// The manifest as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a manifest always serializes")
    }

    /// Validates the serialized manifest against `profile` (see [`validate`](super::validate)).
    pub fn validate(&self, profile: HostProfile) -> ValidationReport {
        super::validate(&self.to_value(), profile)
    }
}

/// One entry of `environmentDrivers`. The host's
/// schema is strict: a field it does not know rejects the manifest, so leave the 2026-11 fields
/// unset when targeting paperclip-2026-09.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DriverDeclaration {
    /// paperclip-2026-11: the driver runs Runner tasks (`environmentTask`).
    pub supports_tasks: Option<bool>,
    /// Driver key: `^[a-z0-9][a-z0-9._-]*$`, unique in the manifest.
    pub driver_key: String,
    /// Driver kind; sandbox providers must set [`DriverKind::SandboxProvider`].
    pub kind: Option<DriverKind>,
    /// 1–100 characters.
    pub display_name: String,
    /// At most 500 characters.
    pub description: Option<String>,
    /// Legacy opt-in to reusable leases (`sandboxCapabilities.reusableLeases` wins).
    pub supports_reusable_leases: Option<bool>,
    /// Declared sandbox capabilities.
    pub sandbox_capabilities: Option<SandboxCapabilities>,
    /// The driver offers interactive setup.
    pub supports_interactive_setup: Option<bool>,
    /// At most 10 connection types of 1–100 characters.
    pub interactive_setup_connection_types: Option<Vec<String>>,
    /// The driver captures templates.
    pub supports_template_capture: Option<bool>,
    /// 1–100 characters.
    pub template_ref_kind: Option<String>,
    /// Which config field a captured template fills.
    pub template_config_binding: Option<TemplateConfigBinding>,
    /// At most 20 paths of 1–200 characters.
    pub template_identity_paths: Option<Vec<String>>,
    /// The driver deletes templates.
    pub supports_template_delete: Option<bool>,
    /// The driver hosts an interactive login on a pseudo-terminal.
    pub supports_login_pty: Option<bool>,
    /// Deprecated alias of `supportsLoginPty`; must not differ from it.
    pub supports_setup_token_login: Option<bool>,
    /// The provider's config schema: a JSON Schema object (required).
    pub config_schema: Value,
    /// paperclip-2026-11: default acquire budget, 1..=86,400,000 ms.
    pub default_acquire_timeout_ms: Option<u64>,
    /// paperclip-2026-11: creation operation protocol version, only 1.
    pub creation_operation_version: Option<u32>,
}

impl DriverDeclaration {
    /// A `sandbox_provider` driver with an empty object config schema.
    pub fn sandbox_provider(
        driver_key: impl Into<String>,
        display_name: impl Into<String>,
    ) -> Self {
        DriverDeclaration {
            supports_tasks: None,
            driver_key: driver_key.into(),
            kind: Some(DriverKind::SandboxProvider),
            display_name: display_name.into(),
            description: None,
            supports_reusable_leases: None,
            sandbox_capabilities: None,
            supports_interactive_setup: None,
            interactive_setup_connection_types: None,
            supports_template_capture: None,
            template_ref_kind: None,
            template_config_binding: None,
            template_identity_paths: None,
            supports_template_delete: None,
            supports_login_pty: None,
            supports_setup_token_login: None,
            config_schema: json!({"type": "object", "properties": {}}),
            default_acquire_timeout_ms: None,
            creation_operation_version: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the config schema (a JSON Schema object).
    pub fn with_config_schema(mut self, schema: Value) -> Self {
        self.config_schema = schema;
        self
    }

    /// Declares one sandbox capability.
    pub fn with_capability(mut self, capability: Capability, value: bool) -> Self {
        self.sandbox_capabilities
            .get_or_insert_with(SandboxCapabilities::new)
            .set(capability, value);
        self
    }

    /// Sets the declared sandbox capabilities.
    pub fn with_capabilities(mut self, capabilities: SandboxCapabilities) -> Self {
        self.sandbox_capabilities = Some(capabilities);
        self
    }

    /// paperclip-2026-11: sets `defaultAcquireTimeoutMs`.
    pub fn with_default_acquire_timeout_ms(mut self, ms: u64) -> Self {
        self.default_acquire_timeout_ms = Some(ms);
        self
    }

    /// paperclip-2026-11: sets `supportsTasks` (the driver implements `environmentTask`).
    pub fn with_supports_tasks(mut self, supports: bool) -> Self {
        self.supports_tasks = Some(supports);
        self
    }

    /// paperclip-2026-11: sets `creationOperationVersion`.
    pub fn with_creation_operation_version(mut self, version: u32) -> Self {
        self.creation_operation_version = Some(version);
        self
    }

    /// The effective login flag after the alias fold (`supportsLoginPty`, else the alias).
    pub fn login_pty(&self) -> Option<bool> {
        self.supports_login_pty.or(self.supports_setup_token_login)
    }
}

/// `templateConfigBinding`: the config field a template sets and the fields it clears.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TemplateConfigBinding {
    /// A top-level config key (`^[A-Za-z_][A-Za-z0-9_-]*$`, 1–100 characters), not `provider`.
    pub field: String,
    /// At most 20 unique such keys, not repeating `field`.
    pub unset_fields: Option<Vec<String>>,
}

/// `sandboxCapabilities`: an optional boolean per key of the capability table
/// ([`CAPABILITIES`]). Serializes only the keys that are set, in table order; deserializing
/// rejects keys outside the table. Which keys a host accepts depends on the profile (the
/// validator checks it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxCapabilities(BTreeMap<Capability, bool>);

impl SandboxCapabilities {
    /// No capability declared.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares `capability` as `value`.
    pub fn set(&mut self, capability: Capability, value: bool) -> &mut Self {
        self.0.insert(capability, value);
        self
    }

    /// Builder form of [`set`](Self::set).
    pub fn with(mut self, capability: Capability, value: bool) -> Self {
        self.set(capability, value);
        self
    }

    /// Removes a declaration.
    pub fn unset(&mut self, capability: Capability) -> Option<bool> {
        self.0.remove(&capability)
    }

    /// The declared value, `None` when omitted.
    pub fn get(&self, capability: Capability) -> Option<bool> {
        self.0.get(&capability).copied()
    }

    /// The declared capabilities in table order.
    pub fn iter(&self) -> impl Iterator<Item = (Capability, bool)> + '_ {
        CAPABILITIES.iter().filter_map(|s| self.get(s.capability).map(|v| (s.capability, v)))
    }

    /// True when nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for SandboxCapabilities {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (capability, value) in self.iter() {
            map.serialize_entry(capability.key(), &value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SandboxCapabilities {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CapsVisitor;
        impl<'de> Visitor<'de> for CapsVisitor {
            type Value = SandboxCapabilities;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of sandbox capability booleans")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                const KEYS: &[&str] = &{
                    let mut keys = [""; CAPABILITIES.len()];
                    let mut i = 0;
                    while i < CAPABILITIES.len() {
                        keys[i] = CAPABILITIES[i].key;
                        i += 1;
                    }
                    keys
                };
                let mut caps = SandboxCapabilities::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let capability = Capability::from_key(&key)
                        .ok_or_else(|| de::Error::unknown_field(&key, KEYS))?;
                    let value: bool = map.next_value()?;
                    caps.set(capability, value);
                }
                Ok(caps)
            }
        }
        deserializer.deserialize_map(CapsVisitor)
    }
}

impl JsonSchema for SandboxCapabilities {
    fn schema_name() -> Cow<'static, str> {
        "SandboxCapabilities".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        let properties: Map<String, Value> = CAPABILITIES
            .iter()
            .map(|s| (s.key.to_owned(), json!({"type": "boolean", "description": s.meaning})))
            .collect();
        schemars::json_schema!({
            "type": "object",
            "description": "Declared sandbox capabilities; every value an optional boolean. paperclip-2026-11 rejects concurrentSyncOperations.",
            "properties": properties,
            "additionalProperties": false
        })
    }
}

impl FromIterator<(Capability, bool)> for SandboxCapabilities {
    fn from_iter<I: IntoIterator<Item = (Capability, bool)>>(iter: I) -> Self {
        SandboxCapabilities(iter.into_iter().collect())
    }
}
