//! The result of manifest validation: [`ValidationReport`] and [`Issue`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Issue codes. The zod codes are those the published validator reports (zod 4); the others
/// are this crate's own, for rules of the 2026-11 contract and for warnings.
pub mod code {
    /// A value of the wrong JSON type, or a missing required field.
    pub const INVALID_TYPE: &str = "invalid_type";
    /// A value outside an enum or literal.
    pub const INVALID_VALUE: &str = "invalid_value";
    /// A string that does not match the required pattern.
    pub const INVALID_FORMAT: &str = "invalid_format";
    /// A string, array or number below its minimum.
    pub const TOO_SMALL: &str = "too_small";
    /// A string, array or number above its maximum.
    pub const TOO_BIG: &str = "too_big";
    /// Keys a strict object does not declare.
    pub const UNRECOGNIZED_KEYS: &str = "unrecognized_keys";
    /// A cross-field rule of the published validator (`superRefine` / `refine`).
    pub const CUSTOM: &str = "custom";
    /// paperclip-2026-11: a `sandboxCapabilities` key removed from the contract.
    pub const REMOVED_CAPABILITY: &str = "removed_capability";
    /// paperclip-2026-11: a `creationOperationVersion` other than 1.
    pub const UNSUPPORTED_VERSION: &str = "unsupported_version";
    /// Warning: a driver without `kind`, never resolved as a sandbox provider.
    pub const KIND_OMITTED: &str = "kind_omitted";
    /// Warning: `nativeSyncIn` and `nativeSyncOut` declared with different values (D4).
    pub const NATIVE_SYNC_MISMATCH: &str = "native_sync_mismatch";
    /// Warning (paperclip-2026-11): an extension capability key the contract does not cover (D1).
    pub const EXTENSION_CAPABILITY: &str = "extension_capability";
    /// Warning: a top-level field whose contents this validator does not check.
    pub const NOT_CHECKED: &str = "not_checked";
}

/// One validation issue: an error or a warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Issue {
    /// The issue path joined with `.` as zod does, array positions as numbers
    /// (`environmentDrivers.0.sandboxCapabilities`); empty for the manifest itself.
    pub path: String,
    /// The issue code (see [`code`]).
    pub code: String,
    /// What is wrong and what would be right.
    pub message: String,
}

impl Issue {
    /// An issue from its parts.
    pub fn new(
        path: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Issue { path: path.into(), code: code.into(), message: message.into() }
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "(manifest): {}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The result of [`validate`](crate::manifest::validate).
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    /// True when the manifest is accepted (`errors` is empty).
    pub valid: bool,
    /// Every error, in the order the published validator reports them.
    pub errors: Vec<Issue>,
    /// Findings that do not reject the manifest.
    pub warnings: Vec<Issue>,
    /// The parsed manifest when valid: unknown top-level keys stripped, the
    /// `supportsSetupTokenLogin` alias folded into `supportsLoginPty`.
    pub output: Option<Value>,
}

impl ValidationReport {
    /// The `sandboxCapabilities` keys used as extensions,
    /// one entry per use, in manifest order.
    pub fn extension_keys(&self) -> Vec<&str> {
        self.warnings
            .iter()
            .filter(|w| w.code == code::EXTENSION_CAPABILITY)
            .filter_map(|w| w.path.rsplit('.').next())
            .collect()
    }

    /// The first error, if any.
    pub fn first_error(&self) -> Option<&Issue> {
        self.errors.first()
    }
}
