use std::future::Future;
use std::time::Duration;

use paperclip_sandbox_protocol::methods::Method;
use paperclip_sandbox_protocol::timeouts::{
    execute_rpc_timeout_ms, rpc_call_timeout_ms, sandbox_rpc_timeout_ms, DEFAULT_RPC_TIMEOUT_MS,
    INITIALIZE_TIMEOUT_MS, PROBE_TIMEOUT_MS, SHUTDOWN_TIMEOUT_MS,
};
use serde_json::{Map, Value};
use tokio::time::Instant;

/// The deadline of a call: [`Deadline`], which a hook hands to every backend request it makes
/// ([`Context::call_deadline`](crate::Context::call_deadline)).
///
/// The host arms a timer for each call it makes (its timeout for the method: 30 s by default,
/// `timeoutMs` + 30 s for an `environmentExecute`, 120 s for a probe; upstream
/// `plugin-worker-manager` and `plugin-environment-driver`). When it fires, the host reports
/// its own timeout and drops the answer that comes later. A backend that accepts a connection
/// and never answers must therefore not hold a hook past that timer: bounded by the call's
/// deadline, the hook answers first, with an error that names the backend as unreachable.
///
/// The call's deadline is the host's timer for the method, counted from when the worker read
/// the request, less a margin for the answer to reach the host (a fifth of the timer, at most
/// 5 s).
///
/// A point in time by which a call must be answered.
///
/// Bound a backend request by it with [`run`](Self::run), or hand [`remaining`](Self::remaining)
/// to a client's own timeout (`reqwest::RequestBuilder::timeout`, for example).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// The deadline at `at`.
    pub fn at(at: Instant) -> Self {
        Deadline { at }
    }

    /// The deadline `after` from now (far in the future when that overflows).
    pub fn after(after: Duration) -> Self {
        let now = Instant::now();
        let at = now.checked_add(after).unwrap_or_else(|| now + Duration::from_secs(86_400 * 365));
        Deadline { at }
    }

    /// When it is.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The time left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// True once passed.
    pub fn is_expired(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The earlier of this deadline and `now + limit` (a backend request's own timeout that
    /// must not outlast the call).
    pub fn min_after(&self, limit: Duration) -> Deadline {
        (*self).min(Deadline::after(limit))
    }

    /// Runs `future` until this deadline: its output, or [`DeadlineExceeded`] when the deadline
    /// passed first (the future is dropped).
    pub async fn run<F: Future>(&self, future: F) -> Result<F::Output, DeadlineExceeded> {
        tokio::time::timeout_at(self.at, future).await.map_err(|_| DeadlineExceeded)
    }
}

/// The call's deadline passed before a backend request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadlineExceeded;

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no answer before the call's deadline")
    }
}

impl std::error::Error for DeadlineExceeded {}

/// The margin kept between a call's deadline and the host's timer: a fifth of the timer, at
/// most 5 s.
pub(crate) fn margin(host_timeout: Duration) -> Duration {
    (host_timeout / 5).min(Duration::from_secs(5))
}

/// The host's timeout for `method` in milliseconds, from the call's `timeoutMs` and `config`
/// params; `None` for the calls whose budget depends on the host profile and the driver's
/// declared `defaultAcquireTimeoutMs` (acquire, resume), which the provider's creation attempt
/// owns.
pub(crate) fn host_timeout_ms(
    method: Method,
    timeout_ms: Option<f64>,
    config: &Map<String, Value>,
) -> Option<u64> {
    let explicit = |ms: Option<u64>| {
        ms.map_or(DEFAULT_RPC_TIMEOUT_MS, |ms| rpc_call_timeout_ms(Some(ms as f64)))
    };
    Some(match method {
        Method::Initialize => INITIALIZE_TIMEOUT_MS,
        Method::Shutdown => SHUTDOWN_TIMEOUT_MS,
        Method::EnvironmentProbe => PROBE_TIMEOUT_MS,
        Method::EnvironmentAcquireLease | Method::EnvironmentResumeLease => return None,
        Method::EnvironmentExecute | Method::EnvironmentCaptureTemplate => {
            explicit(execute_rpc_timeout_ms(timeout_ms, config))
        }
        Method::EnvironmentReleaseLease
        | Method::EnvironmentDestroyLease
        | Method::EnvironmentStopLease
        | Method::EnvironmentRealizeWorkspace
        | Method::EnvironmentSyncIn
        | Method::EnvironmentSyncOut
        | Method::EnvironmentRunnerIngressEndpoint => explicit(sandbox_rpc_timeout_ms(config)),
        Method::EnvironmentStartInteractiveSetup
        | Method::EnvironmentGetInteractiveSetup
        | Method::EnvironmentCancelInteractiveSetup
        | Method::EnvironmentDeleteTemplate => explicit(execute_rpc_timeout_ms(None, config)),
        _ => DEFAULT_RPC_TIMEOUT_MS,
    })
}

/// The deadline of a call read at `read_at`: its host timeout less the [`margin`].
pub(crate) fn call_deadline(
    method: Method,
    timeout_ms: Option<f64>,
    config: Option<&Map<String, Value>>,
    read_at: Instant,
) -> Option<Deadline> {
    let empty = Map::new();
    let ms = host_timeout_ms(method, timeout_ms, config.unwrap_or(&empty))?;
    let host = Duration::from_millis(ms);
    let at = read_at.checked_add(host - margin(host))?;
    Some(Deadline { at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn host_timeouts_follow_the_hosts_rules() {
        let none = Map::new();
        let ms = |m, t, c: &Map<String, Value>| host_timeout_ms(m, t, c);
        assert_eq!(ms(Method::EnvironmentExecute, Some(3000.0), &none), Some(33_000));
        assert_eq!(ms(Method::EnvironmentExecute, None, &none), Some(30_000));
        let c = config(json!({"timeoutMs": 10_000, "bridgeRequestTimeoutMs": 50_000}));
        assert_eq!(ms(Method::EnvironmentExecute, None, &c), Some(40_000));
        assert_eq!(ms(Method::EnvironmentSyncIn, None, &c), Some(80_000));
        assert_eq!(ms(Method::EnvironmentProbe, None, &c), Some(120_000));
        assert_eq!(ms(Method::EnvironmentAcquireLease, None, &c), None);
        assert_eq!(ms(Method::Shutdown, None, &none), Some(10_000));
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_comes_a_margin_before_the_hosts_timer() {
        let now = Instant::now();
        let d = call_deadline(Method::EnvironmentExecute, Some(3000.0), None, now).unwrap();
        assert_eq!(d.instant() - now, Duration::from_secs(28));
        let d = call_deadline(Method::Shutdown, None, None, now).unwrap();
        assert_eq!(d.instant() - now, Duration::from_secs(8));
        let stalled = d.run(std::future::pending::<()>()).await;
        assert_eq!(stalled, Err(DeadlineExceeded));
        assert!(d.is_expired() && d.remaining().is_zero());
        assert_eq!(Deadline::after(Duration::from_secs(1)).run(async { 7 }).await, Ok(7));
    }
}
