//! Timeout arithmetic and transient classification.
//!
//! Config numbers come from JSON: a value counts only when it is a JSON number, positive and
//! finite (JSON cannot carry non-finite numbers; a `null` or string is ignored exactly as the
//! host ignores a non-number). Fractions are truncated. Results are saturating `u64`
//! milliseconds; [`rpc_call_timeout_ms`] applies the host's clamp before a timer is armed.

use serde_json::{Map, Value};

use crate::envelope::diagnostic::AcquisitionDiagnostic;
use crate::profile::HostProfile;

/// The host's RPC timeout when a call has no explicit timeout.
pub const DEFAULT_RPC_TIMEOUT_MS: u64 = 30_000;
/// The overhead added to a configured timeout (`RPC_OVERHEAD_BUFFER_MS`).
pub const RPC_OVERHEAD_BUFFER_MS: u64 = 30_000;
/// `initialize`.
pub const INITIALIZE_TIMEOUT_MS: u64 = 15_000;
/// `shutdown`.
pub const SHUTDOWN_TIMEOUT_MS: u64 = 10_000;
/// `environmentProbe` (explicit in both host paths).
pub const PROBE_TIMEOUT_MS: u64 = 120_000;
/// The Node timer cap: explicit timeouts are clamped to it.
pub const MAX_TIMER_MS: u64 = 2_147_483_647;
/// The cap of the default (non-explicit) RPC path: 15 minutes.
pub const MAX_DEFAULT_RPC_TIMEOUT_MS: u64 = 900_000;
/// The cap on `defaultAcquireTimeoutMs`, config `timeoutMs` and `runnerIdleTimeoutMs`, and on
/// the acquisition diagnostic's `budgetMs`: 24 hours.
pub const MAX_CONFIGURED_TIMEOUT_MS: u64 = 86_400_000;
/// The cap on the acquisition diagnostic's `elapsedMs`: 7 days.
pub const MAX_ELAPSED_MS: u64 = 604_800_000;
/// The cap on a native sync `minimumTimeoutMs`: 30 minutes.
pub const MAX_SYNC_MINIMUM_TIMEOUT_MS: u64 = 1_800_000;
/// The fixed resume budget of HOST-2026-09, and the per-attempt fallback.
pub const RESUME_DEFAULT_BUDGET_MS: u64 = 60_000;
/// The first resume retry delay, before jitter.
pub const RESUME_INITIAL_RETRY_DELAY_MS: u64 = 250;
/// The largest resume retry delay, before jitter.
pub const RESUME_MAX_RETRY_DELAY_MS: u64 = 5_000;

/// A positive finite JSON number under `key`, truncated (`None` otherwise). A value between 0
/// and 1 truncates to 0 but still counts, as in the host.
fn positive_config_ms(config: &Map<String, Value>, key: &str) -> Option<u64> {
    positive_ms(config.get(key)?.as_f64()?)
}

fn positive_ms(value: f64) -> Option<u64> {
    (value.is_finite() && value > 0.0).then(|| value.trunc() as u64)
}

/// E(requested, config), `resolvePluginExecuteRpcTimeoutMs`: the base is `trunc(requested)`
/// when it is finite and positive, else `trunc(config.timeoutMs)` when that is; the result is
/// base + 30,000, or `None` (the 30,000 default applies) without a base.
/// `bridgeRequestTimeoutMs` is ignored.
pub fn execute_rpc_timeout_ms(requested: Option<f64>, config: &Map<String, Value>) -> Option<u64> {
    let base =
        requested.and_then(positive_ms).or_else(|| positive_config_ms(config, "timeoutMs"))?;
    Some(base.saturating_add(RPC_OVERHEAD_BUFFER_MS))
}

/// S(config), `resolvePluginSandboxRpcTimeoutMs`: the positive finite candidates among
/// `config.timeoutMs` and `config.bridgeRequestTimeoutMs`, truncated; `None` without any,
/// else E(max(candidates), config).
pub fn sandbox_rpc_timeout_ms(config: &Map<String, Value>) -> Option<u64> {
    let max = ["timeoutMs", "bridgeRequestTimeoutMs"]
        .iter()
        .filter_map(|key| positive_config_ms(config, key))
        .max()?;
    // As in the host, a maximum that truncated to 0 falls back to config.timeoutMs inside E.
    execute_rpc_timeout_ms(Some(max as f64), config)
}

/// `resolveRpcCallTimeoutMs(explicit)` with the default of 30,000: an explicit finite positive
/// timeout is truncated and clamped to [1, 2,147,483,647]; otherwise 30,000.
pub fn rpc_call_timeout_ms(explicit: Option<f64>) -> u64 {
    rpc_call_timeout_ms_with_default(explicit, DEFAULT_RPC_TIMEOUT_MS)
}

/// `resolveRpcCallTimeoutMs(explicit, default)`: as [`rpc_call_timeout_ms`], with the default
/// path capped at 900,000.
pub fn rpc_call_timeout_ms_with_default(explicit: Option<f64>, default_ms: u64) -> u64 {
    match explicit {
        Some(ms) if ms.is_finite() && ms > 0.0 => (ms.trunc() as u64).clamp(1, MAX_TIMER_MS),
        _ => default_ms.min(MAX_DEFAULT_RPC_TIMEOUT_MS),
    }
}

/// The `environmentAcquireLease` explicit timeout (G.2); `None` means the 30,000 default.
///
/// - `paperclip-2026-09`: S(config).
/// - `paperclip-2026-11`: base = `config.timeoutMs` when positive finite, else the driver's
///   declared `defaultAcquireTimeoutMs` (never inferred from config defaults); a positive
///   `bridgeRequestTimeoutMs` extends it (max); plus 30,000. Without a base and a bridge value
///   the default applies. Without a declared default this equals S(config).
pub fn acquire_rpc_timeout_ms(
    config: &Map<String, Value>,
    default_acquire_timeout_ms: Option<u64>,
    profile: HostProfile,
) -> Option<u64> {
    let declared = default_acquire_timeout_ms.filter(|ms| *ms > 0);
    match (profile.is_november(), declared) {
        (true, Some(declared)) if positive_config_ms(config, "timeoutMs").is_none() => {
            let bridge = positive_config_ms(config, "bridgeRequestTimeoutMs").unwrap_or(0);
            Some(declared.max(bridge).saturating_add(RPC_OVERHEAD_BUFFER_MS))
        }
        _ => sandbox_rpc_timeout_ms(config),
    }
}

/// The deadline shared by the resume attempts and their transient retries (G.3).
///
/// - `paperclip-2026-09`: deadline = start + 60,000; each attempt waits
///   min(S(config) ?? 60,000, max(1, deadline − now)).
/// - `paperclip-2026-11`: "resume uses the same budget" as acquisition. When a budget is
///   configured (`config.timeoutMs`) or declared (`defaultAcquireTimeoutMs`), the deadline is
///   start + [`acquire_rpc_timeout_ms`] and each attempt waits min(that budget, remaining);
///   otherwise the 2026-09 rule applies (the 1-minute default). The seed leaves open whether
///   the shared deadline includes the 30 s RPC margin; this crate **includes** it, because the
///   seed lists the margin as part of the budget that resume reuses, and a deadline shorter
///   than the single-attempt RPC timeout would cut an acquisition-length resume short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeDeadline {
    start_ms: u64,
    deadline_ms: u64,
    attempt_cap_ms: u64,
}

impl ResumeDeadline {
    /// The deadline of a resume starting at `start_ms` (any monotonic millisecond clock).
    pub fn new(
        profile: HostProfile,
        start_ms: u64,
        config: &Map<String, Value>,
        default_acquire_timeout_ms: Option<u64>,
    ) -> Self {
        let budgeted = profile.is_november()
            && (positive_config_ms(config, "timeoutMs").is_some()
                || default_acquire_timeout_ms.is_some_and(|ms| ms > 0));
        let (budget, attempt_cap) = if budgeted {
            let budget = acquire_rpc_timeout_ms(config, default_acquire_timeout_ms, profile)
                .unwrap_or(RESUME_DEFAULT_BUDGET_MS);
            (budget, budget)
        } else {
            let cap = sandbox_rpc_timeout_ms(config).unwrap_or(RESUME_DEFAULT_BUDGET_MS);
            (RESUME_DEFAULT_BUDGET_MS, cap)
        };
        ResumeDeadline {
            start_ms,
            deadline_ms: start_ms.saturating_add(budget),
            attempt_cap_ms: attempt_cap,
        }
    }

    /// When the resume started.
    pub fn start_ms(&self) -> u64 {
        self.start_ms
    }

    /// The shared deadline.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }

    /// The whole budget (deadline − start).
    pub fn budget_ms(&self) -> u64 {
        self.deadline_ms - self.start_ms
    }

    /// The timeout of an attempt started at `now_ms`: min(cap, max(1, deadline − now)).
    pub fn attempt_timeout_ms(&self, now_ms: u64) -> u64 {
        self.attempt_cap_ms.min(self.deadline_ms.saturating_sub(now_ms).max(1))
    }

    /// Whether a transient failure at `now_ms` may be retried after `delay_ms` (the delay
    /// before jitter): now + delay × 1.25 < deadline.
    pub fn may_retry(&self, now_ms: u64, delay_ms: u64) -> bool {
        (now_ms as f64) + (delay_ms as f64) * 1.25 < self.deadline_ms as f64
    }
}

/// The resume retry delay before jitter after `retries` earlier retries: 250 ms doubling, at
/// most 5,000 ms.
pub fn resume_retry_delay_ms(retries: u32) -> u64 {
    RESUME_INITIAL_RETRY_DELAY_MS
        .saturating_mul(1u64 << retries.min(16))
        .min(RESUME_MAX_RETRY_DELAY_MS)
}

/// The jittered wait for a base delay: max(1, round(delay × (0.75 + jitter × 0.5))), where
/// `jitter` is a uniform sample in [0, 1) (clamped) supplied by the caller (±25 %).
pub fn jittered_delay_ms(delay_ms: u64, jitter: f64) -> u64 {
    let jitter = if jitter.is_nan() { 0.5 } else { jitter.clamp(0.0, 1.0) };
    ((delay_ms as f64) * (0.75 + jitter * 0.5)).round().max(1.0) as u64
}

/// The transient message words, matched between word boundaries in the lower-cased message.
pub const TRANSIENT_MESSAGE_PHRASES: &[&str] = &[
    "timeout",
    "timed out",
    "rate limit",
    "temporar",
    "network",
    "connection reset",
    "service unavailable",
];
/// The transient error codes (compared upper-cased).
pub const TRANSIENT_CODES: &[&str] =
    &["ETIMEDOUT", "ECONNRESET", "ECONNREFUSED", "EAI_AGAIN", "ENETUNREACH"];

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The message rule of the host's resume transient test:
/// `/\b(timeout|timed out|rate limit|temporar|network|connection reset|service unavailable)\b/`
/// on the lower-cased message, with JavaScript's ASCII word boundaries (word characters are
/// `[A-Za-z0-9_]`). "temporarily unavailable" and "timeouts exceeded" do not match.
pub fn is_transient_resume_message(message: &str) -> bool {
    let lower = message.to_lowercase();
    let bytes = lower.as_bytes();
    TRANSIENT_MESSAGE_PHRASES.iter().any(|phrase| {
        lower.match_indices(phrase).any(|(start, _)| {
            let end = start + phrase.len();
            let before = start == 0 || !is_word_byte(bytes[start - 1]);
            let after = end == bytes.len() || !is_word_byte(bytes[end]);
            before && after
        })
    })
}

/// The host's whole resume transient test (`transientSandboxResumeFailure`) on an error given
/// as JSON: `status` (else `statusCode`) a number that is 429 or ≥ 500; or a string `code`
/// that upper-cased is in [`TRANSIENT_CODES`]; or the message rule on `message` (a bare JSON
/// string is the message itself). A worker error crosses the wire as `{code: <number>,
/// message}`, so for plugin workers only the message rule can fire.
pub fn is_transient_resume_failure(error: &Value) -> bool {
    if let Value::String(message) = error {
        return is_transient_resume_message(message);
    }
    let status = error
        .get("status")
        .and_then(Value::as_f64)
        .or_else(|| error.get("statusCode").and_then(Value::as_f64));
    if status.is_some_and(|s| s == 429.0 || s >= 500.0) {
        return true;
    }
    if let Some(code) = error.get("code").and_then(Value::as_str) {
        if TRANSIENT_CODES.contains(&code.to_uppercase().as_str()) {
            return true;
        }
    }
    error.get("message").and_then(Value::as_str).is_some_and(is_transient_resume_message)
}

/// How the host classifies a failed acquisition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquisitionFailureClass {
    /// The first failure was the acquisition's own deadline: a transient provider failure,
    /// retried after 30 s and then 60 s.
    Transient {
        /// `environment_provider_unavailable`.
        error_code: &'static str,
        /// `timeout`.
        category: &'static str,
        /// `[30000, 60000]`.
        retry_delays_ms: [u64; 2],
    },
    /// Anything else: the run fails as `setup_failed`.
    SetupFailed {
        /// `lease_acquire_failed`.
        failure_cause: &'static str,
    },
}

/// A valid diagnostic with `elapsedMs >= budgetMs` is transient; no
/// diagnostic, or `elapsedMs < budgetMs`, is `setup_failed` / `lease_acquire_failed`. Message
/// text is never parsed. (An invalid diagnostic never becomes an [`AcquisitionDiagnostic`].)
pub fn classify_acquisition_failure(
    diagnostic: Option<&AcquisitionDiagnostic>,
) -> AcquisitionFailureClass {
    match diagnostic {
        Some(d) if d.reached_budget() => AcquisitionFailureClass::Transient {
            error_code: "environment_provider_unavailable",
            category: "timeout",
            retry_delays_ms: [30_000, 60_000],
        },
        _ => AcquisitionFailureClass::SetupFailed { failure_cause: "lease_acquire_failed" },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::diagnostic::AcquisitionPhase;
    use serde_json::json;

    fn cfg(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn host_truncation_quirks() {
        // 0.5 is positive, truncates to 0 and falls back to config.timeoutMs inside E.
        assert_eq!(sandbox_rpc_timeout_ms(&cfg(json!({"timeoutMs": 0.5}))), Some(30_000));
        assert_eq!(sandbox_rpc_timeout_ms(&cfg(json!({"bridgeRequestTimeoutMs": 0.5}))), None);
        assert_eq!(sandbox_rpc_timeout_ms(&cfg(json!({"timeoutMs": "300000"}))), None);
        assert_eq!(
            execute_rpc_timeout_ms(Some(f64::NAN), &cfg(json!({"timeoutMs": 10}))),
            Some(30_010)
        );
        assert_eq!(rpc_call_timeout_ms(Some(-5.0)), 30_000);
        assert_eq!(rpc_call_timeout_ms_with_default(None, 10_000_000), 900_000);
    }

    #[test]
    fn acquire_budget_by_profile() {
        let p11 = HostProfile::Paperclip2026_11;
        let p09 = HostProfile::Paperclip2026_09;
        let empty = Map::new();
        assert_eq!(acquire_rpc_timeout_ms(&empty, Some(300_000), p11), Some(330_000));
        assert_eq!(acquire_rpc_timeout_ms(&empty, Some(300_000), p09), None);
        assert_eq!(acquire_rpc_timeout_ms(&empty, None, p11), None);
        let both = cfg(json!({"timeoutMs": 1000, "bridgeRequestTimeoutMs": 2000}));
        assert_eq!(acquire_rpc_timeout_ms(&both, Some(300_000), p11), Some(32_000));
        let bridge = cfg(json!({"bridgeRequestTimeoutMs": 400000}));
        assert_eq!(acquire_rpc_timeout_ms(&bridge, Some(300_000), p11), Some(430_000));
    }

    #[test]
    fn resume_deadline() {
        let config = cfg(json!({"timeoutMs": 10000}));
        let d = ResumeDeadline::new(HostProfile::Paperclip2026_09, 1_000, &config, Some(300_000));
        assert_eq!((d.deadline_ms(), d.budget_ms()), (61_000, 60_000));
        assert_eq!(d.attempt_timeout_ms(1_000), 40_000);
        assert_eq!(d.attempt_timeout_ms(50_000), 11_000);
        assert_eq!(d.attempt_timeout_ms(70_000), 1);
        assert!(d.may_retry(60_000, 250) && !d.may_retry(60_700, 250));
        let d = ResumeDeadline::new(HostProfile::Paperclip2026_11, 0, &Map::new(), Some(300_000));
        assert_eq!((d.budget_ms(), d.attempt_timeout_ms(0)), (330_000, 330_000));
        let d = ResumeDeadline::new(HostProfile::Paperclip2026_11, 0, &Map::new(), None);
        assert_eq!((d.budget_ms(), d.attempt_timeout_ms(0)), (60_000, 60_000));
        let delays: Vec<u64> = (0..7).map(resume_retry_delay_ms).collect();
        assert_eq!(delays, [250, 500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!((jittered_delay_ms(1000, 0.0), jittered_delay_ms(1000, 1.0)), (750, 1250));
        assert_eq!(jittered_delay_ms(0, 0.5), 1);
    }

    #[test]
    fn transient_rules() {
        assert!(is_transient_resume_message(
            "RPC call \"environmentResumeLease\" timed out after 60000ms"
        ));
        assert!(is_transient_resume_message("network_error? no: network"));
        assert!(!is_transient_resume_message("network_error"));
        assert!(!is_transient_resume_message("subnetwork"));
        assert!(is_transient_resume_message("é-timeout"));
        assert!(is_transient_resume_failure(&json!({"status": 429})));
        assert!(is_transient_resume_failure(&json!({"statusCode": 503})));
        assert!(!is_transient_resume_failure(&json!({"status": "503", "statusCode": 400})));
        assert!(is_transient_resume_failure(&json!({"code": "econnreset"})));
        assert!(!is_transient_resume_failure(&json!({"code": -32002, "message": "boom"})));
        assert!(is_transient_resume_failure(&json!("Service Unavailable")));
    }

    #[test]
    fn d8_classification() {
        let at = AcquisitionDiagnostic::new(AcquisitionPhase::Create, 5, 5).unwrap();
        let before = AcquisitionDiagnostic::new(AcquisitionPhase::Create, 4, 5).unwrap();
        assert!(matches!(
            classify_acquisition_failure(Some(&at)),
            AcquisitionFailureClass::Transient { retry_delays_ms: [30_000, 60_000], .. }
        ));
        let setup = AcquisitionFailureClass::SetupFailed { failure_cause: "lease_acquire_failed" };
        assert_eq!(classify_acquisition_failure(Some(&before)), setup);
        assert_eq!(classify_acquisition_failure(None), setup);
    }
}
