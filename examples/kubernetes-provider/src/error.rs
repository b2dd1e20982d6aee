//! The provider's error: every failure of a hook, converted for the method it serves once
//! ([`IntoProviderError`]), so the hooks use `?` and never `map_err`.

use std::fmt;

use paperclip_sandbox_sdk::kit::KitError;
use paperclip_sandbox_sdk::protocol::methods::sync::InvalidMinimumTimeout;
use paperclip_sandbox_sdk::protocol::methods::{Method, MissingLeaseId};
use paperclip_sandbox_sdk::{IntoProviderError, ProviderError};

use crate::cluster::ClusterError;
use crate::exec::CommandError;

/// A hook's failure.
#[derive(Debug)]
pub enum Error {
    /// The API server could not be reached (the kubeconfig did not load, or the client could
    /// not be built): `-32002 The Kubernetes API server is not reachable: …`.
    Unreachable(ClusterError),
    /// The command of `environmentExecute` could not be run: `-32002`, saying whether the lease
    /// Pod is gone or the run failed.
    Command(CommandError),
    /// A kit error: on the sync methods the sync-error envelope (the kit's conversion).
    Kit(KitError),
    /// An answer already made (`-32602` for bad params…), sent as it is.
    Provider(ProviderError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unreachable(e) => write!(f, "The Kubernetes API server is not reachable: {e}"),
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
            Error::Command(CommandError(e)) if e.is_not_found() => ProviderError::worker(format!(
                "The lease Pod does not exist or is not running: {}",
                e.reason
            )),
            Error::Command(CommandError(e)) => {
                ProviderError::worker(format!("Running the command failed: {e}"))
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

/// `-32602 Invalid params: lease.providerLeaseId is required`.
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
    use paperclip_sandbox_sdk::kit::ErrorKind;
    use paperclip_sandbox_sdk::prelude::Lease;

    use super::*;

    fn cluster_error(status: Option<u16>) -> ClusterError {
        ClusterError { operation: "exec", status, reason: "pods \"p\" not found".to_owned() }
    }

    #[test]
    fn each_failure_is_answered_for_its_method() {
        let gone = Error::from(CommandError(cluster_error(Some(404))));
        let gone = gone.into_provider_error(Method::EnvironmentExecute);
        assert!(gone.message().starts_with("The lease Pod does not exist"), "{gone:?}");
        let failed = Error::from(CommandError(cluster_error(Some(500))));
        let failed = failed.into_provider_error(Method::EnvironmentExecute);
        assert!(failed.message().starts_with("Running the command failed"), "{failed:?}");
        let unreachable = Error::Unreachable(cluster_error(None));
        let unreachable = unreachable.into_provider_error(Method::EnvironmentSyncIn);
        assert_eq!(unreachable.code(), -32002);
        assert!(unreachable.to_error_object("environmentSyncIn").data.is_none(), "no envelope");
        let kit = Error::from(KitError::new(ErrorKind::Timeout, "slow"));
        let kit = kit.into_provider_error(Method::EnvironmentSyncOut);
        let data = kit.to_error_object("environmentSyncOut").data.expect("a sync envelope");
        assert_eq!(data["diagnostic"]["errorCode"], "ETIMEDOUT", "{data}");
        let missing = Error::from(Lease::default().required_id().unwrap_err());
        assert_eq!(missing.into_provider_error(Method::EnvironmentExecute).code(), -32602);
    }
}
