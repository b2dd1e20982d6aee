use paperclip_sandbox_protocol::capabilities::{Capability, REMOVED_KEYS};
use paperclip_sandbox_protocol::manifest::{Category, DriverDeclaration, Manifest};
use paperclip_sandbox_protocol::HostProfile;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Value};

/// The plugin manifest of a provider: [`PluginManifest`] (implemented by
/// [`#[derive(PluginManifest)]`](macro@crate::PluginManifest)), the [`ManifestSpec`] the derive
/// fills in, the provider's `configSchema` from its config type ([`config_schema`]), and the
/// ES module the host installs ([`manifest_module`]).
///
/// A binary hands its provider to [`run_plugin`](crate::run_plugin), which answers
/// `--manifest [--profile <profile>]` on the command line (see [`cli`](crate::cli)).
///
/// A provider whose plugin manifest is known at compile time.
///
/// Implemented by [`#[derive(PluginManifest)]`](macro@crate::PluginManifest), which checks the
/// declaration when the provider compiles (see the macro's documentation).
pub trait PluginManifest {
    /// The host profile the provider targets: what `--manifest` prints without `--profile`.
    const PROFILE: HostProfile;

    /// The manifest for hosts of `profile`. For `paperclip-2026-09` the 2026-11-only driver
    /// fields are left out.
    fn manifest(profile: HostProfile) -> Manifest;
}

/// Everything a sandbox-provider manifest says, as the derive writes it down. Call
/// [`ManifestSpec::to_manifest`] to render it for a host profile.
#[derive(Debug, Clone, Copy)]
pub struct ManifestSpec {
    /// Plugin id (`^[a-z0-9][a-z0-9._-]*$`).
    pub id: &'static str,
    /// Plugin version (semver); the derive defaults it to the provider crate's version.
    pub version: &'static str,
    /// Plugin display name (1–100 characters).
    pub display_name: &'static str,
    /// Plugin description (1–500 characters).
    pub description: &'static str,
    /// Author (1–200 characters).
    pub author: &'static str,
    /// Categories; sandbox providers use `automation`.
    pub categories: &'static [Category],
    /// The worker entry point (`entrypoints.worker`).
    pub worker: &'static str,
    /// The driver key (`^[a-z0-9][a-z0-9._-]*$`).
    pub driver_key: &'static str,
    /// The driver's display name (1–100 characters).
    pub driver_display_name: &'static str,
    /// The driver's description (at most 500 characters).
    pub driver_description: Option<&'static str>,
    /// Declared sandbox capabilities, in declaration order.
    pub capabilities: &'static [(Capability, bool)],
    /// paperclip-2026-11: `defaultAcquireTimeoutMs`.
    pub default_acquire_timeout_ms: Option<u64>,
    /// paperclip-2026-11: `creationOperationVersion`.
    pub creation_operation_version: Option<u32>,
    /// paperclip-2026-11: `supportsTasks` (the provider implements `environmentTask`).
    pub supports_tasks: Option<bool>,
    /// The driver's `configSchema` (see [`config_schema`] and [`empty_config_schema`]).
    pub config_schema: fn() -> Value,
}

impl ManifestSpec {
    /// The manifest for hosts of `profile`: the plugin with `environment.drivers.register` and
    /// one `sandbox_provider` driver. For `paperclip-2026-09` the 2026-11-only driver fields are
    /// omitted. A capability key the profile does not accept, or one removed from the capability
    /// contract (`concurrentSyncOperations`), is never emitted.
    pub fn to_manifest(&self, profile: HostProfile) -> Manifest {
        let mut driver =
            DriverDeclaration::sandbox_provider(self.driver_key, self.driver_display_name)
                .with_config_schema((self.config_schema)());
        if let Some(description) = self.driver_description {
            driver = driver.with_description(description);
        }
        for &(capability, value) in self.capabilities {
            if capability.in_profile(profile) && !REMOVED_KEYS.contains(&capability.key()) {
                driver = driver.with_capability(capability, value);
            }
        }
        if profile.is_november() {
            driver.default_acquire_timeout_ms = self.default_acquire_timeout_ms;
            driver.creation_operation_version = self.creation_operation_version;
            driver.supports_tasks = self.supports_tasks;
        }
        let mut manifest =
            Manifest::sandbox_provider(self.id, self.version, self.display_name, self.worker)
                .with_description(self.description)
                .with_author(self.author)
                .with_driver(driver);
        manifest.categories = self.categories.to_vec();
        manifest
    }
}

/// The `configSchema` of a provider config type, generated with schemars: every subschema
/// inlined (the host does not resolve `$ref`), no `$schema` key, and no root `title` when it is
/// only the Rust type name (doc comments become `description`s). Fields of type
/// [`Secret`](crate::protocol::secret::Secret) carry `"format": "secret-ref"`.
///
/// # Panics
///
/// When the schema is not one the host can read: its root is not `"type": "object"` (the
/// config must be a struct or a map), or a `$ref` remains (a recursive config type). The
/// derive's generated `manifest()` calls this, so `--manifest` and the manifest snapshot tests
/// fail loudly instead of producing a manifest the host rejects.
pub fn config_schema<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft07();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("definitions");
        // The root title schemars derives from the Rust type name means nothing to the host.
        if obj.get("title").and_then(Value::as_str) == Some(T::schema_name().as_ref()) {
            obj.remove("title");
        }
    }
    if let Err(problem) = check_host_readable(&value) {
        panic!("the configSchema of `{}` {problem}", std::any::type_name::<T>());
    }
    value
}

/// The `configSchema` of a provider without config: `{"type":"object","properties":{}}`.
pub fn empty_config_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Why a config schema cannot go into a manifest.
fn check_host_readable(schema: &Value) -> Result<(), String> {
    if schema.get("type") != Some(&json!("object")) {
        return Err(format!(
            "must have `\"type\": \"object\"` at its root (use a struct or a map), got {}",
            schema.get("type").map_or_else(|| "no type".to_owned(), Value::to_string)
        ));
    }
    fn find_ref(v: &Value, path: &mut Vec<String>) -> Option<String> {
        match v {
            Value::Object(m) => {
                if m.contains_key("$ref") {
                    return Some(format!("/{}", path.join("/")));
                }
                for (k, child) in m {
                    path.push(k.clone());
                    let found = find_ref(child, path);
                    path.pop();
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(i, child)| {
                path.push(i.to_string());
                let found = find_ref(child, path);
                path.pop();
                found
            }),
            _ => None,
        }
    }
    match find_ref(schema, &mut Vec::new()) {
        Some(at) => Err(format!(
            "has a `$ref` at {at} that the host cannot resolve (recursive config types are not \
             supported)"
        )),
        None => Ok(()),
    }
}

/// The manifest as the ES module the host imports (`manifest.js`): a default export of the
/// manifest object, as pretty JSON.
pub fn manifest_module(manifest: &Manifest) -> String {
    let json = serde_json::to_string_pretty(&manifest.to_value())
        .expect("a manifest value always serializes");
    format!(
        "// Generated by paperclip-sandbox from the provider's #[derive(PluginManifest)].\n\
         const manifest = {json};\n\nexport default manifest;\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::secret::Secret;

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Nested {
        region: String,
    }

    #[derive(JsonSchema)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Config {
        api_key: Secret,
        backup_key: Option<Secret>,
        location: Nested,
        timeout_ms: Option<u32>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    fn spec() -> ManifestSpec {
        ManifestSpec {
            id: "acme.sbx",
            version: "1.2.3",
            display_name: "Acme",
            description: "Acme sandboxes",
            author: "Acme Inc.",
            categories: &[Category::Automation],
            worker: "./dist/worker.cjs",
            driver_key: "acme",
            driver_display_name: "Acme",
            driver_description: None,
            capabilities: &[
                (Capability::ReusableLeases, true),
                (Capability::ConcurrentSyncOperations, true),
            ],
            default_acquire_timeout_ms: Some(60_000),
            creation_operation_version: Some(1),
            supports_tasks: Some(true),
            config_schema: config_schema::<Config>,
        }
    }

    #[test]
    fn config_schema_is_inline_with_secret_refs() {
        let schema = config_schema::<Config>();
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["apiKey"],
            json!({"type": "string", "format": "secret-ref"})
        );
        assert_eq!(schema["properties"]["backupKey"]["format"], "secret-ref");
        assert_eq!(schema["properties"]["location"]["properties"]["region"]["type"], "string");
        assert!(schema.get("$schema").is_none() && schema.get("definitions").is_none());
        assert!(schema.get("title").is_none(), "{schema}");
        assert!(!schema.to_string().contains("$ref"), "{schema}");
        assert_eq!(schema["required"], json!(["apiKey", "location"]));
    }

    #[test]
    fn unreadable_schemas_are_rejected() {
        let err = check_host_readable(&json!({"type": "string"})).unwrap_err();
        assert!(err.contains("\"string\""), "{err}");
        let recursive = std::panic::catch_unwind(config_schema::<Tree>).unwrap_err();
        let message = recursive.downcast_ref::<String>().unwrap();
        assert!(message.contains("$ref") && message.contains("Tree"), "{message}");
    }

    #[test]
    fn profiles_drop_what_the_host_does_not_accept() {
        let new = spec().to_manifest(HostProfile::Paperclip2026_11).to_value();
        let driver = &new["environmentDrivers"][0];
        assert_eq!(driver["defaultAcquireTimeoutMs"], 60_000);
        assert_eq!(driver["creationOperationVersion"], 1);
        assert_eq!(driver["supportsTasks"], true);
        assert_eq!(driver["sandboxCapabilities"], json!({"reusableLeases": true}));
        let old = spec().to_manifest(HostProfile::Paperclip2026_09).to_value();
        let driver = &old["environmentDrivers"][0];
        assert!(driver.get("defaultAcquireTimeoutMs").is_none());
        assert!(driver.get("creationOperationVersion").is_none());
        assert!(driver.get("supportsTasks").is_none());
        assert_eq!(driver["sandboxCapabilities"], json!({"reusableLeases": true}));
        for profile in HostProfile::ALL {
            let report = spec().to_manifest(profile).validate(profile);
            assert!(report.valid, "{profile}: {:?}", report.errors);
        }
    }

    #[test]
    fn module_has_a_default_export_of_the_manifest() {
        let manifest = spec().to_manifest(HostProfile::Paperclip2026_11);
        let module = manifest_module(&manifest);
        let start = module.find("const manifest = ").unwrap() + "const manifest = ".len();
        let end = module.rfind(";\n\nexport default manifest;\n").unwrap();
        let parsed: Value = serde_json::from_str(&module[start..end]).unwrap();
        assert_eq!(parsed, manifest.to_value());
        assert!(module.ends_with("export default manifest;\n"));
    }
}
