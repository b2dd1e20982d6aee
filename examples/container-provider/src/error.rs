//! The provider's error: every failure of a hook, converted for the method it serves once
//! ([`IntoProviderError`]), so the hooks use `?` and never `map_err`.

use std::fmt;

use paperclip_sandbox_sdk::kit::KitError;
use paperclip_sandbox_sdk::protocol::envelope::StopErrorReason;
use paperclip_sandbox_sdk::protocol::methods::sync::InvalidMinimumTimeout;
use paperclip_sandbox_sdk::protocol::methods::{Method, MissingLeaseId};
use paperclip_sandbox_sdk::{IntoProviderError, ProviderError};

use crate::engine::EngineError;
use crate::exec::CommandError;

/// A hook's failure.
#[derive(Debug)]
pub enum Error {
    /// The engine could not be reached to serve the call: `-32002 The container engine is not
    /// reachable: …`.
    Unreachable(EngineError),
    /// The engine failed an operation: on `environmentStopLease` the stop-error envelope
    /// (reason `unrecoverable`), elsewhere `-32002`.
    Backend(String),
    /// The command of `environmentExecute` could not be run: `-32002`, saying whether the lease
    /// container is gone, the engine unreachable or the run failed.
    Command(CommandError),
    /// A kit error: on the sync methods the sync-error envelope (the kit's conversion).
    Kit(KitError),
    /// An answer already made (`-32602` for bad params…), sent as it is.
    Provider(ProviderError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unreachable(e) => write!(f, "The container engine is not reachable: {e}"),
            Error::Backend(message) => f.write_str(message),
            Error::Command(e) => e.fmt(f),
            Error::Kit(e) => e.fmt(f),
            Error::Provider(e) => f.write_str(e.message()),
        }
    }
}

impl std::error::Error for Error {}

impl IntoProviderError for Error {
    fn into_provider_error(self, method: Method) -> ProviderError {
        match self {
            Error::Unreachable(_) => ProviderError::worker(self.to_string()),
            Error::Backend(message) if method == Method::EnvironmentStopLease => {
                ProviderError::stop(message, StopErrorReason::Unrecoverable)
            }
            Error::Backend(message) => ProviderError::worker(message),
            Error::Command(CommandError(e)) => {
                if e.is_not_found() || e.status == Some(409) {
                    ProviderError::worker("The lease container does not exist or is not running")
                } else if e.is_unreachable() {
                    ProviderError::worker(format!("The container engine is not reachable: {e}"))
                } else {
                    ProviderError::worker(format!("Running the command failed: {e}"))
                }
            }
            Error::Kit(e) => e.into_provider_error(method),
            Error::Provider(e) => e,
        }
    }
}

impl From<ProviderError> for Error {
    fn from(e: ProviderError) -> Self {
        Error::Provider(e)
    }
}

impl From<KitError> for Error {
    fn from(e: KitError) -> Self {
        Error::Kit(e)
    }
}

impl From<CommandError> for Error {
    fn from(e: CommandError) -> Self {
        Error::Command(e)
    }
}

/// `-32602 Invalid params: lease.providerLeaseId is required` (or `providerLeaseId`).
impl From<MissingLeaseId> for Error {
    fn from(e: MissingLeaseId) -> Self {
        Error::Provider(e.into())
    }
}

/// `-32602 Invalid params: …` naming `minimumTimeoutMs`.
impl From<InvalidMinimumTimeout> for Error {
    fn from(e: InvalidMinimumTimeout) -> Self {
        Error::Provider(ProviderError::invalid_params(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine_error(status: Option<u16>) -> EngineError {
        EngineError { operation: "stop container", status, reason: "x".to_owned() }
    }

    #[test]
    fn each_failure_is_answered_for_its_method() {
        let stop = Error::Backend("Stopping the container failed".into())
            .into_provider_error(Method::EnvironmentStopLease);
        let data = stop.to_error_object("environmentStopLease").data.expect("a stop envelope");
        assert_eq!(data["reason"], "unrecoverable", "{data}");
        let release = Error::Backend("Stopping the container failed".into())
            .into_provider_error(Method::EnvironmentReleaseLease);
        assert_eq!(release.code(), -32002);
        assert!(release.to_error_object("environmentReleaseLease").data.is_none());

        let gone = Error::Command(CommandError(engine_error(Some(409))));
        let gone = gone.into_provider_error(Method::EnvironmentExecute);
        assert_eq!(gone.message(), "The lease container does not exist or is not running");
        let down = Error::Command(CommandError(engine_error(None)));
        let down = down.into_provider_error(Method::EnvironmentExecute);
        assert!(down.message().starts_with("The container engine is not reachable"), "{down:?}");
        let unreachable = Error::Unreachable(engine_error(None));
        let unreachable = unreachable.into_provider_error(Method::EnvironmentSyncIn);
        assert_eq!(unreachable.code(), -32002);
        assert!(unreachable.to_error_object("environmentSyncIn").data.is_none(), "no envelope");

        let kit =
            Error::from(KitError::new(paperclip_sandbox_sdk::kit::ErrorKind::Timeout, "slow"));
        let kit = kit.into_provider_error(Method::EnvironmentSyncOut);
        let data = kit.to_error_object("environmentSyncOut").data.expect("a sync envelope");
        assert_eq!(data["diagnostic"]["errorCode"], "ETIMEDOUT", "{data}");
        let missing = Error::from(Lease::default().required_id().unwrap_err());
        assert_eq!(missing.into_provider_error(Method::EnvironmentExecute).code(), -32602);
    }

    use paperclip_sandbox_sdk::prelude::Lease;
}
