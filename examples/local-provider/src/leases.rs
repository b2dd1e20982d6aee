//! Leases: one private directory per lease under the provider root.
//!
//! Layout under the root (created `0700` when missing):
//!
//! ```text
//! <root>/<providerLeaseId>/             the lease directory (0700): HOME of its commands
//! <root>/<providerLeaseId>/workspace/   the realized workspace (the `cwd` of realize)
//! <root>/<providerLeaseId>/.tmp/        TMPDIR of its commands
//! <root>/<providerLeaseId>/.cache/      XDG_CACHE_HOME of its commands
//! <root>/<providerLeaseId>.lease.json   the lease record, outside the reach of sync targets
//! ```
//!
//! - `providerLeaseId` is `lp-<32 hex digits>`; ids the provider did not make (anything not
//!   matching `^[a-zA-Z0-9_-]{1,200}$`) are refused, so an id is never a path.
//! - `requestedExpiresAt` is honoured: it is recorded and returned as `expiresAt`, resume and
//!   [`LeaseStore::active_dir`] refuse an expired lease, and every acquire sweeps the root for
//!   expired leases and deletes them. Without it the lease has no expiry.
//! - Resume restarts a stopped lease; an unknown or expired lease resumes as
//!   `{providerLeaseId: null, metadata: {expired: true, reason}}`.
//! - Release follows `resourceDisposition`: `stop_and_retain` stops (receipt `stopped`),
//!   `keep_running` keeps everything (no receipt), anything else destroys (receipt
//!   `destroyed`). Destroy of a missing lease succeeds with `destroyed`.
//! - Stop kills the lease's running process groups and keeps its files (receipt `stopped`);
//!   stop of a missing lease answers `destroyed`, deleting nothing.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{ErrorKind, LocalError, Result};
use crate::exec::ProcessGroups;
use crate::timeutil::{format_rfc3339_ms, now_ms, parse_rfc3339_ms};

const RECORD_SCHEMA: &str = "local-provider.lease.v1";

/// True for an id matching `^[a-zA-Z0-9_-]{1,200}$`.
pub fn is_valid_lease_id(id: &str) -> bool {
    (1..=200).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A lease as the protocol returns it (`PluginEnvironmentLease`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The id, or `None` for a lease that cannot be resumed.
    pub provider_lease_id: Option<String>,
    /// Provider metadata the host persists with the lease.
    pub metadata: Map<String, Value>,
    /// The expiry, RFC 3339, when the lease has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// The state a termination receipt confirms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptState {
    /// Execution ended; the files are kept.
    Stopped,
    /// The lease is gone.
    Destroyed,
}

/// A termination receipt (`PluginEnvironmentTerminationReceipt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The lease it is about.
    pub provider_lease_id: String,
    /// What was confirmed.
    pub state: ReceiptState,
}

/// The persisted record of a lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    schema: String,
    provider_lease_id: String,
    created_at: String,
    expires_at: Option<String>,
    stopped: bool,
}

/// What release does with the lease (`resourceDisposition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Destroy the lease (the default).
    Destroy,
    /// Stop it and keep its files.
    StopAndRetain,
    /// Leave it as it is.
    KeepRunning,
}

impl Disposition {
    /// Read `resourceDisposition`; an absent or unknown value means destroy.
    pub fn from_wire(value: Option<&str>) -> Self {
        match value {
            Some("stop_and_retain") => Self::StopAndRetain,
            Some("keep_running") => Self::KeepRunning,
            _ => Self::Destroy,
        }
    }
}

/// The leases under one root.
#[derive(Debug, Clone)]
pub struct LeaseStore {
    root: PathBuf,
    groups: ProcessGroups,
}

impl LeaseStore {
    /// The store at `root`, created (`0700`) when missing; an existing root must be a private
    /// directory of this user, looked at without following a link
    /// ([`ensure_private_dir`](paperclip_sandbox_sdk::private_dir::ensure_private_dir)):
    /// another user's directory, a shared one or a link is refused, naming the path and the
    /// fix. `groups` tracks the process groups of running commands so that stop, release and
    /// destroy can end them.
    pub fn open(root: &Path, groups: ProcessGroups) -> Result<Self> {
        paperclip_sandbox_sdk::private_dir::ensure_private_dir(root).map_err(|e| {
            LocalError::new(
                ErrorKind::Io,
                format!("the lease root {e} (config `root` or LOCAL_PROVIDER_ROOT)"),
            )
        })?;
        let root =
            root.canonicalize().map_err(|e| LocalError::io("resolve the provider root", e))?;
        Ok(Self { root, groups })
    }

    /// The (canonical) root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The process-group table shared with [`crate::exec::run`].
    pub fn groups(&self) -> &ProcessGroups {
        &self.groups
    }

    fn checked_id<'a>(&self, id: &'a str) -> Result<&'a str> {
        if is_valid_lease_id(id) {
            Ok(id)
        } else {
            Err(LocalError::invalid("providerLeaseId must match ^[a-zA-Z0-9_-]{1,200}$"))
        }
    }

    fn dir_of(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.lease.json"))
    }

    fn read_record(&self, id: &str) -> Result<Option<Record>> {
        match std::fs::read(self.record_path(id)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                LocalError::new(ErrorKind::Io, format!("lease record {id} is corrupt: {e}"))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(LocalError::io(format!("read lease record {id}"), e)),
        }
    }

    fn write_record(&self, rec: &Record) -> Result<()> {
        let path = self.record_path(&rec.provider_lease_id);
        let staged = self.root.join(format!(".paperclip-upload-{}", crate::random_hex(8)));
        let body = serde_json::to_vec_pretty(rec)
            .map_err(|e| LocalError::new(ErrorKind::Io, e.to_string()))?;
        let write = || -> std::io::Result<()> {
            std::fs::write(&staged, &body)?;
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
            std::fs::rename(&staged, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&staged);
            LocalError::io("write the lease record", e)
        })
    }

    fn lease_of(&self, rec: &Record) -> Lease {
        let mut metadata = Map::new();
        metadata.insert(
            "remoteCwd".into(),
            json!(self.dir_of(&rec.provider_lease_id).join("workspace")),
        );
        metadata.insert("createdAt".into(), json!(rec.created_at));
        if rec.stopped {
            metadata.insert("stopped".into(), json!(true));
        }
        if let Some(exp) = &rec.expires_at {
            metadata.insert("requestedExpiresAt".into(), json!(exp));
        }
        Lease {
            provider_lease_id: Some(rec.provider_lease_id.clone()),
            metadata,
            expires_at: rec.expires_at.clone(),
        }
    }

    fn is_expired(rec: &Record) -> bool {
        rec.expires_at.as_deref().and_then(parse_rfc3339_ms).is_some_and(|exp| now_ms() >= exp)
    }

    /// Acquire a fresh lease, bounded by `requested_expires_at` when given (it must be a valid
    /// RFC 3339 instant in the future).
    pub fn acquire(&self, requested_expires_at: Option<&str>) -> Result<Lease> {
        let expires_at = match requested_expires_at {
            None => None,
            Some(s) => {
                let ms = parse_rfc3339_ms(s).ok_or_else(|| {
                    LocalError::invalid("requestedExpiresAt is not an RFC 3339 timestamp")
                })?;
                if ms <= now_ms() {
                    return Err(LocalError::invalid("requestedExpiresAt is in the past"));
                }
                Some(format_rfc3339_ms(ms))
            }
        };
        self.sweep_expired();
        let id = format!("lp-{}", crate::random_hex(16));
        let dir = self.dir_of(&id);
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700);
        builder.create(&dir).map_err(|e| LocalError::io("create the lease directory", e))?;
        // DirBuilder's mode is filtered by the umask; make 0700 exact.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| LocalError::io("chmod the lease directory", e))?;
        for sub in ["workspace", ".tmp", ".cache"] {
            builder
                .create(dir.join(sub))
                .map_err(|e| LocalError::io("populate the lease directory", e))?;
        }
        let rec = Record {
            schema: RECORD_SCHEMA.into(),
            provider_lease_id: id,
            created_at: format_rfc3339_ms(now_ms()),
            expires_at,
            stopped: false,
        };
        self.write_record(&rec)?;
        tracing::info!(lease = %rec.provider_lease_id, "acquired lease");
        Ok(self.lease_of(&rec))
    }

    /// Resume a lease: the lease (restarted if it was stopped) when its directory exists and it
    /// has not expired, else a lease with no id and `metadata.expired = true`.
    pub fn resume(&self, id: &str) -> Result<Lease> {
        let gone = |reason: &str| Lease {
            provider_lease_id: None,
            metadata: Map::from_iter([
                ("expired".into(), json!(true)),
                ("reason".into(), json!(reason)),
            ]),
            expires_at: None,
        };
        if !is_valid_lease_id(id) {
            return Ok(gone("not_found"));
        }
        let Some(mut rec) = self.read_record(id)? else { return Ok(gone("not_found")) };
        if !self.dir_of(id).is_dir() {
            return Ok(gone("not_found"));
        }
        if Self::is_expired(&rec) {
            return Ok(gone("expired"));
        }
        if rec.stopped {
            rec.stopped = false;
            self.write_record(&rec)?;
            tracing::info!(lease = %id, "restarted stopped lease");
        }
        Ok(self.lease_of(&rec))
    }

    /// The directory of a lease that commands and transfers may use: it exists, is not stopped
    /// and has not expired.
    pub fn active_dir(&self, id: &str) -> Result<PathBuf> {
        let id = self.checked_id(id)?;
        let rec = self.read_record(id)?.filter(|_| self.dir_of(id).is_dir()).ok_or_else(|| {
            LocalError::new(ErrorKind::NotFound, format!("lease {id} does not exist"))
        })?;
        if Self::is_expired(&rec) {
            return Err(LocalError::new(ErrorKind::Expired, format!("lease {id} has expired")));
        }
        if rec.stopped {
            return Err(LocalError::new(
                ErrorKind::Stopped,
                format!("lease {id} is stopped; resume it first"),
            ));
        }
        Ok(self.dir_of(id))
    }

    /// Realize the workspace: `workspace.remotePath` when it is a path inside the lease
    /// (created if missing), else `<lease>/workspace`. Returns the `cwd`.
    pub fn realize(&self, id: &str, remote_path: Option<&str>) -> Result<PathBuf> {
        let dir = self.active_dir(id)?;
        let wanted = match remote_path {
            Some(p) if Path::new(p).starts_with(&dir) => {
                crate::confine::confine(&dir, Path::new(p), crate::confine::Leaf::Follow)?
            }
            _ => dir.join("workspace"),
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&wanted)
            .map_err(|e| LocalError::io("create the workspace", e))?;
        Ok(wanted)
    }

    /// Stop a lease: end its commands, keep its files, mark it stopped.
    pub fn stop(&self, id: &str) -> Result<Receipt> {
        let id = self.checked_id(id)?;
        let receipt = |state| Receipt { provider_lease_id: id.to_string(), state };
        let Some(mut rec) = self.read_record(id)? else {
            return Ok(receipt(ReceiptState::Destroyed));
        };
        if !self.dir_of(id).is_dir() {
            return Ok(receipt(ReceiptState::Destroyed));
        }
        self.groups.kill_all(&self.dir_of(id));
        rec.stopped = true;
        self.write_record(&rec)?;
        tracing::info!(lease = %id, "stopped lease");
        Ok(receipt(ReceiptState::Stopped))
    }

    /// Destroy a lease: end its commands and delete its directory and record. Succeeds for a
    /// lease that is already gone. `None` (no id) answers no receipt.
    pub fn destroy(&self, id: Option<&str>) -> Result<Option<Receipt>> {
        let Some(id) = id else { return Ok(None) };
        let id = self.checked_id(id)?;
        let dir = self.dir_of(id);
        self.groups.kill_all(&dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LocalError::io(format!("delete lease {id}"), e)),
        }
        match std::fs::remove_file(self.record_path(id)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LocalError::io(format!("delete lease record {id}"), e)),
        }
        tracing::info!(lease = %id, "destroyed lease");
        Ok(Some(Receipt { provider_lease_id: id.to_string(), state: ReceiptState::Destroyed }))
    }

    /// Release a lease according to `disposition` (see the module docs).
    pub fn release(&self, id: Option<&str>, disposition: Disposition) -> Result<Option<Receipt>> {
        match (disposition, id) {
            (Disposition::KeepRunning, _) => Ok(None),
            (Disposition::StopAndRetain, Some(id)) => self.stop(id).map(Some),
            _ => self.destroy(id),
        }
    }

    /// Delete every expired lease under the root; returns how many went. Errors are logged,
    /// never raised: the sweep is housekeeping.
    pub fn sweep_expired(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return 0 };
        let mut swept = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".lease.json")) else {
                continue;
            };
            if !is_valid_lease_id(id) {
                continue;
            }
            match self.read_record(id) {
                Ok(Some(rec)) if Self::is_expired(&rec) => match self.destroy(Some(id)) {
                    Ok(_) => swept += 1,
                    Err(e) => tracing::warn!(lease = %id, error = %e, "cannot sweep expired lease"),
                },
                _ => {}
            }
        }
        swept
    }
}

#[cfg(test)]
#[path = "leases_tests.rs"]
mod tests;
