//! The creation-cleanup ownership envelope:
//! `{"schema":"paperclip/environment-creation-cleanup/v1","cleanup":{…},"acquisitionDiagnostic"?:{…}}`.
//!
//! The ownership is non-secret evidence of an allocation whose creation failed; the host
//! records it and tears the allocation down. Readers and builders carry only the allowlisted
//! fields ([`OWNERSHIP_KEYS`]), so credentials, config and provider exceptions never cross.

use serde_json::{Map, Value};

use super::diagnostic::{AcquisitionDiagnostic, ACQUISITION_DIAGNOSTIC_KEY};
use crate::methods::name;
use crate::profile::HostProfile;

/// The `schema` string of the envelope.
pub const CREATION_CLEANUP_SCHEMA: &str = "paperclip/environment-creation-cleanup/v1";
/// The most labels an ownership may carry.
pub const MAX_LABELS: usize = 16;
/// The longest identifier.
pub const MAX_IDENTIFIER_LEN: usize = 200;
/// The only keys an ownership (`cleanup`) object ever carries, in wire order.
pub const OWNERSHIP_KEYS: &[&str] = &[
    "providerLeaseId",
    "observedProviderLeaseId",
    "companyId",
    "environmentId",
    "runId",
    "attemptId",
    "accountFingerprint",
    "labels",
];

const IDENTIFIER_RULE: &str = "an identifier: 1 to 200 characters of A-Z, a-z, 0-9, `_` and `-`";

/// Why an ownership is invalid. Offending values are never echoed: they may be secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnershipError {
    /// The envelope or `cleanup` is not a non-array object.
    #[error("creation-cleanup {what} must be a JSON object (not an array or null)")]
    NotAnObject {
        /// `"data"` or `"cleanup"`.
        what: &'static str,
    },
    /// `schema` is not the creation-cleanup schema.
    #[error("creation-cleanup data.schema must be \"paperclip/environment-creation-cleanup/v1\"")]
    Schema,
    /// A required identifier is absent.
    #[error("ownership `{field}` is required: {rule}")]
    Missing {
        /// The wire field name.
        field: &'static str,
        /// The rule.
        rule: &'static str,
    },
    /// An identifier breaks its rule.
    #[error("ownership `{field}` must be {rule}")]
    Identifier {
        /// The wire field name.
        field: &'static str,
        /// The rule.
        rule: &'static str,
    },
    /// `accountFingerprint` is not 64 lowercase hex digits.
    #[error("ownership `accountFingerprint` must be 64 lowercase hexadecimal digits (a-f, 0-9)")]
    Fingerprint,
    /// `labels` is not a non-array object.
    #[error("ownership `labels` must be a JSON object of label key to identifier")]
    LabelsNotObject,
    /// Too many labels.
    #[error("ownership `labels` holds {count} entries; at most 16 are allowed")]
    TooManyLabels {
        /// How many labels there are.
        count: usize,
    },
    /// A label key does not match `^paperclip-[a-z-]+$`.
    #[error("ownership label #{index} has an invalid key: it must match ^paperclip-[a-z-]+$")]
    LabelKey {
        /// The zero-based position of the label.
        index: usize,
    },
    /// The same label key appears twice.
    #[error("ownership label #{index} repeats an earlier label key")]
    DuplicateLabel {
        /// The zero-based position of the repeated label.
        index: usize,
    },
    /// A label value is not an identifier.
    #[error("ownership label #{index} has an invalid value: it must be {rule}")]
    LabelValue {
        /// The zero-based position of the label.
        index: usize,
        /// The rule.
        rule: &'static str,
    },
}

/// True for an identifier: `^[a-zA-Z0-9_-]{1,200}$`.
pub fn is_identifier(value: &str) -> bool {
    (1..=MAX_IDENTIFIER_LEN).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// True for an account fingerprint: `^[a-f0-9]{64}$`.
pub fn is_account_fingerprint(value: &str) -> bool {
    value.len() == 64 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// True for a label key: `^paperclip-[a-z-]+$`.
pub fn is_label_key(key: &str) -> bool {
    key.strip_prefix("paperclip-").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
    })
}

/// The fields of an [`Ownership`] before validation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnershipFields {
    /// The provider lease id to tear down.
    pub provider_lease_id: String,
    /// A provider id observed with matching ownership, distinct from a provisional name.
    pub observed_provider_lease_id: Option<String>,
    /// The company the host sent.
    pub company_id: String,
    /// The environment the host sent.
    pub environment_id: String,
    /// The run the host sent, when any.
    pub run_id: Option<String>,
    /// The creation attempt.
    pub attempt_id: String,
    /// A non-secret fingerprint of the provider account: 64 lowercase hex digits.
    pub account_fingerprint: String,
    /// Labels `paperclip-…` → identifier, at most 16, in order.
    pub labels: Vec<(String, String)>,
}

/// A validated creation-cleanup ownership (the `cleanup` object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    fields: OwnershipFields,
}

fn check_identifier(field: &'static str, value: &str) -> Result<(), OwnershipError> {
    if is_identifier(value) {
        Ok(())
    } else {
        Err(OwnershipError::Identifier { field, rule: IDENTIFIER_RULE })
    }
}

impl Ownership {
    /// Validates the fields; the error names the field and its rule.
    pub fn new(fields: OwnershipFields) -> Result<Self, OwnershipError> {
        check_identifier("providerLeaseId", &fields.provider_lease_id)?;
        if let Some(observed) = &fields.observed_provider_lease_id {
            check_identifier("observedProviderLeaseId", observed)?;
        }
        check_identifier("companyId", &fields.company_id)?;
        check_identifier("environmentId", &fields.environment_id)?;
        if let Some(run_id) = &fields.run_id {
            check_identifier("runId", run_id)?;
        }
        check_identifier("attemptId", &fields.attempt_id)?;
        if !is_account_fingerprint(&fields.account_fingerprint) {
            return Err(OwnershipError::Fingerprint);
        }
        if fields.labels.len() > MAX_LABELS {
            return Err(OwnershipError::TooManyLabels { count: fields.labels.len() });
        }
        for (index, (key, value)) in fields.labels.iter().enumerate() {
            if !is_label_key(key) {
                return Err(OwnershipError::LabelKey { index });
            }
            if fields.labels[..index].iter().any(|(k, _)| k == key) {
                return Err(OwnershipError::DuplicateLabel { index });
            }
            if !is_identifier(value) {
                return Err(OwnershipError::LabelValue { index, rule: IDENTIFIER_RULE });
            }
        }
        Ok(Ownership { fields })
    }

    /// Reads a `cleanup` object: only allowlisted fields are read, everything else is dropped.
    /// Optional fields (`runId`, `observedProviderLeaseId`) may be absent, but not `null`.
    pub fn parse(cleanup: &Value) -> Result<Self, OwnershipError> {
        let row = match cleanup {
            Value::Object(row) => row,
            _ => return Err(OwnershipError::NotAnObject { what: "cleanup" }),
        };
        let required = |field: &'static str| -> Result<String, OwnershipError> {
            match row.get(field) {
                None => Err(OwnershipError::Missing { field, rule: IDENTIFIER_RULE }),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(OwnershipError::Identifier { field, rule: IDENTIFIER_RULE }),
            }
        };
        let optional = |field: &'static str| -> Result<Option<String>, OwnershipError> {
            match row.get(field) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(OwnershipError::Identifier { field, rule: IDENTIFIER_RULE }),
            }
        };
        let provider_lease_id = required("providerLeaseId")?;
        let observed_provider_lease_id = optional("observedProviderLeaseId")?;
        let company_id = required("companyId")?;
        let environment_id = required("environmentId")?;
        let run_id = optional("runId")?;
        let attempt_id = required("attemptId")?;
        let account_fingerprint = match row.get("accountFingerprint") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(OwnershipError::Fingerprint),
        };
        let labels = match row.get("labels") {
            Some(Value::Object(labels)) => labels,
            _ => return Err(OwnershipError::LabelsNotObject),
        };
        if labels.len() > MAX_LABELS {
            return Err(OwnershipError::TooManyLabels { count: labels.len() });
        }
        let labels = labels
            .iter()
            .enumerate()
            .map(|(index, (key, value))| match value {
                Value::String(v) => Ok((key.clone(), v.clone())),
                _ => Err(OwnershipError::LabelValue { index, rule: IDENTIFIER_RULE }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ownership::new(OwnershipFields {
            provider_lease_id,
            observed_provider_lease_id,
            company_id,
            environment_id,
            run_id,
            attempt_id,
            account_fingerprint,
            labels,
        })
    }

    /// [`Ownership::parse`] without the reason.
    pub fn from_json(cleanup: &Value) -> Option<Self> {
        Self::parse(cleanup).ok()
    }

    /// The validated fields.
    pub fn fields(&self) -> &OwnershipFields {
        &self.fields
    }

    /// `providerLeaseId`.
    pub fn provider_lease_id(&self) -> &str {
        &self.fields.provider_lease_id
    }

    /// `observedProviderLeaseId`, when set.
    pub fn observed_provider_lease_id(&self) -> Option<&str> {
        self.fields.observed_provider_lease_id.as_deref()
    }

    /// `companyId`.
    pub fn company_id(&self) -> &str {
        &self.fields.company_id
    }

    /// `environmentId`.
    pub fn environment_id(&self) -> &str {
        &self.fields.environment_id
    }

    /// `runId`, when set.
    pub fn run_id(&self) -> Option<&str> {
        self.fields.run_id.as_deref()
    }

    /// `attemptId`.
    pub fn attempt_id(&self) -> &str {
        &self.fields.attempt_id
    }

    /// `accountFingerprint`.
    pub fn account_fingerprint(&self) -> &str {
        &self.fields.account_fingerprint
    }

    /// The labels, in order.
    pub fn labels(&self) -> &[(String, String)] {
        &self.fields.labels
    }

    /// The same ownership with `observedProviderLeaseId` set (the destroy-with-observation
    /// answer).
    pub fn with_observed_provider_lease_id(
        self,
        observed: impl Into<String>,
    ) -> Result<Self, OwnershipError> {
        let mut fields = self.fields;
        fields.observed_provider_lease_id = Some(observed.into());
        Ownership::new(fields)
    }

    /// True when `other` keeps this ownership's scope: the
    /// six scope keys and the labels are equal; `observedProviderLeaseId` may differ.
    pub fn same_scope(&self, other: &Ownership) -> bool {
        let (a, b) = (&self.fields, &other.fields);
        a.provider_lease_id == b.provider_lease_id
            && a.company_id == b.company_id
            && a.environment_id == b.environment_id
            && a.run_id == b.run_id
            && a.attempt_id == b.attempt_id
            && a.account_fingerprint == b.account_fingerprint
            && a.labels == b.labels
    }

    /// The `cleanup` wire object, allowlisted keys only, in wire order.
    pub fn to_json(&self) -> Value {
        let f = &self.fields;
        let mut row = Map::new();
        row.insert("providerLeaseId".into(), f.provider_lease_id.clone().into());
        if let Some(observed) = &f.observed_provider_lease_id {
            row.insert("observedProviderLeaseId".into(), observed.clone().into());
        }
        row.insert("companyId".into(), f.company_id.clone().into());
        row.insert("environmentId".into(), f.environment_id.clone().into());
        if let Some(run_id) = &f.run_id {
            row.insert("runId".into(), run_id.clone().into());
        }
        row.insert("attemptId".into(), f.attempt_id.clone().into());
        row.insert("accountFingerprint".into(), f.account_fingerprint.clone().into());
        let labels = f.labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        row.insert("labels".into(), Value::Object(labels));
        Value::Object(row)
    }
}

/// Reads a creation-cleanup `error.data` value (`{schema, cleanup, …}`) with a typed error.
pub fn parse_creation_cleanup(data: &Value) -> Result<Ownership, OwnershipError> {
    let data = match data {
        Value::Object(data) => data,
        _ => return Err(OwnershipError::NotAnObject { what: "data" }),
    };
    if data.get("schema").and_then(Value::as_str) != Some(CREATION_CLEANUP_SCHEMA) {
        return Err(OwnershipError::Schema);
    }
    Ownership::parse(data.get("cleanup").unwrap_or(&Value::Null))
}

/// `readEnvironmentCreationCleanupError` on a data value: the allowlisted ownership, or `None`.
pub fn read_creation_cleanup(data: &Value) -> Option<Ownership> {
    parse_creation_cleanup(data).ok()
}

/// [`read_creation_cleanup`] of an error object's `data` — the vectors' `readerInput` shape
/// `{data: {schema, cleanup}}`. `None` for anything else (`null`, `{}`, …).
pub fn read_creation_cleanup_from_error(error: &Value) -> Option<Ownership> {
    read_creation_cleanup(error.get("data")?)
}

/// A whole creation-cleanup envelope as the host reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreationCleanupEnvelope {
    /// The ownership.
    pub ownership: Ownership,
    /// The acquisition diagnostic, when present and valid.
    pub diagnostic: Option<AcquisitionDiagnostic>,
}

/// Reads a creation-cleanup `error.data` value with its diagnostic (invalid diagnostics are
/// dropped; an invalid ownership makes the whole envelope `None`).
pub fn read_creation_cleanup_envelope(data: &Value) -> Option<CreationCleanupEnvelope> {
    let ownership = read_creation_cleanup(data)?;
    let diagnostic =
        data.get(ACQUISITION_DIAGNOSTIC_KEY).and_then(AcquisitionDiagnostic::from_json);
    Some(CreationCleanupEnvelope { ownership, diagnostic })
}

/// The worker-side `error.data` for a creation-cleanup failure thrown by `method`:
///
/// - `environmentAcquireLease`: `{schema, cleanup}` plus `acquisitionDiagnostic` when given;
/// - `environmentDestroyLease`: `{schema, cleanup}` (the diagnostic is never attached);
/// - any other method (`environmentProbe`, …): `None`, no data.
pub fn creation_cleanup_data(
    method: &str,
    ownership: &Ownership,
    diagnostic: Option<&AcquisitionDiagnostic>,
) -> Option<Value> {
    let with_diagnostic = match method {
        name::ENVIRONMENT_ACQUIRE_LEASE => true,
        name::ENVIRONMENT_DESTROY_LEASE => false,
        _ => return None,
    };
    let mut data = Map::new();
    data.insert("schema".into(), CREATION_CLEANUP_SCHEMA.into());
    data.insert("cleanup".into(), ownership.to_json());
    if let (true, Some(diagnostic)) = (with_diagnostic, diagnostic) {
        data.insert(ACQUISITION_DIAGNOSTIC_KEY.into(), diagnostic.to_json());
    }
    Some(Value::Object(data))
}

/// [`creation_cleanup_data`] under a host profile: the envelope is a November feature, so
/// `paperclip-2026-09` (whose SDK never sends `error.data`) never attaches data.
pub fn creation_cleanup_data_for_profile(
    profile: HostProfile,
    method: &str,
    ownership: &Ownership,
    diagnostic: Option<&AcquisitionDiagnostic>,
) -> Option<Value> {
    if profile.is_november() {
        creation_cleanup_data(method, ownership, diagnostic)
    } else {
        None
    }
}

/// Host side: the diagnostic of a creation-cleanup `error.data` (`{schema, cleanup,
/// acquisitionDiagnostic}`). `None` unless the ownership envelope itself is valid
/// ("diagnostics never make an invalid ownership envelope usable") and the diagnostic is valid.
pub fn read_acquisition_diagnostic(data: &Value) -> Option<AcquisitionDiagnostic> {
    read_creation_cleanup(data)?;
    AcquisitionDiagnostic::from_json(data.get(ACQUISITION_DIAGNOSTIC_KEY)?)
}

/// [`read_acquisition_diagnostic`] of an error object's `data` (`{data: {...}}`).
pub fn read_acquisition_diagnostic_from_error(error: &Value) -> Option<AcquisitionDiagnostic> {
    read_acquisition_diagnostic(error.get("data")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> OwnershipFields {
        OwnershipFields {
            provider_lease_id: "paperclip-create-1".into(),
            company_id: "c1".into(),
            environment_id: "e1".into(),
            attempt_id: "a1".into(),
            account_fingerprint: "0".repeat(64),
            labels: vec![("paperclip-provider".into(), "daytona".into())],
            ..OwnershipFields::default()
        }
    }

    #[test]
    fn constructor_names_field_and_rule() {
        assert!(Ownership::new(fields()).is_ok());
        let mut f = fields();
        f.company_id = "a/b".into();
        let err = Ownership::new(f).unwrap_err();
        assert!(err.to_string().contains("`companyId`") && err.to_string().contains("identifier"));
        let mut f = fields();
        f.labels.push(("paperclip-provider".into(), "x".into()));
        assert_eq!(Ownership::new(f), Err(OwnershipError::DuplicateLabel { index: 1 }));
        let mut f = fields();
        f.account_fingerprint = "A".repeat(64);
        assert_eq!(Ownership::new(f), Err(OwnershipError::Fingerprint));
        let mut f = fields();
        f.run_id = Some(String::new());
        assert!(Ownership::new(f).unwrap_err().to_string().contains("`runId`"));
    }

    #[test]
    fn rules_match_the_regexes() {
        assert!(is_identifier(&"a".repeat(200)) && !is_identifier(&"a".repeat(201)));
        assert!(!is_identifier("") && !is_identifier("a.b") && !is_identifier("é"));
        assert!(is_label_key("paperclip-create-attempt") && is_label_key("paperclip--"));
        assert!(!is_label_key("paperclip-") && !is_label_key("paperclip-A") && !is_label_key("x"));
    }

    #[test]
    fn null_optional_is_invalid_and_scope_compare() {
        let mut cleanup = Ownership::new(fields()).unwrap().to_json();
        cleanup["runId"] = Value::Null;
        assert!(Ownership::from_json(&cleanup).is_none());
        let base = Ownership::new(fields()).unwrap();
        let observed = base.clone().with_observed_provider_lease_id("sbx_1").unwrap();
        assert!(base.same_scope(&observed));
        assert_eq!(observed.to_json()["observedProviderLeaseId"], json!("sbx_1"));
        let data = creation_cleanup_data("environmentDestroyLease", &observed, None).unwrap();
        assert_eq!(read_creation_cleanup(&data), Some(observed));
        assert!(creation_cleanup_data_for_profile(
            HostProfile::Paperclip2026_09,
            "environmentAcquireLease",
            &base,
            None
        )
        .is_none());
    }
}
