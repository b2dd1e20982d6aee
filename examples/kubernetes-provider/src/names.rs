//! Lease ids and object names, labels and annotations of a creation attempt.
//!
//! A fresh acquisition creates its Pod (or Job) under the SDK kit's creation name
//! `paperclip-create-<id>` (`paperclip_sandbox_sdk::kit::creation`). The object carries the
//! kit's ownership labels, and the same pairs, with their exact values, as annotations (a label
//! value is limited to 63 characters; a longer identifier is labelled by its hash). Every later
//! lookup trusts the annotations: an object under the name without them is never touched.
//!
//! The lease id is `pod-<id>` or `job-<id>`: it names the backend and the object, and never
//! starts with the creation prefix (a creation name alone is no proof of what exists).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use paperclip_sandbox_sdk::kit::creation::CreationAttempt;
pub use paperclip_sandbox_sdk::kit::creation::{
    LABEL_COMPANY, LABEL_ENVIRONMENT, LABEL_PROVIDER, LABEL_REUSE, LABEL_RUN,
};
use paperclip_sandbox_sdk::prelude::CreationOperation;
use sha2::{Digest, Sha256};

use crate::config::Backend;

/// The value of [`LABEL_PROVIDER`].
pub const PROVIDER_LABEL_VALUE: &str = "kubernetes";
/// Annotation: the RFC 3339 expiry the host asked for.
pub const ANNOTATION_EXPIRES_AT: &str = "paperclip-expires-at";

/// A lease id: the backend and the attempt id (the object is `paperclip-create-<attempt>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRef {
    /// Pod or Job.
    pub backend: Backend,
    /// The attempt id.
    pub attempt: String,
}

impl LeaseRef {
    /// Parses `pod-<id>` / `job-<id>`.
    pub fn parse(id: &str) -> Option<LeaseRef> {
        let (backend, attempt) = if let Some(a) = id.strip_prefix("pod-") {
            (Backend::Pod, a)
        } else if let Some(a) = id.strip_prefix("job-") {
            (Backend::Job, a)
        } else {
            return None;
        };
        valid_attempt(attempt).then(|| LeaseRef { backend, attempt: attempt.to_owned() })
    }

    /// The lease id.
    pub fn id(&self) -> String {
        format!("{}-{}", self.backend.as_str(), self.attempt)
    }

    /// The Pod's or Job's name.
    pub fn object_name(&self) -> String {
        CreationOperation::new(1, self.attempt.clone()).creation_name()
    }
}

/// True when `id` makes an object name: lowercase letters, digits and `-`, and
/// `paperclip-create-<id>` at most 63 characters (a Job's name is also a label value).
pub fn valid_attempt(id: &str) -> bool {
    !id.is_empty()
        && id.len() + CreationOperation::NAME_PREFIX.len() <= 63
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.ends_with('-')
}

/// A label value for `v`: itself when Kubernetes accepts it (at most 63 characters of
/// letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit), else `h` and
/// the first 40 hex digits of its SHA-256.
pub fn label_value(v: &str) -> String {
    let ok = v.len() <= 63
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && v.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    if ok {
        return v.to_owned();
    }
    let d = Sha256::digest(v.as_bytes());
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!("h{}", &hex[..40])
}

/// The object's labels of `attempt` (values Kubernetes accepts; see [`label_value`]).
pub fn labels_of(attempt: &CreationAttempt) -> BTreeMap<String, String> {
    attempt.labels().into_iter().map(|(k, v)| (k, label_value(&v))).collect()
}

/// The object's annotations of `attempt`: the ownership pairs with their exact values.
pub fn annotations_of(attempt: &CreationAttempt) -> BTreeMap<String, String> {
    attempt.labels().into_iter().collect()
}

/// The annotation `key` of `meta`.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

/// True when `meta` is this provider's object for `company` and `environment`.
pub fn belongs(meta: &ObjectMeta, company: &str, environment: &str) -> bool {
    annotation(meta, LABEL_PROVIDER) == Some(PROVIDER_LABEL_VALUE)
        && annotation(meta, LABEL_COMPANY) == Some(company)
        && annotation(meta, LABEL_ENVIRONMENT) == Some(environment)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::prelude::EnvironmentBaseParams;

    #[test]
    fn lease_ids_names_labels_and_annotations() {
        use paperclip_sandbox_sdk::prelude::AcquireLeaseParams;
        let mut p =
            AcquireLeaseParams::new(EnvironmentBaseParams::new("kubernetes", "c1", "e1"), "r1");
        p.creation_operation = Some(CreationOperation::new(1, "2b0c-op"));
        let a = CreationAttempt::for_acquire(&p, PROVIDER_LABEL_VALUE, "0".repeat(64));
        let lease = LeaseRef { backend: Backend::Pod, attempt: a.id.clone() };
        assert_eq!(
            (lease.id(), lease.object_name()),
            ("pod-2b0c-op".into(), a.creation_name.clone())
        );
        assert_eq!(LeaseRef::parse("pod-2b0c-op"), Some(lease));
        assert_eq!(LeaseRef::parse("job-x").map(|l| l.backend), Some(Backend::Job));
        assert_eq!(LeaseRef::parse("paperclip-create-x"), None);
        assert_eq!(LeaseRef::parse("pod-UPPER"), None);
        assert!(valid_attempt(&a.id) && !valid_attempt("Has_Upper"));
        let meta = ObjectMeta {
            name: Some(a.creation_name.clone()),
            annotations: Some(annotations_of(&a)),
            ..ObjectMeta::default()
        };
        assert!(a.owns(meta.name.as_deref(), |k| annotation(&meta, k)));
        assert!(belongs(&meta, "c1", "e1") && !belongs(&meta, "c2", "e1"));
        assert_eq!(labels_of(&a)[LABEL_PROVIDER], "kubernetes");
    }

    #[test]
    fn long_or_odd_identifiers_are_labelled_by_hash() {
        assert_eq!(label_value("company-1"), "company-1");
        let long = "c".repeat(64);
        let v = label_value(&long);
        assert!(v.starts_with('h') && v.len() == 41 && v != long);
        assert!(label_value("-x").starts_with('h'));
    }
}
