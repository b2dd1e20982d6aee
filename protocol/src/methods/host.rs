//! Worker→host calls a provider may make: `log`, `config.get`.
//! `execute.log` is in [`super::execute`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::lease::JsonObject;

/// Level of a `log` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogLevel {
    /// Information.
    Info,
    /// A warning.
    Warn,
    /// An error.
    Error,
    /// Debug detail.
    Debug,
}

/// Params of the worker→host `log` notification or request. The result of the request form
/// is `null`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LogParams {
    /// Level.
    pub level: LogLevel,
    /// The message; never include secrets.
    pub message: String,
    /// Structured fields.
    pub meta: Option<JsonObject>,
    /// The owning company (instance scope when absent; `null` reads as absent).
    pub company_id: Option<String>,
}

impl LogParams {
    /// A log line without meta.
    pub fn new(level: LogLevel, message: impl Into<String>) -> Self {
        LogParams { level, message: message.into(), meta: None, company_id: None }
    }

    /// Sets the structured fields.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Params of the worker→host `config.get` request. The result is the company's plugin config
/// (a JSON object).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConfigGetParams {
    /// The company; the invocation's company when absent.
    pub company_id: Option<String>,
}

impl ConfigGetParams {
    /// Params for `company_id` (or the invocation's company with `None`).
    pub fn new(company_id: Option<String>) -> Self {
        ConfigGetParams { company_id }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    #[test]
    fn log_wire() {
        let mut meta = JsonObject::new();
        meta.insert("leaseId".into(), json!("sbx1"));
        let l = LogParams::new(LogLevel::Warn, "slow start").with_meta(meta);
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            json!({"level": "warn", "message": "slow start", "meta": {"leaseId": "sbx1"}})
        );
        let back: LogParams =
            from_json(json!({"level": "debug", "message": "m", "companyId": null, "x": 1}));
        assert_eq!(back, LogParams::new(LogLevel::Debug, "m"));
        assert!(
            serde_json::from_value::<LogParams>(json!({"level": "trace", "message": "m"})).is_err()
        );
    }

    #[test]
    fn config_get_wire() {
        assert_eq!(serde_json::to_value(ConfigGetParams::default()).unwrap(), json!({}));
        assert_eq!(
            serde_json::to_value(ConfigGetParams::new(Some("c1".into()))).unwrap(),
            json!({"companyId": "c1"})
        );
    }
}
