//! Creation attempts: the creation name, the ownership labels, and the ownership envelope
//!.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use paperclip_sandbox_sdk::prelude::{AcquireLeaseParams, CreationOperation, LeasePolicy};
use paperclip_sandbox_sdk::protocol::envelope::{Ownership, OwnershipError, OwnershipFields};
use sha2::{Digest, Sha256};

use crate::api::Sandbox;

/// The value of the `paperclip-provider` label.
pub const PROVIDER_LABEL_VALUE: &str = "remote";
/// Label: the provider.
pub const LABEL_PROVIDER: &str = "paperclip-provider";
/// Label: the company.
pub const LABEL_COMPANY: &str = "paperclip-company-id";
/// Label: the environment.
pub const LABEL_ENVIRONMENT: &str = "paperclip-environment-id";
/// Label: the run.
pub const LABEL_RUN: &str = "paperclip-run-id";
/// Label: `"true"` for a reusable lease.
pub const LABEL_REUSE: &str = "paperclip-reuse-lease";

/// One fresh creation: who asked, under which name, with which labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The creation-operation id (`creationOperation.id`, or a generated UUID).
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
    /// The account fingerprint of the credentials used.
    pub account_fingerprint: String,
}

impl Attempt {
    /// The attempt of an acquisition: the host's creation operation (D5), or a fresh id.
    pub fn for_acquire<C>(params: &AcquireLeaseParams<C>, account_fingerprint: String) -> Self {
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
            account_fingerprint,
        }
    }

    /// The labels set on the sandbox at creation, in envelope order.
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

    /// The labels as the create request's map.
    pub fn label_map(&self) -> BTreeMap<String, String> {
        self.labels().into_iter().collect()
    }

    /// The ownership envelope of this attempt; `observed` is a sandbox id seen carrying its
    /// labels. Fails when a value the host sent is not an identifier (F.2).
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

    /// True when `sandbox` carries this attempt's name and ownership labels.
    pub fn owns(&self, sandbox: &Sandbox) -> bool {
        sandbox.name == self.creation_name
            && self.labels().iter().all(|(k, v)| sandbox.labels.get(k) == Some(v))
    }
}

/// True when `sandbox` carries the name and every label of `ownership` (used when the host
/// hands an ownership back on destroy).
pub fn ownership_matches(ownership: &Ownership, sandbox: &Sandbox) -> bool {
    sandbox.name == ownership.provider_lease_id()
        && sandbox.labels.get(CreationOperation::ATTEMPT_LABEL).map(String::as_str)
            == Some(ownership.attempt_id())
        && ownership.labels().iter().all(|(k, v)| sandbox.labels.get(k) == Some(v))
}

/// A random-looking version-4 UUID, for acquisitions without a creation operation. Derived
/// from the time, the process id and a counter through SHA-256 (unique, not secret).
pub fn generate_uuid() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut hash = Sha256::new();
    hash.update(nanos.to_le_bytes());
    hash.update(std::process::id().to_le_bytes());
    hash.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let mut b: [u8; 16] = hash.finalize()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_sdk::prelude::EnvironmentBaseParams;

    #[test]
    fn creation_name_and_labels_follow_d5() {
        let mut p = AcquireLeaseParams::new(EnvironmentBaseParams::new("remote", "c1", "e1"), "r1");
        p.creation_operation = Some(CreationOperation::new(1, "2b0c-op"));
        let a = Attempt::for_acquire(&p, "f".repeat(64));
        assert_eq!(a.creation_name, "paperclip-create-2b0c-op");
        let o = a.ownership(Some("sbx-1")).unwrap();
        assert_eq!(o.attempt_id(), "2b0c-op");
        assert_eq!(o.provider_lease_id(), "paperclip-create-2b0c-op");
        assert_eq!(o.observed_provider_lease_id(), Some("sbx-1"));
        assert_eq!(a.label_map()["paperclip-create-attempt"], "2b0c-op");
        assert_eq!(a.label_map()["paperclip-reuse-lease"], "false");
    }

    #[test]
    fn generated_ids_are_uuids_and_differ() {
        let (a, b) = (generate_uuid(), generate_uuid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        let p = AcquireLeaseParams::new(EnvironmentBaseParams::new("remote", "c1", "e1"), "r1");
        let attempt = Attempt::for_acquire(&p, "0".repeat(64));
        assert!(attempt.creation_name.starts_with("paperclip-create-"));
        assert!(attempt.ownership(None).is_ok());
    }
}
