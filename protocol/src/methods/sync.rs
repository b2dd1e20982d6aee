//! environmentSyncIn / environmentSyncOut.
//!
//! `minimumTimeoutMs` (D7, `paperclip-2026-11`) is kept as the raw JSON value the host sent,
//! so a malformed value never fails deserialization of the whole params; read it with
//! [`SyncParams::minimum_timeout_ms`], which validates it and yields the error the runtime
//! answers with `-32602`. Under `paperclip-2026-09` the field is ignored like any unknown
//! params field.

use super::lease::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::lease::wire::lenient_count;
use super::lease::{open_enum, EnvironmentBaseParams, Lease};
use crate::jsonrpc::ErrorObject;
use crate::profile::HostProfile;

/// The wire key of the minimum transfer timeout.
pub const MINIMUM_TIMEOUT_MS_KEY: &str = "minimumTimeoutMs";
/// The smallest valid `minimumTimeoutMs`.
pub const MINIMUM_TIMEOUT_MS_MIN: u64 = 1;
/// The largest valid `minimumTimeoutMs` (30 minutes).
pub const MINIMUM_TIMEOUT_MS_MAX: u64 = 1_800_000;

params_struct! {
    /// Params of `environmentSyncIn` and `environmentSyncOut` (D.10).
    pub struct SyncParams {
        /// The lease.
        pub lease: Lease,
        /// Operations, applied strictly in order.
        pub operations: Vec<SyncOperation>,
        /// The raw `minimumTimeoutMs` (`paperclip-2026-11`); a present `null` is `Some(Null)`.
        /// Read it with [`SyncParams::minimum_timeout_ms`].
        #[serde(default, deserialize_with = "present")]
        #[schemars(with = "u64", range(min = 1, max = 1_800_000))]
        pub minimum_timeout_ms: Option<Value>,
    }
}

/// Params of `environmentSyncIn`.
pub type SyncInParams<C = JsonObject> = SyncParams<C>;
/// Params of `environmentSyncOut`.
pub type SyncOutParams<C = JsonObject> = SyncParams<C>;

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl SyncParams {
    /// Params for `operations` on `lease`, without a minimum timeout.
    pub fn new(base: EnvironmentBaseParams, lease: Lease, operations: Vec<SyncOperation>) -> Self {
        SyncParams { base, lease, operations, minimum_timeout_ms: None }
    }

    /// Sets `minimumTimeoutMs`.
    pub fn with_minimum_timeout_ms(mut self, ms: u64) -> Self {
        self.minimum_timeout_ms = Some(Value::from(ms));
        self
    }

    /// The validated minimum under `profile`: `Ok(None)` when absent or when the profile
    /// predates the field.
    pub fn minimum_timeout_ms(
        &self,
        profile: HostProfile,
    ) -> Result<Option<u64>, InvalidMinimumTimeout> {
        if !profile.is_november() {
            return Ok(None);
        }
        validate_minimum_timeout_ms(self.minimum_timeout_ms.as_ref())
    }

    /// The transfer timeout to apply: [`effective_sync_timeout_ms`] of the validated minimum
    /// and `configured_ms`.
    pub fn effective_timeout_ms(
        &self,
        profile: HostProfile,
        configured_ms: u64,
    ) -> Result<u64, InvalidMinimumTimeout> {
        Ok(effective_sync_timeout_ms(self.minimum_timeout_ms(profile)?, configured_ms))
    }
}

/// An invalid `minimumTimeoutMs`: answered with `-32602`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "minimumTimeoutMs must be an integer from {MINIMUM_TIMEOUT_MS_MIN} to {MINIMUM_TIMEOUT_MS_MAX}, got {value}"
)]
pub struct InvalidMinimumTimeout {
    /// The value the host sent.
    pub value: Value,
}

impl InvalidMinimumTimeout {
    /// The `-32602 Invalid params: …` error object.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::invalid_params(self)
    }
}

/// Validates a raw `minimumTimeoutMs`: absent is `Ok(None)`; an integer-valued number from 1
/// to 1,800,000 (as JavaScript's `Number.isInteger` sees it, so `6e5` passes) is the value;
/// anything else, `null` included, is an error.
pub fn validate_minimum_timeout_ms(
    raw: Option<&Value>,
) -> Result<Option<u64>, InvalidMinimumTimeout> {
    let Some(value) = raw else { return Ok(None) };
    let invalid = || InvalidMinimumTimeout { value: value.clone() };
    let ms = match value {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => u,
            (None, Some(f))
                if f.fract() == 0.0 && f >= 1.0 && f <= MINIMUM_TIMEOUT_MS_MAX as f64 =>
            {
                f as u64
            }
            _ => return Err(invalid()),
        },
        _ => return Err(invalid()),
    };
    if (MINIMUM_TIMEOUT_MS_MIN..=MINIMUM_TIMEOUT_MS_MAX).contains(&ms) {
        Ok(Some(ms))
    } else {
        Err(invalid())
    }
}

/// Reads and validates `minimumTimeoutMs` from a raw params object under `profile` (for a
/// runtime that checks params before typing them, and for the vectors).
pub fn sync_minimum_timeout_ms(
    params: &Value,
    profile: HostProfile,
) -> Result<Option<u64>, InvalidMinimumTimeout> {
    if !profile.is_november() {
        return Ok(None);
    }
    validate_minimum_timeout_ms(params.get(MINIMUM_TIMEOUT_MS_KEY))
}

/// The effective transfer timeout: the larger of the host's minimum and the configured
/// timeout.
pub fn effective_sync_timeout_ms(params_minimum: Option<u64>, configured_ms: u64) -> u64 {
    params_minimum.map_or(configured_ms, |m| m.max(configured_ms))
}

/// One ordered unit of transfer work (`PluginSyncOperation`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SyncOperation {
    /// Opaque id; never parse it.
    pub operation_id: String,
    /// File mappings.
    pub files: Vec<FileMapping>,
    /// Commands run after the files land, in order, fail-fast; treat each as opaque.
    pub post_upload_commands: Option<Vec<PostUploadCommand>>,
}

impl SyncOperation {
    /// An operation without post-upload commands.
    pub fn new(operation_id: impl Into<String>, files: Vec<FileMapping>) -> Self {
        SyncOperation { operation_id: operation_id.into(), files, post_upload_commands: None }
    }

    /// The post-upload commands, empty when absent.
    pub fn post_upload_commands(&self) -> &[PostUploadCommand] {
        self.post_upload_commands.as_deref().unwrap_or_default()
    }
}

/// A command run after an operation's files land (`PluginPostUploadCommand`).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PostUploadCommand {
    /// The adapter-authored shell command; run verbatim, never rewritten.
    pub command: String,
    /// Absolute working directory confined to the operation's target root.
    pub cwd: Option<String>,
    /// Per-command timeout in ms.
    #[serde(default, deserialize_with = "lenient_count")]
    pub timeout_ms: Option<u64>,
}

impl PostUploadCommand {
    /// A command without cwd or timeout.
    pub fn new(command: impl Into<String>) -> Self {
        PostUploadCommand { command: command.into(), cwd: None, timeout_ms: None }
    }
}

/// What a file mapping transfers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MappingKind {
    /// One regular file; atomic replace.
    File,
    /// A directory tree; destroy-then-replace.
    Directory,
}

open_enum! {
    /// Advisory read-write intent of a mapping's sandbox target (default `ro`).
    pub enum SyncAccess {
        /// Read-write.
        ReadWrite = "rw",
        /// Read-only.
        ReadOnly = "ro",
    }
}

/// One source→target transfer (`PluginSyncFileMapping`). Sync-in goes host→sandbox,
/// sync-out sandbox→host.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileMapping {
    /// Absolute source path.
    pub source_path: String,
    /// Absolute target path.
    pub target_path: String,
    /// File or directory.
    pub kind: MappingKind,
    /// POSIX mode for the target (also files inside a directory mapping).
    pub mode: Option<u32>,
    /// Globs to exclude (directory mappings).
    pub exclude: Option<Vec<String>>,
    /// Dereference symlinks, as tar's `-h`; falsy preserves links.
    pub follow_symlinks: Option<bool>,
    /// Advisory access intent.
    pub access: Option<SyncAccess>,
    /// Advisory final read-write directory when `access` is `rw`.
    pub writable_path: Option<String>,
}

impl FileMapping {
    /// A mapping with every optional field absent.
    pub fn new(
        source_path: impl Into<String>,
        target_path: impl Into<String>,
        kind: MappingKind,
    ) -> Self {
        FileMapping {
            source_path: source_path.into(),
            target_path: target_path.into(),
            kind,
            mode: None,
            exclude: None,
            follow_symlinks: None,
            access: None,
            writable_path: None,
        }
    }

    /// The access intent, `ro` when absent.
    pub fn access(&self) -> SyncAccess {
        self.access.clone().unwrap_or(SyncAccess::ReadOnly)
    }

    /// Whether to dereference symlinks (false when absent).
    pub fn follow_symlinks(&self) -> bool {
        self.follow_symlinks.unwrap_or(false)
    }
}

/// Transfer accounting of one operation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SyncOperationResult {
    /// The operation's id, echoed.
    pub operation_id: String,
    /// Files transferred.
    pub files_transferred: u64,
    /// Bytes transferred.
    pub bytes_transferred: u64,
}

impl SyncOperationResult {
    /// Accounting for `operation_id`.
    pub fn new(operation_id: impl Into<String>, files: u64, bytes: u64) -> Self {
        SyncOperationResult {
            operation_id: operation_id.into(),
            files_transferred: files,
            bytes_transferred: bytes,
        }
    }
}

/// Result of `environmentSyncIn` / `environmentSyncOut` (`PluginEnvironmentSyncResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SyncResult {
    /// One entry per operation, in order.
    pub operations: Vec<SyncOperationResult>,
}

impl SyncResult {
    /// A result with `operations`.
    pub fn new(operations: Vec<SyncOperationResult>) -> Self {
        SyncResult { operations }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::methods::lease::from_json;

    fn sync_json() -> Value {
        json!({
            "driverKey": "rust-sbx", "companyId": "c1", "environmentId": "e1", "config": {},
            "lease": {"providerLeaseId": "sbx1", "metadata": {}, "expiresAt": null},
            "operations": [{
                "operationId": "op-1",
                "files": [
                    {"sourcePath": "/host/ws.tar", "targetPath": "/rt/workspace-upload.tar", "kind": "file", "mode": 384},
                    {"sourcePath": "/sbx/ws", "targetPath": "/host/tmp", "kind": "directory",
                     "exclude": [".git"], "followSymlinks": false, "access": "rw", "writablePath": "/sbx/ws"}
                ],
                "postUploadCommands": [{"command": "tar -xf x.tar", "cwd": "/rt", "timeoutMs": 60000}]
            }]
        })
    }

    #[test]
    fn sync_params_round_trip() {
        let p: SyncParams = from_json(sync_json());
        let op = &p.operations[0];
        assert_eq!(op.files[0].mode, Some(0o600));
        assert_eq!(op.files[0].access(), SyncAccess::ReadOnly);
        assert_eq!(op.files[1].access(), SyncAccess::ReadWrite);
        assert_eq!(op.post_upload_commands()[0].timeout_ms, Some(60_000));
        assert_eq!(serde_json::to_value(&p).unwrap(), sync_json());
        assert_eq!(p.minimum_timeout_ms(HostProfile::Paperclip2026_11), Ok(None));
    }

    #[test]
    fn invalid_minimum_never_fails_deserialization() {
        for bad in [json!("60000"), json!(0), json!(-1), json!(1.5), json!(null), json!(1_800_001)]
        {
            let mut v = sync_json();
            v["minimumTimeoutMs"] = bad.clone();
            let p: SyncParams = from_json(v.clone());
            let err = p.minimum_timeout_ms(HostProfile::Paperclip2026_11).unwrap_err();
            assert_eq!(err.value, bad);
            let obj = err.to_error_object();
            assert_eq!(obj.code, -32602);
            assert!(obj.message.contains("minimumTimeoutMs"), "{}", obj.message);
            assert_eq!(p.minimum_timeout_ms(HostProfile::Paperclip2026_09), Ok(None));
            assert_eq!(serde_json::to_value(&p).unwrap(), v);
        }
    }

    #[test]
    fn minimum_validation_and_effective_timeout() {
        let check = |v: Value| validate_minimum_timeout_ms(Some(&v));
        assert_eq!(check(json!(1)), Ok(Some(1)));
        assert_eq!(check(json!(1_800_000)), Ok(Some(1_800_000)));
        assert_eq!(check(json!(6e5)), Ok(Some(600_000)));
        assert!(check(json!(0.0)).is_err());
        assert!(check(json!(true)).is_err());
        assert_eq!(validate_minimum_timeout_ms(None), Ok(None));
        assert_eq!(effective_sync_timeout_ms(Some(600_000), 300_000), 600_000);
        assert_eq!(effective_sync_timeout_ms(Some(1), 300_000), 300_000);
        assert_eq!(effective_sync_timeout_ms(None, 300_000), 300_000);
        let p: SyncParams = from_json(sync_json());
        let p = p.with_minimum_timeout_ms(900_000);
        assert_eq!(p.effective_timeout_ms(HostProfile::Paperclip2026_11, 300_000), Ok(900_000));
        assert_eq!(p.effective_timeout_ms(HostProfile::Paperclip2026_09, 300_000), Ok(300_000));
    }

    proptest::proptest! {
        #[test]
        fn minimum_accepts_exactly_the_d7_range(n in -10i64..3_000_000) {
            let got = validate_minimum_timeout_ms(Some(&json!(n)));
            if (1..=1_800_000).contains(&n) {
                proptest::prop_assert_eq!(got, Ok(Some(n as u64)));
            } else {
                proptest::prop_assert!(got.is_err());
            }
            proptest::prop_assert!(validate_minimum_timeout_ms(Some(&json!(n as f64 + 0.5))).is_err());
        }
    }

    #[test]
    fn sync_result_wire() {
        let r = SyncResult::new(vec![SyncOperationResult::new("op-1", 3, 4096)]);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"operations": [{"operationId": "op-1", "filesTransferred": 3, "bytesTransferred": 4096}]})
        );
        let unknown_kind = json!({"sourcePath": "/a", "targetPath": "/b", "kind": "symlink"});
        assert!(serde_json::from_value::<FileMapping>(unknown_kind).is_err());
        let newer_access: FileMapping = from_json(
            json!({"sourcePath": "/a", "targetPath": "/b", "kind": "file", "access": "wo"}),
        );
        assert_eq!(newer_access.access(), SyncAccess::Other("wo".into()));
    }
}
