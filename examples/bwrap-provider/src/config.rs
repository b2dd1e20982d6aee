//! The provider config: the local provider's keys plus `bwrap`.
//!
//! | Key | Type | Default |
//! |---|---|---|
//! | `root`, `syncTimeoutMs` | as in [`local_provider::config`] | as there |
//! | `bwrap` | `"auto"` (wrap when the prerequisites hold) or `"off"` (never wrap) | `"auto"` |
//!
//! Config values are never quoted in error messages.

use serde_json::Value;

/// The config key choosing whether commands are wrapped.
pub const BWRAP_KEY: &str = "bwrap";

/// The `bwrap` config setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
