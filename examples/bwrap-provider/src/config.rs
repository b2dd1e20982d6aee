//! The provider config: the local provider's keys plus `bwrap`.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `root`, `syncTimeoutMs` | as in [`local_provider::config`] | as there |
//! | `bwrap` | `"auto"` (wrap when the prerequisites hold) or `"off"` (never wrap) | `"auto"` |
//!
//! [`BwrapConfig`] is the driver's typed config: the SDK parses each call's config into it
//! and answers a config that does not fit with the path, never the value
//! (`config.bwrap: expected one of `auto`, `off``). It reuses the local provider's key types
//! and implements [`LocalSettings`], so the local provider's hooks run with it (the bwrap
//! provider delegates them to `LocalDriver<BwrapConfig>`). Other keys are kept, as the local
//! provider keeps them.

use std::borrow::Cow;

use local_provider::config::{LeaseRoot, LocalSettings, SyncTimeoutMs};
use paperclip_sandbox_protocol::methods::lease::JsonObject;
use paperclip_sandbox_sdk::schemars::{self, json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Where the leases live, how long a native sync may take, and whether commands are wrapped.
//
// The driver's `configSchema` (the doc comments are the descriptions the host shows).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BwrapConfig {
    /// Absolute directory holding the lease directories, private to the worker's user (default: $LOCAL_PROVIDER_ROOT, else $XDG_RUNTIME_DIR/paperclip-local-provider, else $TMPDIR/paperclip-local-provider-$UID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<LeaseRoot>,
    /// Transfer timeout of a native sync call, in milliseconds.
    #[serde(default)]
    pub sync_timeout_ms: SyncTimeoutMs,
    /// auto: wrap commands with bubblewrap when its prerequisites hold (advisory, best-effort, no security claim); off: never.
    #[serde(default)]
    #[schemars(title = "bubblewrap wrapper")]
    pub bwrap: BwrapSetting,
    /// Keys the provider does not read, kept for the normalized config.
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: JsonObject,
}

impl LocalSettings for BwrapConfig {
    /// The `bwrap` key: the bwrap provider's hooks read it from the per-config backend.
    type Extra = BwrapSetting;

    fn extra(&self) -> BwrapSetting {
        self.bwrap
    }

    fn root(&self) -> Option<&LeaseRoot> {
        self.root.as_ref()
    }

    fn sync_timeout_ms(&self) -> SyncTimeoutMs {
        self.sync_timeout_ms
    }
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
    fn parses_auto_and_off_by_default_auto() {
        let parse = |v| serde_json::from_value::<BwrapConfig>(v).map(|c| c.bwrap);
        assert_eq!(parse(json!({})).unwrap(), BwrapSetting::Auto);
        assert_eq!(parse(json!({"bwrap": "auto"})).unwrap(), BwrapSetting::Auto);
        assert_eq!(parse(json!({"bwrap": "off"})).unwrap(), BwrapSetting::Off);
        assert!(parse(json!({"bwrap": true})).is_err());
        assert_eq!(BwrapSetting::Off.as_str(), "off");
    }
}
