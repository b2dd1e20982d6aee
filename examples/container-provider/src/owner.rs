//! Creation attempts: the creation name, the ownership labels and the ownership envelope.
//!
//! A fresh acquisition creates its container under the name `paperclip-create-<id>` (the
//! host's `creationOperation.id`, or a generated UUID) with labels naming the provider, the
//! attempt, the company, the environment and the run. Those labels are what every later
//! lookup trusts: a container under the name without them is never touched.

use std::collections::HashMap;

use paperclip_sandbox_sdk::prelude::{AcquireLeaseParams, CreationOperation, LeasePolicy};
use paperclip_sandbox_sdk::protocol::envelope::{Ownership, OwnershipError, OwnershipFields};
use sha2::{Digest, Sha256};

use crate::engine::{
    LABEL_COMPANY, LABEL_ENVIRONMENT, LABEL_PROVIDER, LABEL_REUSE, LABEL_RUN, PROVIDER_LABEL_VALUE,
};

/// One fresh creation: who asked, under which name, with which labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The creation-operation id.
    pub id: String,
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
    /// The engine's fingerprint ([`engine_fingerprint`]).
    pub account_fingerprint: String,
}

/// The fingerprint of an engine address (SHA-256 hex): which engine a cleanup record names.
pub fn engine_fingerprint(docker_host: &str) -> String {
    let digest = Sha256::digest(docker_host.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A version-4 UUID from the kernel's random source.
pub fn generate_uuid() -> String {
    let hex = paperclip_sandbox_sdk::kit::random_hex(16);
    let mut b: Vec<char> = hex.chars().collect();
    b[12] = '4';
    b[16] = ['8', '9', 'a', 'b'][(b[16].to_digit(16).unwrap_or(0) & 3) as usize];
    let s: String = b.into_iter().collect();
    format!("{}-{}-{}-{}-{}", &s[..8], &s[8..12], &s[12..16], &s[16..20], &s[20..])
}

/// True when `name` is a container name every Docker-API engine accepts.
pub fn valid_container_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && name.len() <= 200
}

impl Attempt {
    /// The attempt of an acquisition on the engine with fingerprint `fingerprint`.
    pub fn for_acquire<C>(params: &AcquireLeaseParams<C>, fingerprint: String) -> Self {
        let id = match &params.creation_operation {
            Some(op) => op.id.clone(),
            None => generate_uuid(),
        };
        Attempt {
            creation_name: CreationOperation::new(1, id.clone()).creation_name(),
            id,
            company_id: params.base.company_id.clone(),
            environment_id: params.base.environment_id.clone(),
            run_id: params.run_id.clone(),
            reusable: params.lease_policy == Some(LeasePolicy::ReuseByEnvironment),
            account_fingerprint: fingerprint,
        }
    }

    /// The labels set at creation, in envelope order.
    pub fn labels(&self) -> Vec<(String, String)> {
        [
            (CreationOperation::ATTEMPT_LABEL, self.id.as_str()),
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

    /// The ownership envelope; `observed` is a container id seen carrying the labels.
    pub fn ownership(&self, observed: Option<&str>) -> Result<Ownership, OwnershipError> {
        Ownership::new(OwnershipFields {
            provider_lease_id: self.creation_name.clone(),
            observed_provider_lease_id: observed.map(str::to_owned),
            company_id: self.company_id.clone(),
            environment_id: self.environment_id.clone(),
            run_id: Some(self.run_id.clone()),
            attempt_id: self.id.clone(),
            account_fingerprint: self.account_fingerprint.clone(),
            labels: self.labels(),
        })
    }

    /// True when a container named `name` with `labels` is this attempt's.
    pub fn owns(&self, name: &str, labels: &HashMap<String, String>) -> bool {
        name == self.creation_name && self.labels().iter().all(|(k, v)| labels.get(k) == Some(v))
    }
}

/// True when a container named `name` with `labels` carries every label of `ownership`.
pub fn ownership_matches(
    ownership: &Ownership,
    name: &str,
    labels: &HashMap<String, String>,
) -> bool {
    name == ownership.provider_lease_id()
        && labels.get(CreationOperation::ATTEMPT_LABEL).map(String::as_str)
            == Some(ownership.attempt_id())
        && ownership.labels().iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::prelude::EnvironmentBaseParams;

    #[test]
    fn names_labels_and_envelope() {
        let mut p =
            AcquireLeaseParams::new(EnvironmentBaseParams::new("container", "c1", "e1"), "r1");
        p.creation_operation = Some(CreationOperation::new(1, "2b0c-op"));
        let a = Attempt::for_acquire(&p, engine_fingerprint("unix:///x"));
        assert_eq!(a.creation_name, "paperclip-create-2b0c-op");
        let labels: HashMap<_, _> = a.labels().into_iter().collect();
        assert!(a.owns("paperclip-create-2b0c-op", &labels));
        assert!(!a.owns("other", &labels));
        let o = a.ownership(Some("abc")).unwrap();
        assert!(ownership_matches(&o, "paperclip-create-2b0c-op", &labels));
        let mut foreign = labels.clone();
        foreign.insert(LABEL_COMPANY.into(), "c2".into());
        assert!(!ownership_matches(&o, "paperclip-create-2b0c-op", &foreign));
    }

    #[test]
    fn uuids_and_names() {
        let (a, b) = (generate_uuid(), generate_uuid());
        assert_ne!(a, b);
        assert_eq!((a.len(), &a[14..15]), (36, "4"));
        assert!(valid_container_name(&format!("paperclip-create-{a}")));
        assert!(!valid_container_name("paperclip-create-a/b"));
        assert!(!valid_container_name("-x"));
    }
}
