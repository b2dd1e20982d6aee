//! The provider config: the local provider's keys plus `bwrap`.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `root`, `syncTimeoutMs` | as in [`local_provider::config`] | as there |
//! | `bwrap` | `"auto"` (wrap when the prerequisites hold) or `"off"` (never wrap) | `"auto"` |
//!
//! Config values are never quoted in error messages.
//!
//! The runtime validation is the local provider's
//! ([`LocalConfig::validate`](local_provider::config::LocalConfig::validate)) plus
//! [`BwrapSetting::from_config`]; the driver's `configSchema` is derived from [`BwrapConfig`],
//! which mirrors the keys they read ([`CONFIG_KEYS`]).

use std::borrow::Cow;
use std::path::PathBuf;

use local_provider::config::{DEFAULT_SYNC_TIMEOUT_MS, MAX_SYNC_TIMEOUT_MS};
use paperclip_sandbox_sdk::schemars::{self, json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The config key choosing whether commands are wrapped.
pub const BWRAP_KEY: &str = "bwrap";

/// The keys the provider reads: the local provider's `root` and `syncTimeoutMs`, and
/// [`BWRAP_KEY`]; every other key is ignored. The `configSchema` ([`BwrapConfig`]) has exactly
/// these properties.
pub const CONFIG_KEYS: &[&str] = &["root", "syncTimeoutMs", BWRAP_KEY];

/// Where the leases live, how long a native sync may take, and whether commands are wrapped.
//
// The source of the driver's `configSchema` (the doc comments are the descriptions the host
// shows). `root` and `syncTimeoutMs` mirror `LocalConfig`, which validates them at run time
// (absolute path, range) without quoting values.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BwrapConfig {
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
    /// Whether commands are wrapped.
    #[serde(default)]
    #[schemars(
        title = "bubblewrap wrapper",
        description = "auto: wrap commands with bubblewrap when its prerequisites hold (advisory, best-effort, no security claim); off: never."
    )]
    pub bwrap: BwrapSetting,
}

fn default_sync_timeout_ms() -> u64 {
    DEFAULT_SYNC_TIMEOUT_MS
}

/// The `bwrap` config setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BwrapSetting {
    /// Wrap commands when the prerequisites hold; run them plainly otherwise.
    #[default]
    Auto,
    /// Never wrap.
    Off,
}

impl BwrapSetting {
    /// The wire value (`"auto"` / `"off"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Off => "off",
        }
    }

    /// The setting in a config object: absent or `null` is [`BwrapSetting::Auto`]; anything
    /// other than `"auto"` or `"off"` is an error message.
    pub fn from_config(config: &Value) -> Result<Self, String> {
        match config.get(BWRAP_KEY) {
            None | Some(Value::Null) => Ok(Self::Auto),
            Some(Value::String(s)) if s == "auto" => Ok(Self::Auto),
            Some(Value::String(s)) if s == "off" => Ok(Self::Off),
            Some(_) => Err("bwrap must be \"auto\" or \"off\"".into()),
        }
    }
}

/// A plain string `enum` (`["auto", "off"]`) rather than the `oneOf` schemars derives for
/// documented variants: the form hosts render for a choice.
impl JsonSchema for BwrapSetting {
    fn schema_name() -> Cow<'static, str> {
        "BwrapSetting".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": [Self::Auto.as_str(), Self::Off.as_str()],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_auto_off_and_rejects_the_rest_without_quoting() {
        assert_eq!(BwrapSetting::from_config(&json!({})), Ok(BwrapSetting::Auto));
        assert_eq!(BwrapSetting::from_config(&json!({"bwrap": null})), Ok(BwrapSetting::Auto));
        assert_eq!(BwrapSetting::from_config(&json!({"bwrap": "auto"})), Ok(BwrapSetting::Auto));
        assert_eq!(BwrapSetting::from_config(&json!({"bwrap": "off"})), Ok(BwrapSetting::Off));
        let err = BwrapSetting::from_config(&json!({"bwrap": "secret-value"})).unwrap_err();
        assert!(!err.contains("secret-value"), "{err}");
        assert!(BwrapSetting::from_config(&json!({"bwrap": true})).is_err());
        assert_eq!(BwrapSetting::Off.as_str(), "off");
    }
}
