//! The provider's hooks on the protocol's typed params and results.
//!
//! [`LocalDriver`] turns each `environment*` call into the core modules ([`crate::leases`],
//! [`crate::exec`], [`crate::sync`]); the JSON-RPC glue (the SDK trait impl in
//! [`crate::worker`]) only forwards to it and maps [`LocalError`] to wire errors. Every call
//! resolves its own root from its `config`, so one worker serves environments with different
//! roots.
//!
//! The driver is generic over its config type ([`LocalSettings`]): [`LocalProvider`] is
//! `LocalDriver<LocalConfig>` with the plugin manifest, and a provider wrapping it with a
//! larger config (the bwrap provider) delegates its hooks to `LocalDriver<ItsConfig>`, since a
//! delegate serves the same config type as its wrapper.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use paperclip_sandbox_protocol::methods::execute::{ExecuteParams, ExecuteResult};
use paperclip_sandbox_protocol::methods::idle::BackgroundWork;
use paperclip_sandbox_protocol::methods::lease::{
    AcquireLeaseParams, Diagnostic, DiagnosticSeverity, Lease, ProbeParams, ProbeResult,
    ReleaseLeaseParams, ResourceDisposition, ResumeLeaseParams, StopLeaseParams,
    TerminationReceipt, ValidateConfigParams, ValidateConfigResult,
};
use paperclip_sandbox_protocol::methods::sync::{self as psync, SyncParams, SyncResult};
use paperclip_sandbox_protocol::methods::workspace::{
    RealizeWorkspaceParams, RealizeWorkspaceResult,
};
use paperclip_sandbox_protocol::HostProfile;
use paperclip_sandbox_sdk::PluginManifest;

use crate::config::{LocalConfig, LocalSettings};
use crate::duplex::DuplexChannels;
use crate::error::{ErrorKind, LocalError, Result};
use crate::exec::{self, ExecRequest, OutputSink, ProcessGroups};
use crate::leases::{self, Disposition, LeaseStore, ReceiptState};
use crate::sync::{self, Direction};

/// The local provider: [`LocalDriver`] with the local config, and its plugin manifest.
///
/// Its plugin manifest is derived ([`PluginManifest`]) and checked when the crate compiles:
/// each capability declared here needs hooks of the `#[provider]` block in [`crate::worker`]
/// (reusableLeases: resume, release and destroy; the native sync pair: sync_in and sync_out;
/// incrementalSessionOutput: execute). The config schema comes from [`LocalConfig`].
/// `defaultAcquireTimeoutMs` is 60 s (creating a directory is quick) and is left out of the
/// paperclip-2026-09 manifest.
#[derive(Debug, Clone, PluginManifest)]
#[plugin(
    id = "paperclip-sandbox.local-provider",
    display_name = "Local provider",
    description = "Example Paperclip sandbox provider: private directories on the local machine.",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "local",
    display_name = "Local directory",
    description = "Each lease is a private directory on the worker's machine.",
    config = LocalConfig,
    capabilities(
        reusableLeases,
        nativeSyncIn,
        nativeSyncOut,
        incrementalSessionOutput,
        duplexCommandStream
    ),
    default_acquire_timeout_ms = 60_000
)]
pub struct LocalProvider(LocalDriver<LocalConfig>);

impl LocalProvider {
    /// A provider. The host profile it answers for (which decides whether `minimumTimeoutMs`
    /// is read) is the worker's, read per call from the context.
    pub fn new() -> Self {
        Self(LocalDriver::new())
    }
}

impl Default for LocalProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for LocalProvider {
    type Target = LocalDriver<LocalConfig>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl AsRef<LocalDriver<LocalConfig>> for LocalProvider {
    fn as_ref(&self) -> &LocalDriver<LocalConfig> {
        &self.0
    }
}

/// The local provider's state and hooks for the config type `C`: stateless apart from the
/// table of running process groups and the duplex channels. Clones share them.
#[derive(Debug, Clone)]
pub struct LocalDriver<C> {
    groups: ProcessGroups,
    channels: DuplexChannels,
    config: std::marker::PhantomData<fn() -> C>,
}

fn store(config: &impl LocalSettings, groups: &ProcessGroups) -> Result<LeaseStore> {
    LeaseStore::open(&config.resolved_root(), groups.clone())
}

fn lease_id(lease: &Lease) -> Result<&str> {
    Ok(lease.required_id()?)
}

fn to_wire_lease(lease: leases::Lease) -> Lease {
    let Some(id) = lease.provider_lease_id else {
        return Lease::not_resumable(lease.metadata);
    };
    let out = Lease::new(id).with_metadata(lease.metadata);
    match lease.expires_at {
        Some(exp) => out.with_expires_at(exp),
        None => out,
    }
}

fn to_wire_receipt(r: leases::Receipt) -> TerminationReceipt {
    match r.state {
        ReceiptState::Stopped => TerminationReceipt::stopped(r.provider_lease_id),
        ReceiptState::Destroyed => TerminationReceipt::destroyed(r.provider_lease_id),
    }
}

fn disposition(d: Option<&ResourceDisposition>) -> Disposition {
    match d {
        Some(ResourceDisposition::StopAndRetain) => Disposition::StopAndRetain,
        Some(ResourceDisposition::KeepRunning) => Disposition::KeepRunning,
        _ => Disposition::Destroy,
    }
}

/// Run blocking filesystem work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| LocalError::new(ErrorKind::Io, format!("worker task failed: {e}")))?
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn root_writable(root: &Path) -> std::result::Result<(), String> {
    let store = LeaseStore::open(root, ProcessGroups::default()).map_err(|e| e.message)?;
    let probe = store.root().join(format!(".paperclip-upload-probe-{}", crate::random_hex(6)));
    std::fs::write(&probe, b"probe").map_err(|e| format!("cannot write in the root: {e}"))?;
    std::fs::remove_file(&probe).map_err(|e| format!("cannot clean up in the root: {e}"))
}

impl<C: LocalSettings> Default for LocalDriver<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: LocalSettings> LocalDriver<C> {
    /// A driver with no running commands and no open channels.
    pub fn new() -> Self {
        Self {
            groups: ProcessGroups::default(),
            channels: DuplexChannels::default(),
            config: std::marker::PhantomData,
        }
    }

    /// The open duplex channels.
    pub fn channels(&self) -> &DuplexChannels {
        &self.channels
    }

    /// The process groups of every lease.
    pub fn groups(&self) -> &ProcessGroups {
        &self.groups
    }

    /// Records where lease `id` lives (from the `config` of a call naming it: acquire,
    /// resume, realize, execute), so methods whose params carry no config (the duplex
    /// channels) can find it.
    pub fn remember_lease(&self, config: &C, id: Option<&str>) {
        if let Some(id) = id {
            self.channels.remember_lease(id, &config.resolved_root());
        }
    }

    /// Idle-sleep drain check: background work is a command still running in any lease
    /// (a background child a finished command left, for example) or an open duplex channel
    /// whose command runs.
    pub fn background_work(&self) -> BackgroundWork {
        let running = paperclip_sandbox_sdk::process::live_groups().len();
        if running > 0 || self.channels.running_count() > 0 {
            BackgroundWork::Present
        } else {
            BackgroundWork::None
        }
    }

    /// Worker shutdown: kill every command still running in any lease (their files stay).
    pub fn shutdown(&self) -> usize {
        self.channels.close_all();
        self.groups.kill_everything()
    }

    /// `environmentValidateConfig`: the config parsed (the SDK answered a config that does
    /// not fit before this runs); the normalized config is the parsed one, every default
    /// explicit, other keys kept.
    pub fn validate_config(&self, params: &ValidateConfigParams<C>) -> ValidateConfigResult {
        match serde_json::to_value(&params.config) {
            Ok(serde_json::Value::Object(normalized)) => {
                ValidateConfigResult::valid().with_normalized_config(normalized)
            }
            _ => ValidateConfigResult::valid(),
        }
    }

    /// `environmentProbe`: the root is writable and `sh` and `tar` are on the `PATH`.
    pub async fn probe(&self, params: &ProbeParams<C>) -> Result<ProbeResult> {
        let root = params.base.config.resolved_root();
        let writable = blocking({
            let root = root.clone();
            move || Ok(root_writable(&root))
        })
        .await?;
        let mut diagnostics = Vec::new();
        let mut ok = true;
        match writable {
            Ok(()) => diagnostics.push(
                Diagnostic::new(DiagnosticSeverity::Info, "lease root is writable")
                    .with_code("root_writable"),
            ),
            Err(why) => {
                ok = false;
                diagnostics.push(
                    Diagnostic::new(
                        DiagnosticSeverity::Error,
                        format!("lease root is not usable: {why}"),
                    )
                    .with_code("root_not_writable"),
                );
            }
        }
        for tool in ["sh", "tar"] {
            match find_on_path(tool) {
                Some(p) => diagnostics.push(
                    Diagnostic::new(
                        DiagnosticSeverity::Info,
                        format!("{tool} found at {}", p.display()),
                    )
                    .with_code(format!("{tool}_present")),
                ),
                None => {
                    ok = false;
                    diagnostics.push(
                        Diagnostic::new(
                            DiagnosticSeverity::Error,
                            format!("{tool} is not on the PATH"),
                        )
                        .with_code(format!("{tool}_missing")),
                    );
                }
            }
        }
        let summary = if ok { "local provider ready" } else { "local provider is not usable" };
        let mut result = ProbeResult::new(ok).with_summary(summary);
        for d in diagnostics {
            result = result.with_diagnostic(d);
        }
        Ok(result)
    }

    /// `environmentAcquireLease`: a fresh lease directory, bounded by `requestedExpiresAt`.
    pub async fn acquire(&self, params: &AcquireLeaseParams<C>) -> Result<Lease> {
        let store = store(&params.base.config, &self.groups)?;
        let requested = params.requested_expires_at.clone();
        let lease =
            blocking(move || store.acquire(requested.as_deref())).await.map(to_wire_lease)?;
        self.remember_lease(&params.base.config, lease.provider_lease_id.as_deref());
        Ok(lease)
    }

    /// `environmentResumeLease`: the lease, or `{providerLeaseId: null, metadata: {expired: true}}`.
    pub async fn resume(&self, params: &ResumeLeaseParams<C>) -> Result<Lease> {
        let store = store(&params.base.config, &self.groups)?;
        let id = params.provider_lease_id.clone();
        let lease = blocking(move || store.resume(&id)).await.map(to_wire_lease)?;
        self.remember_lease(&params.base.config, lease.provider_lease_id.as_deref());
        Ok(lease)
    }

    /// `environmentReleaseLease`: by `resourceDisposition` (default destroy).
    pub async fn release(
        &self,
        params: &ReleaseLeaseParams<C>,
    ) -> Result<Option<TerminationReceipt>> {
        let store = store(&params.base.config, &self.groups)?;
        let id = params.provider_lease_id.clone();
        let d = disposition(params.resource_disposition.as_ref());
        blocking(move || store.release(id.as_deref(), d)).await.map(|r| r.map(to_wire_receipt))
    }

    /// `environmentDestroyLease`: idempotent; a missing lease is `destroyed`.
    pub async fn destroy(
        &self,
        params: &ReleaseLeaseParams<C>,
    ) -> Result<Option<TerminationReceipt>> {
        let store = store(&params.base.config, &self.groups)?;
        let id = params.provider_lease_id.clone();
        blocking(move || store.destroy(id.as_deref())).await.map(|r| r.map(to_wire_receipt))
    }

    /// `environmentStopLease`: end the lease's commands, keep its files.
    pub async fn stop(&self, params: &StopLeaseParams<C>) -> Result<TerminationReceipt> {
        let store = store(&params.base.config, &self.groups)?;
        // Stop takes the release params, whose lease id may be null: nothing to stop then,
        // and no receipt can name it.
        let id = params.required_lease_id()?.to_owned();
        blocking(move || store.stop(&id)).await.map(to_wire_receipt)
    }

    /// `environmentRealizeWorkspace`: `{cwd}` of the lease's workspace directory.
    pub async fn realize(
        &self,
        params: &RealizeWorkspaceParams<C>,
    ) -> Result<RealizeWorkspaceResult> {
        self.remember_lease(&params.base.config, params.lease.provider_lease_id.as_deref());
        let store = store(&params.base.config, &self.groups)?;
        let id = lease_id(&params.lease)?.to_string();
        let remote = params.workspace.remote_path.clone();
        let cwd = blocking(move || store.realize(&id, remote.as_deref())).await?;
        Ok(RealizeWorkspaceResult::new(cwd.display().to_string()))
    }

    /// `environmentExecute`: run the command; `sink` receives output as it arrives (a
    /// [`Context`](paperclip_sandbox_sdk::Context) streams it as `execute.log`, waiting while
    /// the host does not read); `cancel` ends the command's process group.
    pub async fn execute(
        &self,
        params: &ExecuteParams<C>,
        sink: &mut impl OutputSink,
        cancel: impl Future<Output = ()>,
    ) -> Result<ExecuteResult> {
        self.remember_lease(&params.base.config, params.lease.provider_lease_id.as_deref());
        let store = store(&params.base.config, &self.groups)?;
        let dir = store.active_dir(lease_id(&params.lease)?)?;
        let req = ExecRequest {
            command: params.command.clone(),
            args: params.args().to_vec(),
            cwd: params.cwd.as_ref().map(PathBuf::from),
            env: params.env.clone().unwrap_or_default(),
            stdin: params.stdin.as_ref().map(|s| s.clone().into_bytes()),
            timeout: params.timeout(),
        };
        let out = exec::run(&dir, req, Some(&self.groups), sink, cancel).await?;
        Ok(out.into_execute_result())
    }

    /// `environmentSyncIn` / `environmentSyncOut` from a host of `profile`, bounded by
    /// max(`minimumTimeoutMs`, read from `paperclip-2026-11` hosts only, `syncTimeoutMs`).
    pub async fn sync(
        &self,
        direction: Direction,
        params: &SyncParams<C>,
        profile: HostProfile,
    ) -> Result<SyncResult> {
        let cfg = &params.base.config;
        let timeout_ms = sync::effective_timeout_ms(params, profile, cfg.sync_timeout_ms().get())
            .map_err(|e| LocalError::invalid(e.to_string()))?;
        let store = LeaseStore::open(&cfg.resolved_root(), self.groups.clone())?;
        let dir = store.active_dir(lease_id(&params.lease)?)?;
        let ops = sync::operations_from_wire(&params.operations)?;
        let results =
            sync::sync(direction, &dir, ops, Duration::from_millis(timeout_ms), &self.groups)
                .await?;
        Ok(SyncResult::new(
            results
                .into_iter()
                .map(|r| {
                    psync::SyncOperationResult::new(
                        r.operation_id,
                        r.files_transferred,
                        r.bytes_transferred,
                    )
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
