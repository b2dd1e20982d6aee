//! Example Paperclip sandbox provider: each lease is a least-privilege container on a
//! Docker-API engine (Docker, or podman's compatible service), driven through the Engine API
//! with [`bollard`] — no CLI is ever run.
//!
//! | Module | Role |
//! |---|---|
//! | [`config`] | the typed provider config (`image`, `dockerHost`, limits…) and its defaults |
//! | [`engine`] | the Engine API: connections, containers, labels, typed engine errors |
//! | [`lease`] | acquire / resume / release / stop / destroy / orphan sweep |
//! | [`exec`] | one command: stdin, streamed output, timeouts that kill the process group |
//! | [`sync`] | native syncIn / syncOut through the archive API |
//!
//! # Isolation
//!
//! A lease container runs as a non-root user (`1000:1000` by default; `0` is refused), with
//! every capability dropped, `no-new-privileges`, a read-only root file system, no network
//! (`network: none` by default; `host` is refused), memory, CPU and process limits, and no
//! host path mounted: the workspace and home directories and `/run` are anonymous engine
//! volumes, `/tmp` a tmpfs.
//!
//! # Capabilities
//!
//! `reusableLeases` (release stops, resume starts), `nativeSyncIn` / `nativeSyncOut`,
//! `independentControlCommands` (every command is its own exec: a control command runs beside
//! a long one) and `incrementalSessionOutput` (output is streamed as `execute.log` while the
//! command runs). No persistent process session is offered: each command is one-shot.

use std::time::Duration;

use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::envelope::StopErrorReason;
use paperclip_sandbox_sdk::protocol::HostProfile;

pub mod config;
pub mod engine;
pub mod exec;
pub mod lease;
pub mod sync;

use config::{ContainerConfig, Settings};
use engine::{Engine, Engines};
use exec::{ActiveExecs, ExecSpec};
use paperclip_sandbox_sdk::kit::transfer::Direction;

/// The provider: engine connections and the table of running commands.
///
/// Its manifest is derived and checked against the hooks of the `#[provider]` block when the
/// crate compiles. `defaultAcquireTimeoutMs` is 180 s (a cold engine may need to set up
/// storage), left out of the paperclip-2026-09 manifest.
#[derive(Debug, Default, PluginManifest)]
#[plugin(
    id = "paperclip-sandbox.container-provider",
    display_name = "Container provider",
    description = "Example Paperclip sandbox provider: least-privilege containers on a Docker-API engine.",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "container",
    display_name = "Container (Docker API)",
    description = "Each lease is a least-privilege container on a Docker or podman engine.",
    config = ContainerConfig,
    capabilities(
        reusableLeases,
        nativeSyncIn,
        nativeSyncOut,
        independentControlCommands,
        incrementalSessionOutput
    ),
    default_acquire_timeout_ms = 180_000
)]
pub struct ContainerProvider {
    engines: Engines,
    active: ActiveExecs,
    profile: Option<HostProfile>,
    /// Engine address and user of every container with a running command (for shutdown).
    hosts: std::sync::Mutex<std::collections::HashMap<String, (String, String)>>,
}

impl ContainerProvider {
    /// A provider answering as the host `profile` expects (it decides whether
    /// `minimumTimeoutMs` is read).
    pub fn new(profile: HostProfile) -> Self {
        ContainerProvider { profile: Some(profile), ..ContainerProvider::default() }
    }

    fn profile(&self) -> HostProfile {
        self.profile.unwrap_or(HostProfile::Paperclip2026_11)
    }

    /// The engine of `config`, its requests bounded by `cx`'s deadline.
    async fn connect(
        &self,
        config: &ContainerConfig,
        cx: &Context,
    ) -> Result<(Engine, Settings), ProviderError> {
        let settings = Settings::new(config);
        let engine =
            self.engines.get(&settings.docker_host, cx.call_deadline()).await.map_err(|e| {
                ProviderError::worker(format!("The container engine is not reachable: {e}"))
            })?;
        Ok((engine, settings))
    }

    fn forget(&self, container: &str) {
        self.hosts.lock().unwrap_or_else(|p| p.into_inner()).remove(container);
    }

    fn remember(&self, container: &str, settings: &Settings) {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        hosts.insert(container.to_owned(), (settings.docker_host.clone(), settings.user()));
    }
}

fn lease_id(lease: &Lease) -> Result<&str, ProviderError> {
    lease
        .provider_lease_id
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ProviderError::invalid_params("lease.providerLeaseId is required"))
}

fn diagnostic(severity: DiagnosticSeverity, code: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(severity, message).with_code(code)
}

#[paperclip_sandbox_sdk::provider]
impl SandboxProvider for ContainerProvider {
    async fn shutdown(&self, _params: ShutdownParams, cx: Context) -> HookResult<()> {
        let containers = self.active.containers();
        let hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut killed = 0;
        for c in containers {
            let Some((host, user)) = hosts.get(&c) else { continue };
            if let Ok(engine) = self.engines.get(host, cx.call_deadline()).await {
                killed += self.active.kill_all(&engine, &c, user).await;
            }
        }
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<ContainerConfig>,
        _cx: Context,
    ) -> HookResult<ValidateConfigResult> {
        // The SDK answered a config that does not fit `ContainerConfig`; this one does.
        let _: &ContainerConfig = &params.config;
        Ok(ValidateConfigResult::valid())
    }

    async fn probe(
        &self,
        params: ProbeParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<ProbeResult> {
        let settings = Settings::new(&params.base.config);
        let engine = match self.engines.get(&settings.docker_host, cx.call_deadline()).await {
            Ok(e) => e,
            Err(e) => {
                return Ok(ProbeResult::new(false)
                    .with_summary("The container engine is not reachable")
                    .with_diagnostic(diagnostic(
                        DiagnosticSeverity::Error,
                        "engine_unreachable",
                        e.to_string(),
                    )))
            }
        };
        if let Err(e) = engine.ping().await {
            self.engines.forget(&settings.docker_host).await;
            return Ok(ProbeResult::new(false)
                .with_summary("The container engine does not answer")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Error,
                    "engine_unreachable",
                    e.to_string(),
                )));
        }
        Ok(match engine.image_present(&settings.image).await {
            Ok(true) => ProbeResult::new(true)
                .with_summary("The engine answers and the image is present")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Info,
                    "engine_ready",
                    "the engine answers",
                ))
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Info,
                    "image_present",
                    "the configured image is present",
                )),
            Ok(false) => ProbeResult::new(false)
                .with_summary("The configured image is not present in the engine")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Error,
                    "image_missing",
                    "the configured image is not present; build or pull it first",
                )),
            Err(e) => ProbeResult::new(false)
                .with_summary("The image could not be checked")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Error,
                    "image_unknown",
                    e.to_string(),
                )),
        })
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        // Sweep this environment's orphans in the background; it never delays the acquisition.
        let sweeper = engine.without_deadline();
        let (company, environment) =
            (params.base.company_id.clone(), params.base.environment_id.clone());
        tokio::spawn(async move {
            match lease::sweep(&sweeper, &company, &environment).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "orphan sweep"),
                Err(e) => tracing::warn!(error = %e, "orphan sweep failed"),
            }
        });
        let deadline = cx.deadline().map(tokio::time::Instant::from_std);
        lease::acquire(&engine, &settings, &params, deadline).await
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<ResumeLeaseResult> {
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        lease::resume(&engine, &settings, &params).await
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<ReleaseLeaseResult> {
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        lease::release(&engine, &settings, &self.active, &params).await.map(Released::from)
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<DestroyLeaseResult> {
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        let receipt = lease::destroy(&engine, &settings, &params).await?;
        if let Some(id) = params.provider_lease_id.as_deref() {
            self.forget(id);
        }
        Ok(receipt.into())
    }

    async fn stop_lease(
        &self,
        params: StopLeaseParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<StopLeaseResult> {
        // Stop takes the release params, whose lease id may be null: there is nothing to stop
        // and no receipt could name it.
        let Some(id) = params.provider_lease_id.as_deref().filter(|id| !id.is_empty()) else {
            return Err(ProviderError::invalid_params(
                "providerLeaseId is required to stop a lease",
            ));
        };
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        if params.cancel_active_work == Some(true) {
            self.active.kill_all(&engine, id, &settings.user()).await;
        }
        lease::stop_container(&engine, id)
            .await
            .map_err(|e| ProviderError::stop(e.message(), StopErrorReason::Unrecoverable))
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<ContainerConfig>,
        _cx: Context,
    ) -> HookResult<RealizeWorkspaceResult> {
        let settings = Settings::new(&params.base.config);
        lease_id(&params.lease)?;
        Ok(RealizeWorkspaceResult::new(settings.workspace))
    }

    async fn execute(
        &self,
        params: ExecuteParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<ExecuteResult> {
        let (engine, settings) = self.connect(&params.base.config, &cx).await?;
        let id = lease_id(&params.lease)?.to_owned();
        if params.command.is_empty() {
            return Err(ProviderError::invalid_params("command must not be empty"));
        }
        let mut env = lease::base_env(&settings);
        for (k, v) in params.env.iter().flatten() {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return Err(ProviderError::invalid_params(
                    "env names must be non-empty, without '=' or NUL",
                ));
            }
            env.push(format!("{k}={v}"));
        }
        let mut argv = vec![params.command.clone()];
        argv.extend(params.args.iter().flatten().cloned());
        let spec = ExecSpec {
            argv,
            env,
            cwd: Some(params.cwd.clone().unwrap_or_else(|| settings.workspace.clone())),
            user: settings.user(),
            stdin: params.stdin.as_ref().map(|s| s.clone().into_bytes()),
            timeout: params.timeout(),
        };
        self.remember(&id, &settings);
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        let cancelled = async move { cancel.cancelled().await };
        let out = exec::run(&engine, &id, spec, &self.active, &mut sink, cancelled).await.map_err(
            |e| {
                if e.is_not_found() || e.status == Some(409) {
                    ProviderError::worker("The lease container does not exist or is not running")
                } else if e.is_unreachable() {
                    ProviderError::worker(format!("The container engine is not reachable: {e}"))
                } else {
                    ProviderError::worker(format!("Running the command failed: {e}"))
                }
            },
        )?;
        Ok(out.into_execute_result())
    }

    async fn sync_in(
        &self,
        params: SyncInParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<SyncResult> {
        self.sync(Direction::In, params, &cx).await
    }

    async fn sync_out(
        &self,
        params: SyncOutParams<ContainerConfig>,
        cx: Context,
    ) -> HookResult<SyncResult> {
        self.sync(Direction::Out, params, &cx).await
    }
}

impl ContainerProvider {
    async fn sync(
        &self,
        direction: Direction,
        params: SyncParams<ContainerConfig>,
        cx: &Context,
    ) -> HookResult<SyncResult> {
        let (engine, settings) = self.connect(&params.base.config, cx).await?;
        let timeout_ms = paperclip_sandbox_sdk::kit::effective_sync_timeout_ms(
            &params,
            self.profile(),
            settings.sync_timeout_ms,
        )
        .map_err(|e| ProviderError::invalid_params(e.to_string()))?;
        let id = lease_id(&params.lease)?.to_owned();
        self.remember(&id, &settings);
        sync::sync(
            &engine,
            &settings,
            &id,
            &self.active,
            direction,
            &params.operations,
            Duration::from_millis(timeout_ms),
        )
        .await
        .map_err(paperclip_sandbox_sdk::kit::sync_error)
    }
}
