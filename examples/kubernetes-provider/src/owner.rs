//! Creation attempts and lease ids: the object name, the ownership labels and annotations, and
//! the ownership envelope.
//!
//! A fresh acquisition creates its Pod (or Job) under the name `paperclip-create-<id>` (the
//! host's `creationOperation.id`, or a generated UUID). The object carries labels naming the
//! provider, the attempt, the company, the environment, the run and the reuse policy, and the
//! same pairs, with their exact values, as annotations (a label value is limited to 63
//! characters; a longer identifier is labelled by its hash). Every later lookup trusts the
//! annotations: an object under the name without them is never touched.
//!
//! The lease id is `pod-<id>` or `job-<id>`: it names the backend and the object, and never
//! starts with the creation prefix (a creation name alone is no proof of what exists).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use paperclip_sandbox_sdk::prelude::{AcquireLeaseParams, CreationOperation, LeasePolicy};
use paperclip_sandbox_sdk::protocol::envelope::{Ownership, OwnershipError, OwnershipFields};
use sha2::{Digest, Sha256};

use crate::config::Backend;

/// Label: which provider made the object.
pub const LABEL_PROVIDER: &str = "paperclip-provider";
/// The value of [`LABEL_PROVIDER`].
pub const PROVIDER_LABEL_VALUE: &str = "kubernetes";
/// Label: the company.
pub const LABEL_COMPANY: &str = "paperclip-company-id";
/// Label: the environment.
pub const LABEL_ENVIRONMENT: &str = "paperclip-environment-id";
/// Label: the run.
pub const LABEL_RUN: &str = "paperclip-run-id";
/// Label: `true` for a reusable lease.
pub const LABEL_REUSE: &str = "paperclip-reuse-lease";
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

/// A version-4 UUID from the kernel's random source.
pub fn generate_uuid() -> String {
    let hex = local_provider::random_hex(16);
    let mut b: Vec<char> = hex.chars().collect();
    b[12] = '4';
    b[16] = ['8', '9', 'a', 'b'][(b[16].to_digit(16).unwrap_or(0) & 3) as usize];
    let s: String = b.into_iter().collect();
    format!("{}-{}-{}-{}-{}", &s[..8], &s[8..12], &s[12..16], &s[16..20], &s[20..])
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

/// One fresh creation: who asked, under which name, with which labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The lease id this attempt makes.
    pub lease: LeaseRef,
    /// `paperclip-create-<id>`.
    pub creation_name: String,
    /// The company.
    pub company_id: String,
    /// The environment.
    pub environment_id: String,
    /// The run.
    pub run_id: String,
    /// Whether the lease is reusable (`leasePolicy: reuse_by_environment`).
    pub reusable: bool,
    /// The account fingerprint ([`crate::cluster::account_fingerprint`]).
    pub account_fingerprint: String,
}

impl Attempt {
    /// The attempt of an acquisition; `None` when `creationOperation.id` cannot name an object.
    pub fn for_acquire<C>(
        params: &AcquireLeaseParams<C>,
        backend: Backend,
        fingerprint: String,
    ) -> Option<Self> {
        let id = match &params.creation_operation {
            Some(op) => op.id.clone(),
            None => generate_uuid(),
        };
        if !valid_attempt(&id) {
            return None;
        }
        let lease = LeaseRef { backend, attempt: id };
        Some(Attempt {
            creation_name: lease.object_name(),
            lease,
            company_id: params.base.company_id.clone(),
            environment_id: params.base.environment_id.clone(),
            run_id: params.run_id.clone(),
            reusable: params.lease_policy == Some(LeasePolicy::ReuseByEnvironment),
            account_fingerprint: fingerprint,
        })
    }

    /// The ownership pairs with their exact values, in envelope order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        [
            (CreationOperation::ATTEMPT_LABEL, self.lease.attempt.as_str()),
            (LABEL_PROVIDER, PROVIDER_LABEL_VALUE),
            (LABEL_COMPANY, self.company_id.as_str()),
            (LABEL_ENVIRONMENT, self.environment_id.as_str()),
            (LABEL_RUN, self.run_id.as_str()),
            (LABEL_REUSE, if self.reusable { "true" } else { "false" }),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The object's labels (values Kubernetes accepts; see [`label_value`]).
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.pairs().into_iter().map(|(k, v)| (k, label_value(&v))).collect()
    }

    /// The object's annotations (the exact values).
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.pairs().into_iter().collect()
    }

    /// The ownership envelope; `observed` is a lease id seen carrying the annotations.
    pub fn ownership(&self, observed: Option<&str>) -> Result<Ownership, OwnershipError> {
        Ownership::new(OwnershipFields {
            provider_lease_id: self.creation_name.clone(),
            observed_provider_lease_id: observed.map(str::to_owned),
            company_id: self.company_id.clone(),
            environment_id: self.environment_id.clone(),
            run_id: Some(self.run_id.clone()),
            attempt_id: self.lease.attempt.clone(),
            account_fingerprint: self.account_fingerprint.clone(),
            labels: self.pairs(),
        })
    }

    /// True when the object `meta` is this attempt's.
    pub fn owns(&self, meta: &ObjectMeta) -> bool {
        meta.name.as_deref() == Some(self.creation_name.as_str())
            && self.pairs().iter().all(|(k, v)| annotation(meta, k) == Some(v.as_str()))
    }
}

/// The annotation `key` of `meta`.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str)
}

/// True when `meta` carries every pair of `ownership` and is named by it.
pub fn ownership_matches(ownership: &Ownership, meta: &ObjectMeta) -> bool {
    meta.name.as_deref() == Some(ownership.provider_lease_id())
        && annotation(meta, CreationOperation::ATTEMPT_LABEL) == Some(ownership.attempt_id())
        && ownership.labels().iter().all(|(k, v)| annotation(meta, k) == Some(v.as_str()))
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
    fn lease_ids_names_labels_and_envelope() {
        let mut p =
            AcquireLeaseParams::new(EnvironmentBaseParams::new("kubernetes", "c1", "e1"), "r1");
        p.creation_operation = Some(CreationOperation::new(1, "2b0c-op"));
        let a = Attempt::for_acquire(&p, Backend::Pod, "0".repeat(64)).unwrap();
        assert_eq!(a.creation_name, "paperclip-create-2b0c-op");
        assert_eq!(a.lease.id(), "pod-2b0c-op");
        assert_eq!(LeaseRef::parse("pod-2b0c-op"), Some(a.lease.clone()));
        assert_eq!(LeaseRef::parse("job-x").map(|l| l.backend), Some(Backend::Job));
        assert_eq!(LeaseRef::parse("paperclip-create-x"), None);
        assert_eq!(LeaseRef::parse("pod-UPPER"), None);
        let meta = ObjectMeta {
            name: Some(a.creation_name.clone()),
            annotations: Some(a.annotations()),
            ..ObjectMeta::default()
        };
        assert!(a.owns(&meta));
        let o = a.ownership(Some("pod-2b0c-op")).unwrap();
        assert!(ownership_matches(&o, &meta));
        let mut foreign = meta.clone();
        foreign.annotations.as_mut().unwrap().insert(LABEL_COMPANY.into(), "c2".into());
        assert!(!ownership_matches(&o, &foreign) && !a.owns(&foreign));
        p.creation_operation = Some(CreationOperation::new(1, "Has_Upper"));
        assert!(Attempt::for_acquire(&p, Backend::Pod, "0".repeat(64)).is_none());
    }

    #[test]
    fn long_or_odd_identifiers_are_labelled_by_hash() {
        assert_eq!(label_value("company-1"), "company-1");
        let long = "c".repeat(64);
        let v = label_value(&long);
        assert!(v.starts_with('h') && v.len() == 41 && v != long);
        assert!(label_value("-x").starts_with('h'));
        assert_ne!(generate_uuid(), generate_uuid());
    }
}
