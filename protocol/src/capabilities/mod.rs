//! Sandbox capabilities: the capability table (one `const` that resolution, validation, the
//! macros, the harness and the book read) and capability resolution
//!.

pub mod resolve;

use std::fmt;
use std::str::FromStr;

use crate::methods::name;
use crate::profile::HostProfile;

/// A sandbox capability key of `sandboxCapabilities`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Capability {
    /// `reusableLeases`: the host retains a lease and resumes it across runs.
    ReusableLeases,
    /// `nativeSyncIn`: native inbound file transfer.
    NativeSyncIn,
    /// `nativeSyncOut`: native outbound file transfer.
    NativeSyncOut,
    /// `persistentProcessSessions`: a persistent process session across commands.
    PersistentProcessSessions,
    /// `independentControlCommands`: one-shot control commands beside a long-lived command.
    IndependentControlCommands,
    /// `incrementalSessionOutput`: incremental stdout/stderr from a live session (opt-in).
    IncrementalSessionOutput,
    /// `concurrentSyncOperations`: paperclip-2026-09 only; removed in paperclip-2026-11.
    ConcurrentSyncOperations,
    /// `duplexCommandStream`: extension key (opt-in).
    DuplexCommandStream,
    /// `runnerWebSocketIngress`: extension key (opt-in).
    RunnerWebSocketIngress,
}

/// One row of the capability table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilitySpec {
    /// The capability.
    pub capability: Capability,
    /// The `sandboxCapabilities` key.
    pub key: &'static str,
    /// Required worker methods: every group needs at least one advertised method.
    pub required: &'static [&'static [&'static str]],
    /// True when an omitted key resolves `false` (opt-in). `reusableLeases` is not opt-in in
    /// the table, but the lease-policy narrowing makes it effectively opt-in.
    pub opt_in: bool,
    /// True for keys the published host resolves but the seed contract does not cover
    ///.
    pub extension: bool,
    /// The profiles that accept the key.
    pub profiles: &'static [HostProfile],
    /// One-line meaning, for reports and the book.
    pub meaning: &'static str,
}

const BOTH: &[HostProfile] = &[HostProfile::Paperclip2026_09, HostProfile::Paperclip2026_11];
const ONLY_09: &[HostProfile] = &[HostProfile::Paperclip2026_09];

/// The capability table, in the order of SANDBOX_PROVIDER_CAPABILITIES.md, "The capabilities and their worker-method prerequisites".
pub const CAPABILITIES: &[CapabilitySpec] = &[
    CapabilitySpec {
        capability: Capability::ReusableLeases,
        key: "reusableLeases",
        required: &[
            &[name::ENVIRONMENT_RESUME_LEASE],
            &[name::ENVIRONMENT_RELEASE_LEASE],
            &[name::ENVIRONMENT_DESTROY_LEASE],
        ],
        opt_in: false,
        extension: false,
        profiles: BOTH,
        meaning: "The host retains a provider lease and resumes it across runs.",
    },
    CapabilitySpec {
        capability: Capability::NativeSyncIn,
        key: "nativeSyncIn",
        required: &[&[name::ENVIRONMENT_SYNC_IN]],
        opt_in: false,
        extension: false,
        profiles: BOTH,
        meaning: "The host transfers files into the sandbox through the native inbound hook.",
    },
    CapabilitySpec {
        capability: Capability::NativeSyncOut,
        key: "nativeSyncOut",
        required: &[&[name::ENVIRONMENT_SYNC_OUT]],
        opt_in: false,
        extension: false,
        profiles: BOTH,
        meaning: "The host transfers files out of the sandbox through the native outbound hook.",
    },
    CapabilitySpec {
        capability: Capability::PersistentProcessSessions,
        key: "persistentProcessSessions",
        required: &[&[name::ENVIRONMENT_EXECUTE]],
        opt_in: false,
        extension: false,
        profiles: BOTH,
        meaning: "The provider keeps a persistent process session open across commands.",
    },
    CapabilitySpec {
        capability: Capability::IndependentControlCommands,
        key: "independentControlCommands",
        required: &[&[name::ENVIRONMENT_EXECUTE]],
        opt_in: false,
        extension: false,
        profiles: BOTH,
        meaning: "The provider runs a one-shot control command beside a long-lived command.",
    },
    CapabilitySpec {
        capability: Capability::IncrementalSessionOutput,
        key: "incrementalSessionOutput",
        required: &[&[name::ENVIRONMENT_EXECUTE]],
        opt_in: true,
        extension: false,
        profiles: BOTH,
        meaning: "The provider streams incremental stdout and stderr from a live session.",
    },
    CapabilitySpec {
        capability: Capability::ConcurrentSyncOperations,
        key: "concurrentSyncOperations",
        required: &[&[name::ENVIRONMENT_SYNC_IN], &[name::ENVIRONMENT_SYNC_OUT]],
        opt_in: true,
        extension: false,
        profiles: ONLY_09,
        meaning: "Native sync operations may run concurrently (removed from the 2026-11 contract).",
    },
    CapabilitySpec {
        capability: Capability::DuplexCommandStream,
        key: "duplexCommandStream",
        required: &[&[name::DUPLEX_CHANNEL_OPEN]],
        opt_in: true,
        extension: true,
        profiles: BOTH,
        meaning: "The provider offers a duplex command channel (extension).",
    },
    CapabilitySpec {
        capability: Capability::RunnerWebSocketIngress,
        key: "runnerWebSocketIngress",
        required: &[&[name::ENVIRONMENT_RUNNER_INGRESS_ENDPOINT]],
        opt_in: true,
        extension: true,
        profiles: BOTH,
        meaning:
            "The provider exposes an authenticated WebSocket ingress for the runner (extension).",
    },
];

/// Keys that were part of earlier drafts and are removed from the 2026-11 contract: rejected
/// with a dedicated "removed" error in paperclip-2026-11.
pub const REMOVED_KEYS: &[&str] = &["concurrentSyncAndExec", "concurrentSyncOperations"];

impl Capability {
    /// The table row of this capability.
    pub fn spec(self) -> &'static CapabilitySpec {
        CAPABILITIES.iter().find(|s| s.capability == self).expect("every capability has a row")
    }

    /// The `sandboxCapabilities` key.
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// The capability of a key, whatever the profile.
    pub fn from_key(key: &str) -> Option<Capability> {
        CAPABILITIES.iter().find(|s| s.key == key).map(|s| s.capability)
    }

    /// True when `profile` accepts this key.
    pub fn in_profile(self, profile: HostProfile) -> bool {
        self.spec().profiles.contains(&profile)
    }

    /// The capabilities of a profile, in table order.
    pub fn for_profile(profile: HostProfile) -> impl Iterator<Item = Capability> {
        CAPABILITIES.iter().filter(move |s| s.profiles.contains(&profile)).map(|s| s.capability)
    }

    /// True when `supported_methods` verifies this capability: every requirement group has at
    /// least one advertised method.
    pub fn verified_by<S: AsRef<str>>(self, supported_methods: &[S]) -> bool {
        self.spec()
            .required
            .iter()
            .all(|group| group.iter().any(|m| supported_methods.iter().any(|s| s.as_ref() == *m)))
    }
}

/// True when `key` is removed from the contract in `profile`.
pub fn is_removed_key(key: &str, profile: HostProfile) -> bool {
    profile.is_november() && REMOVED_KEYS.contains(&key)
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The error of parsing an unknown capability key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox capability `{0}`")]
pub struct UnknownCapability(pub String);

impl FromStr for Capability {
    type Err = UnknownCapability;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::from_key(s).ok_or_else(|| UnknownCapability(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_key_sets_match_d1() {
        let p09: Vec<_> =
            Capability::for_profile(HostProfile::Paperclip2026_09).map(Capability::key).collect();
        assert_eq!(p09.len(), 9);
        let p11: Vec<_> =
            Capability::for_profile(HostProfile::Paperclip2026_11).map(Capability::key).collect();
        assert_eq!(p11.len(), 8);
        assert!(!p11.contains(&"concurrentSyncOperations"));
        assert!(is_removed_key("concurrentSyncAndExec", HostProfile::Paperclip2026_11));
        assert!(!is_removed_key("concurrentSyncOperations", HostProfile::Paperclip2026_09));
        assert_eq!(Capability::from_key("concurrentSyncAndExec"), None);
    }

    #[test]
    fn verification_needs_every_group() {
        let all3 = ["environmentResumeLease", "environmentReleaseLease", "environmentDestroyLease"];
        assert!(Capability::ReusableLeases.verified_by(&all3));
        assert!(!Capability::ReusableLeases.verified_by(&all3[..2]));
        assert!(!Capability::NativeSyncIn.verified_by::<&str>(&[]));
        assert!(Capability::ConcurrentSyncOperations
            .verified_by(&["environmentSyncIn", "environmentSyncOut"]));
    }
}
