//! Host profiles: which Paperclip host a manifest and a worker target.

use std::fmt;
use std::str::FromStr;

/// The Paperclip host a provider targets. Manifest validation, the accepted capability keys and
/// the November-only methods and fields depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum HostProfile {
    /// `paperclip-2026-09`: the published host, npm `@paperclipai/server` 2026.916.1, exactly.
    Paperclip2026_09,
    /// `paperclip-2026-11`: the November 2026 capability contract (the default).
    #[default]
    Paperclip2026_11,
}

impl HostProfile {
    /// Every profile, oldest first.
    pub const ALL: [HostProfile; 2] =
        [HostProfile::Paperclip2026_09, HostProfile::Paperclip2026_11];

    /// The profile's name as used on the command line and in the vectors.
    pub const fn as_str(self) -> &'static str {
        match self {
            HostProfile::Paperclip2026_09 => "paperclip-2026-09",
            HostProfile::Paperclip2026_11 => "paperclip-2026-11",
        }
    }

    /// True when the November 2026 contract applies (driver fields `defaultAcquireTimeoutMs` and
    /// `creationOperationVersion`, `environmentStopLease`, sync `minimumTimeoutMs`, removed
    /// concurrency keys).
    pub const fn is_november(self) -> bool {
        matches!(self, HostProfile::Paperclip2026_11)
    }
}

impl fmt::Display for HostProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown host profile `{0}` (expected paperclip-2026-11 or paperclip-2026-09)")]
pub struct UnknownProfile(pub String);

impl FromStr for HostProfile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in HostProfile::ALL {
            assert_eq!(p.as_str().parse::<HostProfile>().unwrap(), p);
        }
        assert_eq!(HostProfile::default(), HostProfile::Paperclip2026_11);
        let err = "paperclip-2026-10".parse::<HostProfile>().unwrap_err();
        assert!(err.to_string().contains("paperclip-2026-10"));
    }
}
