use std::fmt;
use std::io;

use paperclip_sandbox_protocol::envelope::{
    creation_cleanup_data, stop_error_data, AcquisitionDiagnostic, Ownership, StopErrorReason,
    SyncDiagnostic,
};
use paperclip_sandbox_protocol::error_code::ErrorCode;
use paperclip_sandbox_protocol::jsonrpc::ErrorObject;
use paperclip_sandbox_protocol::methods::name;

/// The typed error-data envelopes a provider error may carry (see the module docs).
#[derive(Debug, Clone, PartialEq)]
enum EnvelopeData {
    CreationCleanup { ownership: Box<Ownership>, diagnostic: Option<AcquisitionDiagnostic> },
    Sync(SyncDiagnostic),
    Stop(StopErrorReason),
}

/// [`ProviderError`]: what a hook returns when it fails, and how it becomes a JSON-RPC error.
///
/// A provider error is a code and a message, nothing else. **Arbitrary `error.data` is never
/// forwarded**: there is no way to attach a free-form [`Value`] to a provider
/// error, and converting a received [`ErrorObject`] keeps its code and message but drops its
/// data. The only data that may ever reach the wire are the typed envelopes of the contract
/// (creation cleanup with its acquisition diagnostic, sync error, stop error), held in a
/// private slot and built only by the typed constructors [`ProviderError::creation_cleanup`],
/// [`ProviderError::sync`] and [`ProviderError::stop`]. When the runtime answers, it gates
/// them by method through the protocol crate's
/// [`envelope`](paperclip_sandbox_protocol::envelope) builders: cleanup on
/// `environmentAcquireLease` and `environmentDestroyLease` only, the acquisition diagnostic on
/// acquire only, the sync error on `environmentSyncOut` only (as the upstream SDK attaches it;
/// a sync-in failure is answered without data), the stop
/// error on `environmentStopLease` only, and nothing on any other method (`environmentProbe`…).
/// The code stays `-32002` and the message is the provider's; the wrapped cause is never
/// serialized. The envelopes belong to the November contract (paperclip-2026-11); a September
/// host ignores `error.data`.
///
/// [`Value`]: serde_json::Value
///
/// A failed hook: a JSON-RPC error code and a message.
///
/// Messages reach the host verbatim and may be logged there: never put resolved secrets in
/// them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct ProviderError {
    code: i64,
    message: String,
    data: Option<EnvelopeData>,
}

impl ProviderError {
    /// An error with any code. Plugin codes of the published SDK are in [`ErrorCode`]; other
    /// integers pass through to the host unchanged.
    pub fn new(code: impl Into<i64>, message: impl Into<String>) -> Self {
        ProviderError { code: code.into(), message: message.into(), data: None }
    }

    /// `-32002` WORKER_ERROR: a hook failed without a more specific code (what the published
    /// SDK answers for a thrown error without a numeric code).
    pub fn worker(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::WorkerError, message)
    }

    /// `-32602 Invalid params: <detail>`.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        ErrorObject::invalid_params(detail).into()
    }

    /// `-32004 <method> is not implemented by this plugin`.
    pub fn not_implemented(method: &str) -> Self {
        ErrorObject::method_not_implemented(method).into()
    }

    /// `-32603` INTERNAL_ERROR.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// `-32003` TIMEOUT.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Timeout, message)
    }

    /// `-32002` carrying the creation-cleanup envelope: the provider may have created a
    /// resource it could not clean up, described by `ownership`; on acquire, `diagnostic` says
    /// how far the acquisition got. Sent on acquire and destroy only.
    pub fn creation_cleanup(
        message: impl Into<String>,
        ownership: Ownership,
        diagnostic: Option<AcquisitionDiagnostic>,
    ) -> Self {
        let data = EnvelopeData::CreationCleanup { ownership: Box::new(ownership), diagnostic };
        ProviderError { data: Some(data), ..Self::worker(message) }
    }

    /// `-32002` carrying the sync-error diagnostic. Sent on `environmentSyncOut` only, as the
    /// upstream SDK does; on any other method (`environmentSyncIn` included) the answer has
    /// the message and no data.
    pub fn sync(message: impl Into<String>, diagnostic: SyncDiagnostic) -> Self {
        ProviderError { data: Some(EnvelopeData::Sync(diagnostic)), ..Self::worker(message) }
    }

    /// `-32002` carrying the typed stop error. Sent on stop only.
    pub fn stop(message: impl Into<String>, reason: StopErrorReason) -> Self {
        ProviderError { data: Some(EnvelopeData::Stop(reason)), ..Self::worker(message) }
    }

    /// `-32002` from any error, with its `Display` text as the message.
    pub fn from_error(err: &(dyn std::error::Error + 'static)) -> Self {
        Self::worker(err.to_string())
    }

    /// The code.
    pub fn code(&self) -> i64 {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON-RPC error answered for this error on `method`.
    ///
    /// Typed envelope data is attached only where the contract allows it for `method` (see
    /// the module docs); otherwise the answer has no `data`.
    pub fn to_error_object(&self, method: &str) -> ErrorObject {
        let error = ErrorObject::new(self.code, self.message.clone());
        let data = match &self.data {
            None => None,
            Some(EnvelopeData::CreationCleanup { ownership, diagnostic }) => {
                creation_cleanup_data(method, ownership, diagnostic.as_ref())
            }
            Some(EnvelopeData::Sync(diagnostic)) => match method {
                name::ENVIRONMENT_SYNC_OUT => diagnostic.to_data(),
                _ => None,
            },
            Some(EnvelopeData::Stop(reason)) => {
                (method == name::ENVIRONMENT_STOP_LEASE).then(|| stop_error_data(*reason))
            }
        };
        match data {
            Some(data) => error.with_data(data),
            None => error,
        }
    }
}

impl From<ErrorObject> for ProviderError {
    /// Keeps the code and the message; drops any `data` (never forwarded).
    fn from(e: ErrorObject) -> Self {
        ProviderError::new(e.code, e.message)
    }
}

impl From<io::Error> for ProviderError {
    /// `-32002` with the I/O error's text.
    fn from(e: io::Error) -> Self {
        ProviderError::worker(e.to_string())
    }
}

impl From<serde_json::Error> for ProviderError {
    /// `-32002` with the JSON error described without quoting any value
    /// ([`describe_json_error`]).
    fn from(e: serde_json::Error) -> Self {
        ProviderError::worker(describe_json_error(&e))
    }
}

/// What went wrong in a `serde_json` error, in words that never quote a value.
///
/// `serde_json`'s own text quotes what it found (`invalid type: string "<secret>", expected
/// a map`), and params carry configs with resolved secrets. This keeps the kind of problem
/// and the expected type: `invalid type: expected a map, found a string`, `invalid value:
/// expected u32`, `unknown variant, expected one of …`, `missing field `lease``, and drops
/// positions. A custom message is kept only when it quotes nothing.
pub fn describe_json_error(err: &serde_json::Error) -> String {
    let text = err.to_string();
    // serde_json appends " at line L column C" to errors with a position.
    let text = match text.rfind(" at line ") {
        Some(i) if text[i..].contains(" column ") => &text[..i],
        _ => &text[..],
    };
    let expected = |rest: &str| rest.split_once(", expected ").map(|(_, e)| e.to_owned());
    if let Some(rest) = text.strip_prefix("invalid type: ") {
        let found = rest.split([' ', ',']).next().unwrap_or("value");
        return match expected(rest) {
            Some(e) => format!("invalid type: expected {e}, found {}", with_article(found)),
            None => "invalid type".to_owned(),
        };
    }
    if let Some(rest) = text.strip_prefix("invalid value: ") {
        return match expected(rest) {
            Some(e) => format!("invalid value: expected {e}"),
            None => "invalid value".to_owned(),
        };
    }
    if let Some(rest) = text.strip_prefix("unknown variant ") {
        return match expected(rest) {
            Some(e) => format!("unknown variant, expected {e}"),
            None => "unknown variant".to_owned(),
        };
    }
    if text.starts_with("unknown field ") {
        return match expected(text) {
            Some(e) => format!("unknown field, expected {e}"),
            None => "unknown field".to_owned(),
        };
    }
    let schema_named = ["missing field `", "duplicate field `", "invalid length "];
    if schema_named.iter().any(|p| text.starts_with(p)) {
        // Field names come from the schema; a length is not a value.
        return text.to_owned();
    }
    if text.contains(['"', '`', '\'']) {
        return "invalid value".to_owned();
    }
    text.to_owned()
}

fn with_article(kind: &str) -> String {
    match kind {
        "null" | "unit" => kind.to_owned(),
        k if k.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {k}"),
        k => format!("a {k}"),
    }
}

/// Deserializes `value` as `T`; on failure, the `-32602` answer names the path of the bad
/// field and what was expected, never the value found ([`describe_json_error`]).
pub(crate) fn params_from_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, ErrorObject> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let what = describe_json_error(e.inner());
        if path == "." || path.is_empty() {
            ErrorObject::invalid_params(what)
        } else {
            ErrorObject::invalid_params(format_args!("{path}: {what}"))
        }
    })
}

impl From<String> for ProviderError {
    /// `-32002` with this message.
    fn from(message: String) -> Self {
        ProviderError::worker(message)
    }
}

impl From<&str> for ProviderError {
    /// `-32002` with this message.
    fn from(message: &str) -> Self {
        ProviderError::worker(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_protocol::methods::name;
    use serde_json::json;

    #[test]
    fn constructors_use_protocol_wording() {
        let e = ProviderError::not_implemented(name::ENVIRONMENT_SYNC_IN);
        assert_eq!(e.code(), -32004);
        assert_eq!(e.message(), "environmentSyncIn is not implemented by this plugin");
        let e = ProviderError::invalid_params("missing field `lease`");
        assert_eq!(e.code(), -32602);
        assert_eq!(e.message(), "Invalid params: missing field `lease`");
        let e: ProviderError = io::Error::new(io::ErrorKind::NotFound, "no such box").into();
        assert_eq!((e.code(), e.message()), (-32002, "no such box"));
        assert_eq!(e.to_string(), "no such box (code -32002)");
    }

    #[test]
    fn json_errors_name_the_path_and_type_never_the_value() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct P {
            config: serde_json::Map<String, serde_json::Value>,
            mode: Option<u32>,
            kind: Option<Kind>,
            items: Option<Vec<u8>>,
        }
        #[derive(Debug, serde::Deserialize)]
        enum Kind {
            File,
        }
        let cases = [
            (
                json!({"config": "SENTINEL-1"}),
                "Invalid params: config: invalid type: expected a map, found a string",
            ),
            (
                json!({"config": {}, "mode": 4_294_967_296u64}),
                "Invalid params: mode: invalid value: expected u32",
            ),
            (
                json!({"config": {}, "mode": -7}),
                "Invalid params: mode: invalid value: expected u32",
            ),
            (
                json!({"config": {}, "kind": "SENTINEL-2"}),
                "Invalid params: kind: unknown variant, expected `File`",
            ),
            (
                json!({"config": {}, "items": [1, "SENTINEL-3"]}),
                "Invalid params: items[1]: invalid type: expected u8, found a string",
            ),
            (json!({"mode": 1}), "Invalid params: missing field `config`"),
            (
                json!("SENTINEL-4"),
                "Invalid params: invalid type: expected struct P, found a string",
            ),
        ];
        for (value, want) in cases {
            let err = params_from_value::<P>(value.clone()).unwrap_err();
            assert_eq!(err.message, want, "{value}");
            assert!(!err.message.contains("SENTINEL"));
        }
        let serde_err = serde_json::from_str::<u32>("\"SENTINEL-5\"").unwrap_err();
        let e = ProviderError::from(serde_err);
        assert_eq!(e.message(), "invalid type: expected u32, found a string");
    }

    #[test]
    fn received_data_is_never_forwarded() {
        let incoming = ErrorObject::new(-32042, "Provider refusal")
            .with_data(json!({"schema": "paperclip/environment-creation-cleanup/v1"}));
        let e = ProviderError::from(incoming);
        let out = e.to_error_object(name::ENVIRONMENT_ACQUIRE_LEASE);
        assert_eq!(out, ErrorObject::new(-32042, "Provider refusal"));
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            "{\"code\":-32042,\"message\":\"Provider refusal\"}"
        );
    }

    #[test]
    fn envelopes_are_gated_by_method() {
        use paperclip_sandbox_protocol::envelope::sync_error::SyncErrorCode;
        let cleanup = json!({"providerLeaseId": "paperclip-create-attempt-1",
            "companyId": "company-1", "environmentId": "environment-1", "runId": "run-1",
            "attemptId": "attempt-1", "accountFingerprint": "a".repeat(64),
            "labels": {"paperclip-provider": "rust"}, "accessToken": "secret-token"});
        let ownership = Ownership::parse(&cleanup).unwrap();
        let e = ProviderError::creation_cleanup("Cleanup required", ownership, None);
        for method in [name::ENVIRONMENT_ACQUIRE_LEASE, name::ENVIRONMENT_DESTROY_LEASE] {
            let out = e.to_error_object(method);
            assert_eq!(out.code, -32002);
            let data = out.data.expect("cleanup envelope");
            assert_eq!(data["schema"], "paperclip/environment-creation-cleanup/v1");
            assert!(!data.to_string().contains("secret"));
        }
        for method in [name::ENVIRONMENT_PROBE, name::ENVIRONMENT_SYNC_IN] {
            assert_eq!(e.to_error_object(method).data, None, "{method}");
        }

        let sync = ProviderError::sync("copy failed", SyncDiagnostic::new(SyncErrorCode::Enoent));
        let data = sync.to_error_object(name::ENVIRONMENT_SYNC_OUT).data.expect("sync envelope");
        assert_eq!(data["schema"], "paperclip/environment-sync-error/v1");
        assert_eq!(sync.to_error_object(name::ENVIRONMENT_EXECUTE).data, None);
        // Upstream captures the sync diagnostic around environmentSyncOut only.
        let sync_in = sync.to_error_object(name::ENVIRONMENT_SYNC_IN);
        assert_eq!((sync_in.data, sync_in.message.as_str()), (None, "copy failed"));

        let stop = ProviderError::stop("gone", StopErrorReason::Unrecoverable);
        assert!(stop.to_error_object(name::ENVIRONMENT_STOP_LEASE).data.is_some());
        assert_eq!(stop.to_error_object(name::ENVIRONMENT_RELEASE_LEASE).data, None);
    }
}
