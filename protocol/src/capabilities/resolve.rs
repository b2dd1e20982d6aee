//! Capability resolution: declared, verified, narrowing, effective.
//!
//! For every key of the profile, in table order:
//!
//! ```text
//! effective = verified(key) && (declared[key] ?? !opt_in(key)) && (narrowing[key] ?? true)
//! ```
//!
//! - *verified*: every requirement group of the table row has an advertised method; a missing
//!   method list verifies nothing ([`Capability::verified_by`]).
//! - *declared*: [`DeclaredCapabilities`], read from the driver declaration; `None` stands for an
//!   exact-plugin identity failure, which resolves every key false.
//! - *narrowing*: [`Narrowing`], the per-lease restriction of `buildSandboxCapabilityNarrowing`.
//!
//! The static per-driver-family gate of the host is always open here: a plugin sandbox provider
//! supports every key of its profile.
//!
//! [`ResolveInput`] is the input format of `sandbox-conformance capabilities resolve`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::Capability;
use crate::methods::name;
use crate::profile::HostProfile;

/// The lease policy that keeps `reusableLeases` (every other policy narrows it to false).
pub const REUSE_BY_ENVIRONMENT: &str = "reuse_by_environment";
/// The default lease policy of [`ResolveInput`]: a fresh lease per run.
pub const EPHEMERAL: &str = "ephemeral";

/// JavaScript truthiness of a JSON value (what `a && b` of the host sees).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// The declared side of resolution: `resolveDeclaredSandboxCapabilities(driver)`.
///
/// Each key is either declared (`Some(bool)`) or left to its default (`None`: allowed, unless
/// the key is opt-in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredCapabilities {
    values: BTreeMap<Capability, bool>,
}

impl DeclaredCapabilities {
    /// No key declared: every key takes its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same declaration with `capability` declared `value`.
    pub fn with(mut self, capability: Capability, value: bool) -> Self {
        self.values.insert(capability, value);
        self
    }

    /// Declares `capability` (`Some`) or returns it to its default (`None`).
    pub fn set(&mut self, capability: Capability, value: Option<bool>) {
        match value {
            Some(v) => self.values.insert(capability, v),
            None => self.values.remove(&capability),
        };
    }

    /// The declared value of `capability`, `None` when undeclared.
    pub fn get(&self, capability: Capability) -> Option<bool> {
        self.values.get(&capability).copied()
    }

    /// Whether the declaration allows `capability`: its declared value, else `!opt_in`.
    pub fn allows(&self, capability: Capability) -> bool {
        self.get(capability).unwrap_or(!capability.spec().opt_in)
    }

    /// Reads a driver declaration (`sandboxCapabilities` plus legacy `supportsReusableLeases`)
    /// the way the host does, tolerating garbage:
    ///
    /// - a non-object declaration, or a non-object `sandboxCapabilities`, declares nothing;
    /// - unknown keys (including the removed `concurrentSyncAndExec`) are ignored;
    /// - the nested `reusableLeases` wins whenever the key is present, even when it is `null`
    ///   or `false`; only an absent nested key lets the legacy value through;
    /// - a `null` value is undeclared (`?? default`); any other non-boolean value counts by
    ///   JavaScript truthiness, as in the host. The manifest validator rejects such values, so
    ///   they never reach a real host.
    pub fn from_declaration(declaration: &Value) -> Self {
        let mut declared = Self::new();
        let Some(decl) = declaration.as_object() else { return declared };
        let nested = decl.get("sandboxCapabilities").and_then(Value::as_object);
        if let Some(nested) = nested {
            for (key, value) in nested {
                if let Some(cap) = Capability::from_key(key) {
                    declared.set(cap, (!value.is_null()).then(|| truthy(value)));
                }
            }
        }
        let nested_reuse_present = nested.is_some_and(|n| n.contains_key("reusableLeases"));
        if !nested_reuse_present {
            if let Some(legacy) = decl.get("supportsReusableLeases") {
                let value = (!legacy.is_null()).then(|| truthy(legacy));
                declared.set(Capability::ReusableLeases, value);
            }
        }
        declared
    }
}

/// The per-lease narrowing: `buildSandboxCapabilityNarrowing`. A key without an entry is not
/// restricted; `false` removes the capability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing {
    values: BTreeMap<Capability, bool>,
}

impl Narrowing {
    /// No restriction at all (not what the host builds for a lease: see [`Narrowing::for_lease`]).
    pub fn none() -> Self {
        Self::default()
    }

    /// The host's narrowing for a lease:
    ///
    /// - `reusableLeases` is always set, to `lease_policy == "reuse_by_environment"`;
    /// - `nativeSyncIn` and `nativeSyncOut` are false when `metadata.backend` is exactly the
    ///   string `"job"` (case-sensitive) or `metadata.nativeFileSyncUnsupported` is exactly `true`;
    /// - `config_resolution_failed` narrows `persistentProcessSessions`,
    ///   `incrementalSessionOutput` and `duplexCommandStream` to false.
    ///
    /// A non-object `metadata` narrows nothing.
    pub fn for_lease(lease_policy: &str, metadata: &Value, config_resolution_failed: bool) -> Self {
        let mut narrowing = Self::none();
        narrowing.set(Capability::ReusableLeases, lease_policy == REUSE_BY_ENVIRONMENT);
        let backend_is_job = metadata.get("backend").and_then(Value::as_str) == Some("job");
        let sync_unsupported =
            metadata.get("nativeFileSyncUnsupported").and_then(Value::as_bool) == Some(true);
        if backend_is_job || sync_unsupported {
            narrowing.set(Capability::NativeSyncIn, false);
            narrowing.set(Capability::NativeSyncOut, false);
        }
        if config_resolution_failed {
            narrowing.set(Capability::PersistentProcessSessions, false);
            narrowing.set(Capability::IncrementalSessionOutput, false);
            narrowing.set(Capability::DuplexCommandStream, false);
        }
        narrowing
    }

    /// Sets the narrowing entry of `capability`.
    pub fn set(&mut self, capability: Capability, allowed: bool) {
        self.values.insert(capability, allowed);
    }

    /// The entry of `capability`, `None` when unrestricted.
    pub fn get(&self, capability: Capability) -> Option<bool> {
        self.values.get(&capability).copied()
    }

    /// Whether the narrowing lets `capability` through (`entry ?? true`).
    pub fn allows(&self, capability: Capability) -> bool {
        self.get(capability).unwrap_or(true)
    }
}

/// The effective capabilities of a lease: exactly the profile's keys, in table order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveCapabilities {
    profile: HostProfile,
    values: Vec<(Capability, bool)>,
}

impl EffectiveCapabilities {
    /// The profile the key set belongs to.
    pub fn profile(&self) -> HostProfile {
        self.profile
    }

    /// Every key of the profile with its value, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (Capability, bool)> + '_ {
        self.values.iter().copied()
    }

    /// The value of `capability`, `None` when the profile has no such key.
    pub fn get(&self, capability: Capability) -> Option<bool> {
        self.values.iter().find(|(c, _)| *c == capability).map(|(_, v)| *v)
    }

    /// True when `capability` is in the profile and effective.
    pub fn is_effective(&self, capability: Capability) -> bool {
        self.get(capability).unwrap_or(false)
    }

    /// The keys that resolve true, in table order.
    pub fn effective_keys(&self) -> Vec<&'static str> {
        self.iter().filter(|(_, v)| *v).map(|(c, _)| c.key()).collect()
    }

    /// The snapshot as a JSON object `key → bool`, in table order.
    pub fn to_json(&self) -> Value {
        Value::Object(self.iter().map(|(c, v)| (c.key().to_owned(), Value::Bool(v))).collect())
    }
}

impl Serialize for EffectiveCapabilities {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// Resolves the effective capabilities of a lease.
///
/// `declared` is `None` for an exact-plugin identity failure (every key false, methods not even
/// read); `supported_methods` is `None` for a missing list (verifies nothing).
pub fn resolve(
    profile: HostProfile,
    declared: Option<&DeclaredCapabilities>,
    supported_methods: Option<&[String]>,
    narrowing: &Narrowing,
) -> EffectiveCapabilities {
    let methods = supported_methods.unwrap_or(&[]);
    let values = Capability::for_profile(profile)
        .map(|cap| {
            let value = declared.is_some_and(|declared| {
                cap.verified_by(methods) && declared.allows(cap) && narrowing.allows(cap)
            });
            (cap, value)
        })
        .collect();
    EffectiveCapabilities { profile, values }
}

/// Whether the transfer path uses native sync, i.e. both `environmentSyncIn`
/// and `environmentSyncOut` are advertised and neither direction is narrowed (the host's
/// `supportsSync`). The capability snapshot may differ (V12).
pub fn transfer_uses_native_sync(
    supported_methods: Option<&[String]>,
    narrowing: &Narrowing,
) -> bool {
    let methods = supported_methods.unwrap_or(&[]);
    let has = |m: &str| methods.iter().any(|s| s == m);
    has(name::ENVIRONMENT_SYNC_IN)
        && has(name::ENVIRONMENT_SYNC_OUT)
        && narrowing.allows(Capability::NativeSyncIn)
        && narrowing.allows(Capability::NativeSyncOut)
}

/// The keys [`ResolveInput`] accepts.
const RESOLVE_INPUT_KEYS: &[&str] = &[
    "declaration",
    "supportedMethods",
    "leasePolicy",
    "metadata",
    "configResolutionFailed",
    "leaseMetadata",
    "identity",
];

/// The input of `sandbox-conformance capabilities resolve`: one JSON object
///
/// ```json
/// {"declaration": {"sandboxCapabilities": {...}, "supportsReusableLeases": true},
///  "supportedMethods": ["environmentExecute"],
///  "leasePolicy": "ephemeral",
///  "metadata": {"backend": "job"},
///  "configResolutionFailed": false}
/// ```
///
/// | Key | Required | Meaning |
/// |---|---|---|
/// | `declaration` | yes | the driver declaration object (only `sandboxCapabilities` and `supportsReusableLeases` are read, tolerantly: [`DeclaredCapabilities::from_declaration`]), or `null` for an exact-plugin identity failure (every key false) |
/// | `supportedMethods` | yes | the worker's `supportedMethods`: an array of strings, or `null` for a missing list (verifies nothing) |
/// | `leasePolicy` | no, default `"ephemeral"` | any string; only `"reuse_by_environment"` keeps `reusableLeases` |
/// | `metadata` | no, default `{}` | lease metadata: an object (or `null`); `backend` and `nativeFileSyncUnsupported` are read |
/// | `configResolutionFailed` | no, default `false` | a boolean |
///
/// For feeding the capability-resolution vectors' `input` objects unchanged, two more keys are
/// accepted: `leaseMetadata` (an alias of `metadata`; giving both is an error) and `identity`
/// (`"ok"` or `"failed"`; `"failed"` resolves every key false whatever the declaration). Any
/// other key is rejected, so that a misspelled key never silently takes a default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Value")]
pub struct ResolveInput {
    /// The driver declaration; `None` for an exact-plugin identity failure.
    pub declaration: Option<Map<String, Value>>,
    /// The advertised methods; `None` for a missing list.
    pub supported_methods: Option<Vec<String>>,
    /// The lease policy.
    pub lease_policy: String,
    /// The lease metadata.
    pub metadata: Map<String, Value>,
    /// True when the host failed to resolve the provider config.
    pub config_resolution_failed: bool,
}

/// A wrong shape of a [`ResolveInput`]; the message is one line naming the key and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveInputError {
    /// The input is not a JSON object.
    #[error("capabilities resolve input must be a JSON object, got {got}")]
    NotAnObject {
        /// The JSON type found.
        got: &'static str,
    },
    /// A required key is absent.
    #[error("capabilities resolve input: `{key}` is required ({rule})")]
    Missing {
        /// The key.
        key: &'static str,
        /// What the value must be.
        rule: &'static str,
    },
    /// A key has the wrong JSON type.
    #[error("capabilities resolve input: `{key}` must be {rule}, got {got}")]
    WrongType {
        /// The key (with an index for array elements, e.g. `supportedMethods[2]`).
        key: String,
        /// What the value must be.
        rule: &'static str,
        /// The JSON type found.
        got: &'static str,
    },
    /// A key outside the format.
    #[error("capabilities resolve input: unknown key `{key}` (expected one of: declaration, supportedMethods, leasePolicy, metadata, configResolutionFailed)")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// Both `metadata` and its alias `leaseMetadata`.
    #[error("capabilities resolve input: give `metadata` or its alias `leaseMetadata`, not both")]
    DuplicateMetadata,
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong(key: impl Into<String>, rule: &'static str, value: &Value) -> ResolveInputError {
    ResolveInputError::WrongType { key: key.into(), rule, got: json_type(value) }
}

impl ResolveInput {
    /// Reads and checks the input format (see the type documentation).
    pub fn from_json(input: &Value) -> Result<Self, ResolveInputError> {
        let obj =
            input.as_object().ok_or(ResolveInputError::NotAnObject { got: json_type(input) })?;
        if let Some(key) = obj.keys().find(|k| !RESOLVE_INPUT_KEYS.contains(&k.as_str())) {
            return Err(ResolveInputError::UnknownKey { key: key.clone() });
        }
        const DECL_RULE: &str = "the driver declaration object, or null for an identity failure";
        let declaration = match obj.get("declaration") {
            None => return Err(ResolveInputError::Missing { key: "declaration", rule: DECL_RULE }),
            Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map.clone()),
            Some(other) => return Err(wrong("declaration", DECL_RULE, other)),
        };
        const METHODS_RULE: &str = "an array of method-name strings, or null for a missing list";
        let supported_methods = match obj.get("supportedMethods") {
            None => {
                return Err(ResolveInputError::Missing {
                    key: "supportedMethods",
                    rule: METHODS_RULE,
                })
            }
            Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        item.as_str().map(str::to_owned).ok_or_else(|| {
                            wrong(format!("supportedMethods[{i}]"), "a method-name string", item)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(other) => return Err(wrong("supportedMethods", METHODS_RULE, other)),
        };
        let lease_policy = match obj.get("leasePolicy") {
            None | Some(Value::Null) => EPHEMERAL.to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(wrong(
                    "leasePolicy",
                    "a lease policy string such as \"ephemeral\"",
                    other,
                ))
            }
        };
        let metadata_key = match (obj.contains_key("metadata"), obj.contains_key("leaseMetadata")) {
            (true, true) => return Err(ResolveInputError::DuplicateMetadata),
            (false, true) => "leaseMetadata",
            _ => "metadata",
        };
        let metadata = match obj.get(metadata_key) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => return Err(wrong(metadata_key, "a lease metadata object", other)),
        };
        let config_resolution_failed = match obj.get("configResolutionFailed") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(wrong("configResolutionFailed", "a boolean", other)),
        };
        let identity_failed = match obj.get("identity") {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) if s == "ok" => false,
            Some(Value::String(s)) if s == "failed" => true,
            Some(other) => return Err(wrong("identity", "\"ok\" or \"failed\"", other)),
        };
        Ok(ResolveInput {
            declaration: if identity_failed { None } else { declaration },
            supported_methods,
            lease_policy,
            metadata,
            config_resolution_failed,
        })
    }

    /// The declared capabilities, `None` for an identity failure.
    pub fn declared(&self) -> Option<DeclaredCapabilities> {
        self.declaration
            .as_ref()
            .map(|d| DeclaredCapabilities::from_declaration(&Value::Object(d.clone())))
    }

    /// The lease's narrowing.
    pub fn narrowing(&self) -> Narrowing {
        Narrowing::for_lease(
            &self.lease_policy,
            &Value::Object(self.metadata.clone()),
            self.config_resolution_failed,
        )
    }

    /// The native-sync rule for this input: [`transfer_uses_native_sync`].
    pub fn transfer_uses_native_sync(&self) -> bool {
        transfer_uses_native_sync(self.supported_methods.as_deref(), &self.narrowing())
    }
}

impl TryFrom<Value> for ResolveInput {
    type Error = ResolveInputError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        ResolveInput::from_json(&value)
    }
}

impl fmt::Display for EffectiveCapabilities {
    /// One `key=bool` pair per table row, comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (cap, value) in self.iter() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{}={value}", cap.key())?;
        }
        Ok(())
    }
}

/// Resolves a [`ResolveInput`] under `profile`.
pub fn resolve_input(profile: HostProfile, input: &ResolveInput) -> EffectiveCapabilities {
    let declared = input.declared();
    resolve(profile, declared.as_ref(), input.supported_methods.as_deref(), &input.narrowing())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn garbage_declarations_declare_nothing() {
        for garbage in [json!(null), json!("x"), json!([1]), json!({"sandboxCapabilities": 3})] {
            assert_eq!(
                DeclaredCapabilities::from_declaration(&garbage),
                DeclaredCapabilities::new()
            );
        }
        let d = DeclaredCapabilities::from_declaration(&json!({
            "sandboxCapabilities": {"reusableLeases": null, "nativeSyncIn": 0, "bogus": true},
            "supportsReusableLeases": true
        }));
        assert_eq!(d.get(Capability::ReusableLeases), None, "nested null blocks the legacy value");
        assert_eq!(d.get(Capability::NativeSyncIn), Some(false));
        assert!(d.allows(Capability::ReusableLeases));
    }

    #[test]
    fn input_shape_errors_are_one_line_and_name_the_key() {
        let cases = [
            (json!([]), "JSON object"),
            (json!({"supportedMethods": []}), "`declaration` is required"),
            (json!({"declaration": {}}), "`supportedMethods` is required"),
            (json!({"declaration": 1, "supportedMethods": []}), "`declaration` must be"),
            (json!({"declaration": {}, "supportedMethods": "x"}), "`supportedMethods` must be"),
            (json!({"declaration": {}, "supportedMethods": ["a", 2]}), "`supportedMethods[1]`"),
            (json!({"declaration": {}, "supportedMethods": [], "leasePolicy": 1}), "leasePolicy"),
            (json!({"declaration": {}, "supportedMethods": [], "metadata": []}), "`metadata`"),
            (json!({"declaration": {}, "supportedMethods": [], "typo": 1}), "unknown key `typo`"),
            (
                json!({"declaration": {}, "supportedMethods": [], "configResolutionFailed": "y"}),
                "configResolutionFailed",
            ),
        ];
        for (input, needle) in cases {
            let err = ResolveInput::from_json(&input).unwrap_err().to_string();
            assert!(err.contains(needle), "{err} lacks {needle}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn defaults_and_serde_entry_point() {
        let input: ResolveInput =
            serde_json::from_str(r#"{"declaration": null, "supportedMethods": null}"#).unwrap();
        assert_eq!(input.lease_policy, EPHEMERAL);
        assert!(input.metadata.is_empty());
        assert!(!input.config_resolution_failed);
        let eff = resolve_input(HostProfile::Paperclip2026_09, &input);
        assert_eq!(eff.iter().count(), 9);
        assert!(eff.effective_keys().is_empty());
        let err = serde_json::from_str::<ResolveInput>(r#"{"declaration": 5}"#).unwrap_err();
        assert!(err.to_string().contains("`declaration` must be"));
    }

    #[test]
    fn effective_json_is_in_table_order() {
        let methods = vec!["environmentExecute".to_owned()];
        let eff = resolve(
            HostProfile::Paperclip2026_11,
            Some(&DeclaredCapabilities::new()),
            Some(&methods),
            &Narrowing::for_lease(EPHEMERAL, &json!({}), false),
        );
        let keys: Vec<String> = eff.to_json().as_object().unwrap().keys().cloned().collect();
        let table: Vec<&str> =
            Capability::for_profile(HostProfile::Paperclip2026_11).map(Capability::key).collect();
        assert_eq!(keys, table);
        assert_eq!(eff.get(Capability::ConcurrentSyncOperations), None);
        assert!(eff.to_string().contains("persistentProcessSessions=true"));
    }
}
