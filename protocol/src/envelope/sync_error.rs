//! The sync diagnostic envelope:
//! `{"schema":"paperclip/environment-sync-error/v1","diagnostic":{errorCode, httpStatus?, exitCode?, transferStep?, transferFailureKind?}}`.
//!
//! Diagnostic evidence only: it never authorizes cleanup or retry. Every field is allowlisted
//! or a bounded integer, so no provider text, path, name or token can cross.
//! Which methods carry it is not visible in any published source (presumably
//! `environmentSyncIn` / `environmentSyncOut`).

use serde_json::{Map, Value};

use super::as_integer;
use crate::profile::HostProfile;

/// The `schema` string of the envelope.
pub const SYNC_ERROR_SCHEMA: &str = "paperclip/environment-sync-error/v1";
/// How many levels of `cause` the producer reads: the error itself and three causes.
pub const MAX_CAUSE_DEPTH: usize = 4;
/// The only keys a sync diagnostic carries, in wire order.
pub const DIAGNOSTIC_KEYS: &[&str] =
    &["errorCode", "httpStatus", "exitCode", "transferStep", "transferFailureKind"];

wire_enum! {
    /// `errorCode`: an allowlisted system or network error code, else `unknown`.
    SyncErrorCode {
        /// `unknown`: not an allowlisted code.
        Unknown = "unknown",
        /// `ENOENT`.
        Enoent = "ENOENT",
        /// `EACCES`.
        Eacces = "EACCES",
        /// `EPERM`.
        Eperm = "EPERM",
        /// `ENOSPC`.
        Enospc = "ENOSPC",
        /// `EIO`.
        Eio = "EIO",
        /// `EXDEV`.
        Exdev = "EXDEV",
        /// `ENOTDIR`.
        Enotdir = "ENOTDIR",
        /// `EISDIR`.
        Eisdir = "EISDIR",
        /// `ECONNRESET`.
        Econnreset = "ECONNRESET",
        /// `ECONNREFUSED`.
        Econnrefused = "ECONNREFUSED",
        /// `ETIMEDOUT`.
        Etimedout = "ETIMEDOUT",
        /// `EPIPE`.
        Epipe = "EPIPE",
        /// `ENOTFOUND`.
        Enotfound = "ENOTFOUND",
        /// `EAI_AGAIN`.
        EaiAgain = "EAI_AGAIN",
        /// `ABORT_ERR`.
        AbortErr = "ABORT_ERR",
        /// `UND_ERR_CONNECT_TIMEOUT`.
        UndErrConnectTimeout = "UND_ERR_CONNECT_TIMEOUT",
        /// `UND_ERR_SOCKET`.
        UndErrSocket = "UND_ERR_SOCKET",
    }
}

wire_enum! {
    /// `transferStep`: the transfer stage that failed.
    TransferStep {
        /// `sandbox_access`.
        SandboxAccess = "sandbox_access",
        /// `sandbox_guard`.
        SandboxGuard = "sandbox_guard",
        /// `file_download`.
        FileDownload = "file_download",
        /// `file_finalize`.
        FileFinalize = "file_finalize",
        /// `archive_create`.
        ArchiveCreate = "archive_create",
        /// `archive_download`.
        ArchiveDownload = "archive_download",
        /// `archive_validate`.
        ArchiveValidate = "archive_validate",
        /// `archive_extract`.
        ArchiveExtract = "archive_extract",
    }
}

wire_enum! {
    /// `transferFailureKind`: how the transfer failed.
    TransferFailureKind {
        /// `command_failed`.
        CommandFailed = "command_failed",
        /// `download_failed`.
        DownloadFailed = "download_failed",
        /// `download_missing`.
        DownloadMissing = "download_missing",
        /// `unsafe_archive`.
        UnsafeArchive = "unsafe_archive",
        /// `listing_timeout`.
        ListingTimeout = "listing_timeout",
        /// `listing_entry_limit`.
        ListingEntryLimit = "listing_entry_limit",
        /// `listing_byte_limit`.
        ListingByteLimit = "listing_byte_limit",
        /// `listing_line_limit`.
        ListingLineLimit = "listing_line_limit",
        /// `listing_stderr_limit`.
        ListingStderrLimit = "listing_stderr_limit",
    }
}

impl SyncErrorCode {
    /// The allowlisted code of a string, `Unknown` otherwise (including the string "unknown").
    pub fn from_code(code: &str) -> Self {
        Self::from_wire(code).unwrap_or(SyncErrorCode::Unknown)
    }
}

/// A bounded number outside its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SyncDiagnosticError {
    /// `httpStatus` outside 400..=599.
    #[error("sync diagnostic httpStatus must be an integer from 400 to 599, got {0}")]
    HttpStatus(i64),
    /// `exitCode` outside 1..=255.
    #[error("sync diagnostic exitCode must be an integer from 1 to 255, got {0}")]
    ExitCode(i64),
}

/// A sync diagnostic. Build one with [`SyncDiagnostic::new`] and the `with_*` methods, or read
/// one with [`read_sync_error`] / produce one from an error with [`SyncDiagnostic::from_error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SyncDiagnostic {
    error_code: SyncErrorCode,
    http_status: Option<u16>,
    exit_code: Option<u8>,
    transfer_step: Option<TransferStep>,
    transfer_failure_kind: Option<TransferFailureKind>,
}

fn bounded(value: Option<&Value>, min: i64, max: i64) -> Option<i64> {
    value.and_then(as_integer).filter(|n| (min..=max).contains(n))
}

impl SyncDiagnostic {
    /// A diagnostic with only an error code.
    pub fn new(error_code: SyncErrorCode) -> Self {
        SyncDiagnostic {
            error_code,
            http_status: None,
            exit_code: None,
            transfer_step: None,
            transfer_failure_kind: None,
        }
    }

    /// Sets `httpStatus` (400..=599).
    pub fn with_http_status(mut self, status: i64) -> Result<Self, SyncDiagnosticError> {
        if !(400..=599).contains(&status) {
            return Err(SyncDiagnosticError::HttpStatus(status));
        }
        self.http_status = Some(status as u16);
        Ok(self)
    }

    /// Sets `exitCode` (1..=255).
    pub fn with_exit_code(mut self, code: i64) -> Result<Self, SyncDiagnosticError> {
        if !(1..=255).contains(&code) {
            return Err(SyncDiagnosticError::ExitCode(code));
        }
        self.exit_code = Some(code as u8);
        Ok(self)
    }

    /// Sets `transferStep`.
    pub fn with_transfer_step(mut self, step: TransferStep) -> Self {
        self.transfer_step = Some(step);
        self
    }

    /// Sets `transferFailureKind`.
    pub fn with_transfer_failure_kind(mut self, kind: TransferFailureKind) -> Self {
        self.transfer_failure_kind = Some(kind);
        self
    }

    /// `errorCode`.
    pub fn error_code(&self) -> SyncErrorCode {
        self.error_code
    }

    /// `httpStatus`.
    pub fn http_status(&self) -> Option<u16> {
        self.http_status
    }

    /// `exitCode`.
    pub fn exit_code(&self) -> Option<u8> {
        self.exit_code
    }

    /// `transferStep`.
    pub fn transfer_step(&self) -> Option<TransferStep> {
        self.transfer_step
    }

    /// `transferFailureKind`.
    pub fn transfer_failure_kind(&self) -> Option<TransferFailureKind> {
        self.transfer_failure_kind
    }

    /// True when the diagnostic says nothing (`unknown` and no other field): it is then omitted.
    pub fn is_empty(&self) -> bool {
        self.error_code == SyncErrorCode::Unknown
            && self.http_status.is_none()
            && self.exit_code.is_none()
            && self.transfer_step.is_none()
            && self.transfer_failure_kind.is_none()
    }

    /// The `diagnostic` wire object, allowlisted keys only.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("errorCode".into(), self.error_code.as_str().into());
        if let Some(status) = self.http_status {
            map.insert("httpStatus".into(), status.into());
        }
        if let Some(code) = self.exit_code {
            map.insert("exitCode".into(), code.into());
        }
        if let Some(step) = self.transfer_step {
            map.insert("transferStep".into(), step.as_str().into());
        }
        if let Some(kind) = self.transfer_failure_kind {
            map.insert("transferFailureKind".into(), kind.as_str().into());
        }
        Value::Object(map)
    }

    /// The whole `error.data` envelope, or `None` when the diagnostic [is empty](Self::is_empty).
    pub fn to_data(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let mut map = Map::new();
        map.insert("schema".into(), SYNC_ERROR_SCHEMA.into());
        map.insert("diagnostic".into(), self.to_json());
        Some(Value::Object(map))
    }

    /// Sanitizes a `diagnostic` object: out-of-allowlist or out-of-range fields are dropped;
    /// `None` when nothing is left. Numbers must be integers (`503.0` counts, as in JavaScript).
    pub fn sanitize(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        let diagnostic = SyncDiagnostic {
            error_code: obj
                .get("errorCode")
                .and_then(Value::as_str)
                .map_or(SyncErrorCode::Unknown, SyncErrorCode::from_code),
            http_status: bounded(obj.get("httpStatus"), 400, 599).map(|n| n as u16),
            exit_code: bounded(obj.get("exitCode"), 1, 255).map(|n| n as u8),
            transfer_step: obj
                .get("transferStep")
                .and_then(Value::as_str)
                .and_then(TransferStep::from_wire),
            transfer_failure_kind: obj
                .get("transferFailureKind")
                .and_then(Value::as_str)
                .and_then(TransferFailureKind::from_wire),
        };
        (!diagnostic.is_empty()).then_some(diagnostic)
    }

    /// The producer (`environmentSyncErrorData`): reads a thrown error given as a JSON object
    /// and at most [`MAX_CAUSE_DEPTH`] levels of `cause`. At each level, in order:
    ///
    /// - `errorCode`: the first level whose string `code` is allowlisted;
    /// - `httpStatus`: the first level with a valid `status`, else `statusCode`, else
    ///   `response.status` (integers 400..=599; strings never count);
    /// - `exitCode`: the first level with a valid `exitCode`, else a numeric `code` (1..=255).
    ///
    /// Nothing else is read: `message`, `name`, `path`, `data`, `stderr` never cross. A value
    /// that is not an object (a string, `null`) produces nothing.
    pub fn from_error(error: &Value) -> Option<Self> {
        let mut diagnostic = SyncDiagnostic::new(SyncErrorCode::Unknown);
        let mut current = Some(error);
        for _ in 0..MAX_CAUSE_DEPTH {
            let Some(obj) = current.and_then(Value::as_object) else { break };
            let code = obj.get("code");
            if diagnostic.error_code == SyncErrorCode::Unknown {
                if let Some(code) = code.and_then(Value::as_str) {
                    diagnostic.error_code = SyncErrorCode::from_code(code);
                }
            }
            if diagnostic.http_status.is_none() {
                diagnostic.http_status = bounded(obj.get("status"), 400, 599)
                    .or_else(|| bounded(obj.get("statusCode"), 400, 599))
                    .or_else(|| {
                        bounded(obj.get("response").and_then(|r| r.get("status")), 400, 599)
                    })
                    .map(|n| n as u16);
            }
            if diagnostic.exit_code.is_none() {
                diagnostic.exit_code = bounded(obj.get("exitCode"), 1, 255)
                    .or_else(|| bounded(code, 1, 255))
                    .map(|n| n as u8);
            }
            current = obj.get("cause");
        }
        (!diagnostic.is_empty()).then_some(diagnostic)
    }
}

/// The producer: the `error.data` envelope for a thrown error (see
/// [`SyncDiagnostic::from_error`]), or `None` when nothing allowlisted is found.
pub fn sync_error_data(error: &Value) -> Option<Value> {
    SyncDiagnostic::from_error(error)?.to_data()
}

/// [`sync_error_data`] under a host profile: `paperclip-2026-09` never attaches data.
pub fn sync_error_data_for_profile(profile: HostProfile, error: &Value) -> Option<Value> {
    if profile.is_november() {
        sync_error_data(error)
    } else {
        None
    }
}

/// Host side (`readEnvironmentSyncErrorDiagnostic`): revalidates an `error.data` value; `None`
/// unless the schema matches and something allowlisted is left.
pub fn read_sync_error(data: &Value) -> Option<SyncDiagnostic> {
    if data.get("schema").and_then(Value::as_str) != Some(SYNC_ERROR_SCHEMA) {
        return None;
    }
    SyncDiagnostic::sanitize(data.get("diagnostic")?)
}

/// [`read_sync_error`] of an error object's `data` (`{data: {...}}`).
pub fn read_sync_error_from_error(error: &Value) -> Option<SyncDiagnostic> {
    read_sync_error(error.get("data")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builder_round_trips_through_the_reader() {
        let d = SyncDiagnostic::new(SyncErrorCode::Enospc)
            .with_http_status(507)
            .unwrap()
            .with_exit_code(2)
            .unwrap()
            .with_transfer_step(TransferStep::ArchiveExtract)
            .with_transfer_failure_kind(TransferFailureKind::CommandFailed);
        let data = d.to_data().unwrap();
        assert_eq!(read_sync_error(&data), Some(d));
        assert_eq!(
            data["diagnostic"],
            json!({"errorCode": "ENOSPC", "httpStatus": 507, "exitCode": 2,
                   "transferStep": "archive_extract", "transferFailureKind": "command_failed"})
        );
        assert_eq!(SyncDiagnostic::new(SyncErrorCode::Unknown).to_data(), None);
        assert_eq!(
            SyncDiagnostic::new(SyncErrorCode::Eio).with_exit_code(0),
            Err(SyncDiagnosticError::ExitCode(0))
        );
    }

    #[test]
    fn producer_precedence() {
        // A numeric code in range counts as an exit code; the first level wins.
        let err = json!({"code": 3, "cause": {"exitCode": 9, "statusCode": 502, "code": "EPIPE"}});
        let d = SyncDiagnostic::from_error(&err).unwrap();
        assert_eq!(
            (d.exit_code(), d.http_status(), d.error_code()),
            (Some(3), Some(502), SyncErrorCode::Epipe)
        );
        let err = json!({"status": "503", "statusCode": 600, "response": {"status": 429.0}});
        assert_eq!(SyncDiagnostic::from_error(&err).unwrap().http_status(), Some(429));
        // The reader drops what is not allowlisted and keeps the rest.
        let data = json!({"schema": SYNC_ERROR_SCHEMA, "diagnostic": {"errorCode": "x", "exitCode": 1, "extra": 1}});
        assert_eq!(
            read_sync_error(&data).unwrap().to_json(),
            json!({"errorCode": "unknown", "exitCode": 1})
        );
    }
}
