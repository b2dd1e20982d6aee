//! What a hook may return: `Result<T, E>` for any error type `E` that says how it goes on the
//! wire ([`IntoProviderError`]), written once per error type, as axum's `IntoResponse` is.
//!
//! `#[provider]` completes each hook's signature: a hook returning `Result<T, MyError>` is
//! answered as if it returned `HookResult<T>`, its error converted by
//! [`IntoProviderError::into_provider_error`] with the method being served. That is where
//! the method matters: a sync hook's failure carries the sync-error envelope, a stop's the
//! stop-error envelope, and nothing else does.

use paperclip_sandbox_protocol::envelope::StopErrorReason;
use paperclip_sandbox_protocol::methods::{Method, MissingLeaseId};

use crate::error::ProviderError;
use crate::kit::{ErrorKind, KitError};
use crate::provider::HookResult;

/// An error type a hook may return: how it is answered on the wire, told the method served.
///
/// Implement it once for a provider's error type; every hook (and `connect`) may then return
/// `Result<T, ThatError>` and use `?` on it, with no `map_err` in the hooks.
///
/// ```
/// use paperclip_sandbox_sdk::protocol::methods::Method;
/// use paperclip_sandbox_sdk::{IntoProviderError, ProviderError};
///
/// enum ApiError { BadRequest(String), Down }
///
/// impl IntoProviderError for ApiError {
///     fn into_provider_error(self, _method: Method) -> ProviderError {
///         match self {
///             ApiError::BadRequest(why) => ProviderError::invalid_params(why),
///             ApiError::Down => ProviderError::worker("the backend is unavailable"),
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a hook's error: it does not implement `IntoProviderError`",
    label = "hooks return `Result<T, E>` where `E: IntoProviderError`",
    note = "implement `paperclip_sandbox_sdk::IntoProviderError` for `{Self}` (once), or return `HookResult<T>`"
)]
pub trait IntoProviderError {
    /// The wire error of this error on a call of `method`.
    fn into_provider_error(self, method: Method) -> ProviderError;
}

impl IntoProviderError for ProviderError {
    fn into_provider_error(self, _method: Method) -> ProviderError {
        self
    }
}

/// `-32602 Invalid params: <path> is required`.
impl IntoProviderError for MissingLeaseId {
    fn into_provider_error(self, _method: Method) -> ProviderError {
        self.into()
    }
}

impl From<MissingLeaseId> for ProviderError {
    fn from(e: MissingLeaseId) -> Self {
        ProviderError::invalid_params(e)
    }
}

impl From<MissingLeaseId> for KitError {
    fn from(e: MissingLeaseId) -> Self {
        KitError::invalid(e.to_string())
    }
}

/// The kit's error on the wire, by method:
///
/// | Method | Kind | Answer |
/// |---|---|---|
/// | `environmentSyncIn`, `environmentSyncOut` | any | [`crate::kit::sync_error`]: `-32602` for [`ErrorKind::InvalidParams`], else `-32002` with the sync-error envelope |
/// | any | [`ErrorKind::InvalidParams`] | `-32602 Invalid params: <message>` |
/// | `environmentStopLease` | any other | `-32002` with the stop-error envelope, reason `unrecoverable` |
/// | any other | any other | `-32002 <message>` |
impl IntoProviderError for KitError {
    fn into_provider_error(self, method: Method) -> ProviderError {
        match method {
            Method::EnvironmentSyncIn | Method::EnvironmentSyncOut => crate::kit::sync_error(self),
            _ if self.kind == ErrorKind::InvalidParams => {
                ProviderError::invalid_params(self.message)
            }
            Method::EnvironmentStopLease => {
                ProviderError::stop(self.message, StopErrorReason::Unrecoverable)
            }
            _ => ProviderError::worker(self.message),
        }
    }
}

/// What a hook written under `#[provider]` returns: a `Result` whose error converts. Not
/// implemented by hand.
#[doc(hidden)]
pub trait HookReturn {
    /// The success type.
    type Ok;
    /// The error type.
    type Err: IntoProviderError;
    /// The outcome as the trait's hooks return it.
    fn into_hook_result(self, method: Method) -> HookResult<Self::Ok>;
}

impl<T, E: IntoProviderError> HookReturn for Result<T, E> {
    type Ok = T;
    type Err = E;

    fn into_hook_result(self, method: Method) -> HookResult<T> {
        self.map_err(|e| e.into_provider_error(method))
    }
}

/// The trait's return type for a hook written as returning `R`.
#[doc(hidden)]
pub type HookOutput<R> = HookResult<<R as HookReturn>::Ok>;

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_protocol::methods::Lease;

    fn data(e: &ProviderError, method: Method) -> Option<serde_json::Value> {
        e.to_error_object(method.as_str()).data
    }

    #[test]
    fn kit_errors_carry_the_envelope_of_their_method_only() {
        let io = || KitError::io("copy", std::io::Error::from_raw_os_error(libc::ENOSPC));
        let sync = io().into_provider_error(Method::EnvironmentSyncOut);
        assert_eq!(sync.code(), -32002);
        let sync_data = data(&sync, Method::EnvironmentSyncOut).expect("a sync envelope");
        assert_eq!(sync_data["diagnostic"]["errorCode"], "ENOSPC", "{sync_data}");
        let exec = io().into_provider_error(Method::EnvironmentExecute);
        assert_eq!((exec.code(), data(&exec, Method::EnvironmentExecute)), (-32002, None));
        let stop = io().into_provider_error(Method::EnvironmentStopLease);
        let stop_data = data(&stop, Method::EnvironmentStopLease).expect("a stop envelope");
        assert_eq!(stop_data["reason"], "unrecoverable", "{stop_data}");
        for method in [Method::EnvironmentSyncIn, Method::EnvironmentStopLease, Method::Health] {
            let bad = KitError::invalid("bad path").into_provider_error(method);
            assert_eq!((bad.code(), bad.message()), (-32602, "Invalid params: bad path"));
        }
    }

    #[test]
    fn a_missing_lease_id_is_invalid_params_in_every_error_type() {
        let missing = Lease::default().required_id().unwrap_err();
        let wire = missing.into_provider_error(Method::EnvironmentExecute);
        assert_eq!(wire.message(), "Invalid params: lease.providerLeaseId is required");
        let kit = KitError::from(missing).into_provider_error(Method::EnvironmentSyncIn);
        assert_eq!((kit.code(), kit.message()), (-32602, wire.message()));
    }

    #[test]
    fn any_result_with_a_converting_error_is_a_hook_result() {
        let ok: Result<u8, KitError> = Ok(7);
        assert_eq!(ok.into_hook_result(Method::Health).unwrap(), 7);
        let err: Result<u8, KitError> = Err(KitError::invalid("x"));
        assert_eq!(err.into_hook_result(Method::Health).unwrap_err().code(), -32602);
    }
}
