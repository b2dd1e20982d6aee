//! The local provider's hooks: the `#[provider]` block of [`LocalDriver`], where each
//! `environment*` method is written once, on the protocol's typed params and results, over the
//! core modules ([`crate::leases`], [`crate::exec`], [`crate::sync`], [`crate::duplex`]).
//!
//! What a call's config decides (the lease root, the sync timeout) is resolved once per config
//! by the SDK into a [`LocalBackend`] (`connect`), which the hooks that need it take as an
//! argument; no hook reads the config itself. One worker serves environments with different
//! roots. A hook returns [`LocalError`], which the SDK kit converts per method:
//!
//! | Error kind | Answer |
//! |---|---|
//! | [`ErrorKind::InvalidParams`] | `-32602 Invalid params: …` |
//! | any other kind, on `environmentSyncOut` (the SDK drops it on `environmentSyncIn`, as upstream) | `-32002` with the sync-error envelope (`errorCode` from the OS error, `ETIMEDOUT` for a timeout, `exitCode` and `transferFailureKind: command_failed` for a failed post-upload command, `transferStep: sandbox_guard` for a confinement refusal) |
//! | any other kind, on `environmentStopLease` | `-32002` with the stop-error envelope, reason `unrecoverable` |
//! | any other kind | `-32002` with the message |
//!
//! `shutdown` kills every command still running in any lease (and every duplex channel)
//! before the runtime exits. `prepareIdleSleep`'s drain check (`idle_drain`) reports
//! background work while a command still runs in any lease or a duplex channel's command runs.
//! `environmentExecute` streams output as `execute.log` (through its `Context`) and kills the
//! command's process group when the call is cancelled (for example by `shutdown`).
//!
//! The driver is generic over its config type ([`LocalSettings`]): [`LocalProvider`] is
//! `LocalDriver<LocalConfig>`, with the plugin manifest ([`LocalManifest`]), and a provider
//! wrapping it with a larger config (the bwrap provider) delegates its hooks to
//! `LocalDriver<ItsConfig>`, since a delegate serves the same config type as its wrapper.

use std::path::{Path, PathBuf};
use std::time::Duration;

use paperclip_sandbox_protocol::HostProfile;
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::ImplementedHooks;

pub use paperclip_sandbox_sdk::kit::{sync_diagnostic, sync_error};

use crate::config::{LocalConfig, LocalSettings};
use crate::duplex::DuplexChannels;
use crate::error::{ErrorKind, LocalError, Result};
use crate::exec::{self, ExecRequest, ProcessGroups};
use crate::leases::{self, Disposition, LeaseStore, ReceiptState};
use crate::sync::{self, Direction};

/// The local provider: [`LocalDriver`] with the local config. Its plugin manifest is
/// [`LocalManifest`]'s.
pub type LocalProvider = LocalDriver<LocalConfig>;

/// The local provider's plugin manifest, which [`LocalProvider`] answers with.
///
/// Derived ([`PluginManifest`]) and checked when the crate compiles: each capability declared
/// here needs hooks of [`LocalProvider`]'s `#[provider]` block (reusableLeases: resume, release
/// and destroy; the native sync pair: sync_in and sync_out; incrementalSessionOutput: execute;
/// duplexCommandStream: the duplex channel hooks). The config schema comes from
/// [`LocalConfig`]. `defaultAcquireTimeoutMs` is 60 s (creating a directory is quick) and is
/// left out of the paperclip-2026-09 manifest. The derive takes no generic type, and
/// [`LocalDriver`] is generic (so that the bwrap provider can delegate to it): hence a type of
/// its own.
#[derive(Debug, Clone, Copy, PluginManifest)]
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
pub struct LocalManifest;

/// The capability checks of [`LocalManifest`] run against [`LocalProvider`]'s hooks.
impl ImplementedHooks for LocalManifest {
    const METHODS: &'static [&'static str] = <LocalProvider as ImplementedHooks>::METHODS;
}

impl PluginManifest for LocalProvider {
    const PROFILE: HostProfile = <LocalManifest as PluginManifest>::PROFILE;

    fn manifest(profile: HostProfile) -> paperclip_sandbox_protocol::manifest::Manifest {
        LocalManifest::manifest(profile)
    }
}

/// The local provider's state for the config type `C`: stateless apart from the table of
/// running process groups and the duplex channels. Clones share them.
#[derive(Debug, Clone)]
pub struct LocalDriver<C> {
    groups: ProcessGroups,
    channels: DuplexChannels,
    config: std::marker::PhantomData<fn() -> C>,
}

impl<C: LocalSettings> Default for LocalDriver<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: LocalSettings> LocalDriver<C> {
    /// A driver with no running commands and no open channels. The host profile it answers
    /// for (which decides whether `minimumTimeoutMs` is read) is the worker's, read per call
    /// from the context.
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

    /// Records where lease `id` lives (from a call naming it: acquire, resume, realize,
    /// execute), so methods whose params carry no config (the duplex channels) can find it.
    pub fn remember_lease(&self, id: Option<&str>, local: &LocalBackend<C::Extra>) {
        if let Some(id) = id {
            self.channels.remember_lease(id, local.root());
        }
    }
}

/// What a call's config decides, resolved once per config by the SDK (`connect`): the lease
/// root (config `root`, else `$LOCAL_PROVIDER_ROOT`, else the user's private default), the sync
/// timeout, and the [`Extra`](LocalSettings::Extra) part of a wrapping provider's config.
#[derive(Debug, Clone)]
pub struct LocalBackend<X = ()> {
    root: PathBuf,
    sync_timeout_ms: u64,
    groups: ProcessGroups,
    extra: X,
}

impl<X> LocalBackend<X> {
    /// The lease root, as resolved from the config.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The config's `syncTimeoutMs`.
    pub fn sync_timeout_ms(&self) -> u64 {
        self.sync_timeout_ms
    }

    /// What a wrapping provider's config adds ([`LocalSettings::Extra`]).
    pub fn extra(&self) -> &X {
        &self.extra
    }

    /// The lease store at the root, opened for this call: created `0700` when missing, refused
    /// when it is not a private directory of this user ([`LeaseStore::open`]). Opened per call
    /// rather than once, so a root removed between calls is made again and one replaced by
    /// another user's directory or a link is refused.
    pub fn store(&self) -> Result<LeaseStore> {
        LeaseStore::open(&self.root, self.groups.clone())
    }
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

/// `environmentSyncIn` / `environmentSyncOut` from a host of `profile`, bounded by
/// max(`minimumTimeoutMs`, read from `paperclip-2026-11` hosts only, `syncTimeoutMs`).
async fn sync_lease<X>(
    direction: Direction,
    params: &SyncParams<impl Sized>,
    local: &LocalBackend<X>,
    profile: HostProfile,
) -> Result<SyncResult> {
    let timeout_ms = sync::effective_timeout_ms(params, profile, local.sync_timeout_ms())
        .map_err(|e| LocalError::invalid(e.to_string()))?;
    let dir = local.store()?.active_dir(params.lease.required_id()?)?;
    let ops = sync::operations_from_wire(&params.operations)?;
    let timeout = Duration::from_millis(timeout_ms);
    let results = sync::sync(direction, &dir, ops, timeout, &local.groups).await?;
    let results = results.into_iter().map(|r| {
        SyncOperationResult::new(r.operation_id, r.files_transferred, r.bytes_transferred)
    });
    Ok(SyncResult::new(results.collect()))
}

// Each hook names only what it uses: its params, the backend of its call's config (`local`),
// and a `Context` where it streams output, opens a channel or reads the host profile.
#[paperclip_sandbox_sdk::provider]
impl<C: LocalSettings> SandboxProvider for LocalDriver<C> {
    // Generic, so a wrapping provider with a larger config can delegate here.
    type Config = C;
    type Backend = LocalBackend<C::Extra>;

    async fn connect(&self, config: &C) -> Result<LocalBackend<C::Extra>> {
        Ok(LocalBackend {
            root: config.resolved_root(),
            sync_timeout_ms: config.sync_timeout_ms().get(),
            groups: self.groups.clone(),
            extra: config.extra(),
        })
    }

    async fn shutdown(&self, _: ShutdownParams) -> HookResult<()> {
        self.channels.close_all();
        let killed = self.groups.kill_everything();
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    /// The config parsed (the SDK answered a config that does not fit before this runs); the
    /// normalized config is the parsed one, every default explicit, other keys kept.
    async fn validate_config(
        &self,
        params: ValidateConfigParams<C>,
    ) -> HookResult<ValidateConfigResult> {
        Ok(match serde_json::to_value(&params.config) {
            Ok(serde_json::Value::Object(normalized)) => {
                ValidateConfigResult::valid().with_normalized_config(normalized)
            }
            _ => ValidateConfigResult::valid(),
        })
    }

    /// The root is writable and `sh` and `tar` are on the `PATH`.
    async fn probe(
        &self,
        _: ProbeParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<ProbeResult> {
        // A deliberate stray `println!`: it demonstrates the SDK's stdout guard. The runtime
        // points fd 1 at stderr, so this line reaches the host's stderr log, never the
        // protocol stream (the wire tests check that stdout stays pure).
        println!("local-provider: probe called (stdout guard demonstration: this goes to stderr)");
        let root = local.root().to_path_buf();
        let writable = blocking(move || Ok(root_writable(&root))).await?;
        let mut ok = true;
        let mut diagnostics = vec![match writable {
            Ok(()) => Diagnostic::new(DiagnosticSeverity::Info, "lease root is writable")
                .with_code("root_writable"),
            Err(why) => {
                ok = false;
                let message = format!("lease root is not usable: {why}");
                Diagnostic::new(DiagnosticSeverity::Error, message).with_code("root_not_writable")
            }
        }];
        for tool in ["sh", "tar"] {
            diagnostics.push(match find_on_path(tool) {
                Some(p) => {
                    let message = format!("{tool} found at {}", p.display());
                    Diagnostic::new(DiagnosticSeverity::Info, message)
                        .with_code(format!("{tool}_present"))
                }
                None => {
                    ok = false;
                    let message = format!("{tool} is not on the PATH");
                    Diagnostic::new(DiagnosticSeverity::Error, message)
                        .with_code(format!("{tool}_missing"))
                }
            });
        }
        let summary = if ok { "local provider ready" } else { "local provider is not usable" };
        let result = ProbeResult::new(ok).with_summary(summary);
        Ok(diagnostics.into_iter().fold(result, ProbeResult::with_diagnostic))
    }

    /// A fresh lease directory, bounded by `requestedExpiresAt`.
    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<AcquireLeaseResult> {
        let store = local.store()?;
        let requested = params.requested_expires_at;
        let lease =
            blocking(move || store.acquire(requested.as_deref())).await.map(to_wire_lease)?;
        self.remember_lease(lease.provider_lease_id.as_deref(), local);
        Ok(lease)
    }

    /// The lease, or `{providerLeaseId: null, metadata: {expired: true}}`.
    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<ResumeLeaseResult> {
        let store = local.store()?;
        let id = params.provider_lease_id;
        let lease = blocking(move || store.resume(&id)).await.map(to_wire_lease)?;
        self.remember_lease(lease.provider_lease_id.as_deref(), local);
        Ok(lease)
    }

    /// By `resourceDisposition` (default destroy).
    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<Released> {
        let store = local.store()?;
        let id = params.provider_lease_id;
        let d = disposition(params.resource_disposition.as_ref());
        let receipt = blocking(move || store.release(id.as_deref(), d)).await?;
        Ok(receipt.map(to_wire_receipt).into())
    }

    /// Idempotent; a missing lease is `destroyed`. Its duplex channels close first.
    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<Destroyed> {
        if let Some(id) = params.lease_id() {
            self.channels.close_lease(id);
        }
        let store = local.store()?;
        let id = params.provider_lease_id;
        let receipt = blocking(move || store.destroy(id.as_deref())).await?;
        Ok(receipt.map(to_wire_receipt).into())
    }

    /// End the lease's commands (and its duplex channels), keep its files.
    async fn stop_lease(
        &self,
        params: StopLeaseParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<StopLeaseResult> {
        if let Some(id) = params.lease_id() {
            self.channels.close_lease(id);
        }
        let store = local.store()?;
        // Stop takes the release params, whose lease id may be null: nothing to stop then,
        // and no receipt can name it.
        let id = params.required_lease_id()?.to_owned();
        blocking(move || store.stop(&id)).await.map(to_wire_receipt)
    }

    /// `{cwd}` of the lease's workspace directory.
    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<C>,
        local: &LocalBackend<C::Extra>,
    ) -> Result<RealizeWorkspaceResult> {
        self.remember_lease(params.lease.provider_lease_id.as_deref(), local);
        let store = local.store()?;
        let id = params.lease.required_id()?.to_owned();
        let remote = params.workspace.remote_path;
        let cwd = blocking(move || store.realize(&id, remote.as_deref())).await?;
        Ok(RealizeWorkspaceResult::new(cwd.display().to_string()))
    }

    /// Run the command ([`crate::exec`]); output streams as `execute.log` while it runs
    /// (waiting while the host does not read); cancelling the call ends its process group.
    async fn execute(
        &self,
        params: ExecuteParams<C>,
        local: &LocalBackend<C::Extra>,
        cx: Context,
    ) -> Result<ExecuteResult> {
        self.remember_lease(params.lease.provider_lease_id.as_deref(), local);
        let dir = local.store()?.active_dir(params.lease.required_id()?)?;
        let cancel = cx.cancellation().clone();
        let cancelled = async move { cancel.cancelled().await };
        let req = ExecRequest::from(&params);
        let out = exec::run(&dir, req, Some(&self.groups), &mut &cx, cancelled).await?;
        Ok(out.into_execute_result())
    }

    async fn sync_in(
        &self,
        params: SyncInParams<C>,
        local: &LocalBackend<C::Extra>,
        cx: Context,
    ) -> Result<SyncResult> {
        sync_lease(Direction::In, &params, local, cx.profile()).await
    }

    async fn sync_out(
        &self,
        params: SyncOutParams<C>,
        local: &LocalBackend<C::Extra>,
        cx: Context,
    ) -> Result<SyncResult> {
        sync_lease(Direction::Out, &params, local, cx.profile()).await
    }

    /// Background work is a command still running in any lease (a background child a
    /// finished command left, for example) or an open duplex channel whose command runs.
    async fn idle_drain(&self, _: PrepareIdleSleepParams) -> HookResult<BackgroundWork> {
        let running = paperclip_sandbox_sdk::process::live_groups().len();
        Ok(if running > 0 || self.channels.running_count() > 0 {
            BackgroundWork::Present
        } else {
            BackgroundWork::None
        })
    }

    async fn duplex_channel_open(
        &self,
        params: DuplexChannelOpenParams,
        cx: Context,
    ) -> Result<DuplexChannelOpenResult> {
        let session = DuplexChannels::new_session_id();
        let sender = cx.duplex_channel_sender(&params.host_route_id, &session);
        self.channels.open(&params, session, &self.groups, sender).await
    }

    async fn duplex_channel_write(&self, params: DuplexChannelWriteParams) -> Result<()> {
        self.channels.write(&params).await
    }

    async fn duplex_channel_stop(&self, params: DuplexChannelStopParams) -> Result<()> {
        self.channels.stop(&params)
    }

    async fn duplex_channel_close(
        &self,
        params: DuplexChannelCloseParams,
    ) -> HookResult<DuplexChannelCloseResult> {
        Ok(self.channels.close(&params))
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
