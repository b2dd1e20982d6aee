//! The provider config: `root` and `syncTimeoutMs`.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `root` | absolute path of the directory holding the lease directories | env `LOCAL_PROVIDER_ROOT`, else `$TMPDIR/paperclip-local-provider` |
//! | `syncTimeoutMs` | positive integer, the transfer timeout of a sync call | [`DEFAULT_SYNC_TIMEOUT_MS`] (5 minutes) |
//!
//! Other keys (the host may add some, such as `timeoutMs`) are ignored. Config values are never
//! logged and never quoted in error messages.

use std::path::PathBuf;

use paperclip_sandbox_sdk::schemars::{self, JsonSchema};
use serde_json::{Map, Value};

/// The default sync transfer timeout: 300,000 ms.
pub const DEFAULT_SYNC_TIMEOUT_MS: u64 = 300_000;

/// The largest accepted `syncTimeoutMs`: the host's own call-timeout clamp (2^31 − 1 ms).
pub const MAX_SYNC_TIMEOUT_MS: u64 = 2_147_483_647;

/// The environment variable naming the default root.
pub const ROOT_ENV: &str = "LOCAL_PROVIDER_ROOT";

/// Where the local provider keeps lease directories and how long a native sync may take.
//
// A validated config. Its JSON Schema (schemars, through the SDK's re-export) is the driver's
// `configSchema`: the doc comments are the descriptions the host shows.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalConfig {
    /// Absolute directory holding the lease directories.
    #[schemars(
        title = "Lease root",
        description = "Absolute directory holding the lease directories (default: $LOCAL_PROVIDER_ROOT, else $TMPDIR/paperclip-local-provider)."
    )]
    pub root: Option<PathBuf>,
    /// Transfer timeout of a native sync call, in milliseconds.
    #[serde(default = "default_sync_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_SYNC_TIMEOUT_MS))]
    pub sync_timeout_ms: u64,
}

fn default_sync_timeout_ms() -> u64 {
    DEFAULT_SYNC_TIMEOUT_MS
}

/// The result of validating a config: errors, warnings and the normalized form.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    /// The config, when it is valid.
    pub config: Option<LocalConfig>,
    /// Why it is invalid.
    pub errors: Vec<String>,
    /// What is odd but accepted.
    pub warnings: Vec<String>,
}

impl LocalConfig {
    /// Validate a config object (see the module docs).
    pub fn validate(value: &Value) -> Validation {
        let mut errors = Vec::new();
        let warnings = Vec::new();
        let empty = Map::new();
        let obj = match value {
            Value::Object(o) => o,
            Value::Null => &empty,
            _ => {
                return Validation {
                    config: None,
                    errors: vec!["config must be an object".into()],
                    warnings,
                }
            }
        };
        let root = match obj.get("root") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.starts_with('/') => Some(PathBuf::from(s)),
            Some(Value::String(_)) => {
                errors.push("root must be an absolute path".into());
                None
            }
            Some(_) => {
                errors.push("root must be a string".into());
                None
            }
        };
        let sync_timeout_ms = match obj.get("syncTimeoutMs") {
            None | Some(Value::Null) => DEFAULT_SYNC_TIMEOUT_MS,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_SYNC_TIMEOUT_MS).contains(&n) => n,
                _ => {
                    errors.push(format!(
                        "syncTimeoutMs must be a whole number from 1 to {MAX_SYNC_TIMEOUT_MS}"
                    ));
                    DEFAULT_SYNC_TIMEOUT_MS
                }
            },
        };
        let config = errors.is_empty().then_some(LocalConfig { root, sync_timeout_ms });
        Validation { config, errors, warnings }
    }

    /// Parse a config, failing with the first error.
    pub fn parse(value: &Value) -> crate::error::Result<Self> {
        let v = Self::validate(value);
        v.config.ok_or_else(|| {
            crate::LocalError::invalid(format!("invalid config: {}", v.errors.join("; ")))
        })
    }

    /// The normalized config the host should persist: the original keys, with `syncTimeoutMs`
    /// made explicit.
    pub fn normalized(&self, original: &Value) -> Value {
        let mut out = original.as_object().cloned().unwrap_or_default();
        out.insert("syncTimeoutMs".into(), Value::from(self.sync_timeout_ms));
        Value::Object(out)
    }

    /// The directory holding the lease directories: `root`, else `$LOCAL_PROVIDER_ROOT`, else
    /// `$TMPDIR/paperclip-local-provider`.
    pub fn resolved_root(&self) -> PathBuf {
        if let Some(root) = &self.root {
            return root.clone();
        }
        match std::env::var_os(ROOT_ENV) {
            Some(r) if !r.is_empty() => PathBuf::from(r),
            _ => std::env::temp_dir().join("paperclip-local-provider"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_defaults_and_valid_values() {
        let c = LocalConfig::parse(&json!({})).unwrap();
        assert_eq!(c, LocalConfig { root: None, sync_timeout_ms: DEFAULT_SYNC_TIMEOUT_MS });
        let c = LocalConfig::parse(
            &json!({"root": "/srv/leases", "syncTimeoutMs": 5000, "timeoutMs": 1}),
        )
        .unwrap();
        assert_eq!(c.root, Some(PathBuf::from("/srv/leases")));
        assert_eq!(c.resolved_root(), PathBuf::from("/srv/leases"));
        assert_eq!(c.sync_timeout_ms, 5000);
        assert_eq!(
            c.normalized(&json!({"root": "/srv/leases"})),
            json!({"root": "/srv/leases", "syncTimeoutMs": 5000})
        );
        assert!(LocalConfig::parse(&Value::Null).is_ok());
    }

    #[test]
    fn rejects_bad_values_without_quoting_them() {
        let v = LocalConfig::validate(&json!({"root": "relative/secret-path", "syncTimeoutMs": 0}));
        assert!(v.config.is_none());
        assert_eq!(v.errors.len(), 2);
        assert!(v.errors.iter().all(|e| !e.contains("secret-path")));
        assert!(LocalConfig::parse(&json!({"syncTimeoutMs": 1.5})).is_err());
        assert!(LocalConfig::parse(&json!({"root": 7})).is_err());
        assert!(LocalConfig::parse(&json!([1])).is_err());
    }
}
