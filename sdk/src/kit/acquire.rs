//! Two rules of `environmentAcquireLease` every backend needs: the host's requested expiry,
//! and the acquisition budget kept inside the call's own deadline.

use std::time::Duration;

use paperclip_sandbox_protocol::wire_time::{format_rfc3339_ms, now_ms, parse_rfc3339_ms};
use tokio::time::Instant;

use crate::ProviderError;

/// The time a budget keeps back from the call's deadline to answer in.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// The least budget [`acquire_budget`] gives, however late the call.
pub const MIN_BUDGET: Duration = Duration::from_millis(100);

/// The expiry the host asked for (`requestedExpiresAt`), validated.
///
/// [`RequestedExpiry::parse`] reads it from the params; [`RequestedExpiry::from_ms`] makes one
/// for a known instant. Fields may be added, so it is not built with a struct literal outside
/// the SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestedExpiry {
    /// The expiry in milliseconds since the Unix epoch.
    pub at_ms: i64,
}

impl RequestedExpiry {
    /// The expiry at `at_ms` milliseconds since the Unix epoch, taken as it is (not checked
    /// against now: [`parse`](Self::parse) is what validates the host's value).
    ///
    /// ```
    /// use paperclip_sandbox_sdk::kit::acquire::RequestedExpiry;
    ///
    /// let x = RequestedExpiry::from_ms(1_767_225_600_000);
    /// assert_eq!(x.at_ms, 1_767_225_600_000);
    /// assert_eq!(x.to_rfc3339(), "2026-01-01T00:00:00.000Z");
    /// ```
    pub fn from_ms(at_ms: i64) -> Self {
        RequestedExpiry { at_ms }
    }

    /// The expiry of `requested_expires_at`: `None` when absent; an invalid-params error
    /// ("requestedExpiresAt must be an RFC 3339 timestamp", "requestedExpiresAt is in the
    /// past") when it is not an RFC 3339 timestamp or not after now. The value is never quoted.
    pub fn parse(requested_expires_at: Option<&str>) -> Result<Option<Self>, ProviderError> {
        let Some(s) = requested_expires_at else { return Ok(None) };
        match parse_rfc3339_ms(s) {
            None => Err(ProviderError::invalid_params(
                "requestedExpiresAt must be an RFC 3339 timestamp",
            )),
            Some(ms) if ms <= now_ms() => {
                Err(ProviderError::invalid_params("requestedExpiresAt is in the past"))
            }
            Some(ms) => Ok(Some(RequestedExpiry::from_ms(ms))),
        }
    }

    /// The expiry as a wire timestamp (RFC 3339, milliseconds): the lease's `expiresAt`.
    pub fn to_rfc3339(self) -> String {
        format_rfc3339_ms(self.at_ms)
    }

    /// Whole seconds from now to the expiry, rounded up, at least 1: what a backend's own
    /// lifetime limit (a `sleep`, an `activeDeadlineSeconds`) is set to.
    pub fn seconds_left(self) -> u64 {
        let ms = (self.at_ms - now_ms()).max(1000) as u64;
        ms.div_ceil(1000)
    }
}

/// The budget of one acquisition that started at `started`: the `configured` budget, but
/// never past the call's deadline less [`ANSWER_MARGIN`] (so the answer, even the cleanup
/// envelope, reaches the host before it gives up on the call), and at least [`MIN_BUDGET`].
pub fn acquire_budget(
    configured: Duration,
    call_deadline: Option<Instant>,
    started: Instant,
) -> Duration {
    match call_deadline {
        None => configured,
        Some(d) => {
            let left = d.saturating_duration_since(started).saturating_sub(ANSWER_MARGIN);
            configured.min(left.max(MIN_BUDGET))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_expiry_is_validated_without_quoting_it() {
        assert_eq!(RequestedExpiry::parse(None).unwrap(), None);
        let e = RequestedExpiry::parse(Some("secret-tomorrow")).unwrap_err();
        assert_eq!(e.code(), -32602);
        assert!(!e.message().contains("secret"), "{}", e.message());
        let e = RequestedExpiry::parse(Some("2001-01-01T00:00:00.000Z")).unwrap_err();
        assert!(e.message().contains("in the past"), "{}", e.message());
        let at = format_rfc3339_ms(now_ms() + 90_500);
        let x = RequestedExpiry::parse(Some(&at)).unwrap().unwrap();
        assert_eq!(x.to_rfc3339(), at);
        assert!((90..=91).contains(&x.seconds_left()), "{}", x.seconds_left());
        let soon = RequestedExpiry::from_ms(now_ms() + 10);
        assert_eq!(soon.seconds_left(), 1);
    }

    #[test]
    fn the_budget_stays_inside_the_call_deadline() {
        let now = Instant::now();
        let two_min = Duration::from_secs(120);
        assert_eq!(acquire_budget(two_min, None, now), two_min);
        let d = now + Duration::from_secs(30);
        assert_eq!(acquire_budget(two_min, Some(d), now), Duration::from_millis(29_500));
        assert_eq!(acquire_budget(Duration::from_secs(5), Some(d), now), Duration::from_secs(5));
        assert_eq!(acquire_budget(two_min, Some(now), now), MIN_BUDGET);
    }
}
