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

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use paperclip_sandbox_sdk::kit::transfer::Direction;
use paperclip_sandbox_sdk::prelude::*;

pub mod config;
pub mod engine;
pub mod error;
pub mod exec;
pub mod lease;
pub mod sync;

use config::{ContainerConfig, Settings};
use engine::{Engine, EngineSlot};
pub use error::Error;
use exec::{ActiveExecs, ExecSpec};

/// The provider: the table of running commands (the engines are the configs' backends,
/// [`Host`]).
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
    active: ActiveExecs,
    /// Engine and user of every container with a running command (for shutdown).
    running: Mutex<HashMap<String, (Engine, String)>>,
}

impl ContainerProvider {
    /// A provider with no command running. The host profile it answers for (which decides
    /// whether `minimumTimeoutMs` is read) is the worker's, [`Context::profile`].
    pub fn new() -> Self {
        ContainerProvider::default()
    }

    fn forget(&self, container: &str) {
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(container);
    }

    fn remember(&self, container: &str, engine: &Engine, settings: &Settings) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.insert(container.to_owned(), (engine.without_deadline(), settings.user()));
    }
}

/// The backend of one config: its settings (every default applied) and its engine. The SDK
/// opens it with `connect` for the first call of a config, shares it with the later calls of
/// the same config and drops it when the host sends `configChanged`.
#[derive(Debug)]
pub struct Host {
    settings: Settings,
    engine: EngineSlot,
}

impl Host {
    /// The backend of `config`; nothing is connected yet ([`Host::engine`] connects).
    pub fn new(config: &ContainerConfig) -> Self {
        let settings = Settings::new(config);
        let engine = EngineSlot::new(settings.docker_host.clone());
        Host { settings, engine }
    }

    /// The settings of the config.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The engine, its requests bounded by the deadline of the call `cx` serves; connected
    /// (within that deadline) by the first call that needs it.
    pub async fn engine(&self, cx: &Context) -> Result<Engine, Error> {
        self.engine.get(cx.call_deadline()).await.map_err(Error::Unreachable)
    }
}

fn diagnostic(severity: DiagnosticSeverity, code: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(severity, message).with_code(code)
}

#[paperclip_sandbox_sdk::provider]
impl SandboxProvider for ContainerProvider {
    type Backend = Host;

    /// The backend of `config`: its settings and a not yet connected engine (connecting is
    /// left to the first call, within its deadline, so it never fails here).
    async fn connect(&self, config: &ContainerConfig) -> HookResult<Host> {
        Ok(Host::new(config))
    }

    async fn shutdown(&self, _params: ShutdownParams, cx: Context) -> HookResult<()> {
        let containers = self.active.containers();
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut killed = 0;
        for c in containers {
            let Some((engine, user)) = running.get(&c) else { continue };
            let engine = engine.with_deadline(cx.call_deadline());
            killed += self.active.kill_all(&engine, &c, user).await;
        }
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<ContainerConfig>,
    ) -> HookResult<ValidateConfigResult> {
        // The SDK answered a config that does not fit `ContainerConfig`; this one does.
        let _: &ContainerConfig = &params.config;
        Ok(ValidateConfigResult::valid())
    }

    async fn probe(
        &self,
        _params: ProbeParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> HookResult<ProbeResult> {
        let settings = host.settings();
        let engine = match host.engine.get(cx.call_deadline()).await {
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
            host.engine.forget().await;
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
        host: &Host,
        cx: Context,
    ) -> Result<AcquireLeaseResult, Error> {
        let engine = host.engine(&cx).await?;
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
        Ok(lease::acquire(&engine, host.settings(), &params, deadline).await?)
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<ResumeLeaseResult, Error> {
        let engine = host.engine(&cx).await?;
        Ok(lease::resume(&engine, host.settings(), &params).await?)
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<ReleaseLeaseResult, Error> {
        let engine = host.engine(&cx).await?;
        lease::release(&engine, host.settings(), &self.active, &params).await.map(Released::from)
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<DestroyLeaseResult, Error> {
        let engine = host.engine(&cx).await?;
        let receipt = lease::destroy(&engine, host.settings(), &params).await?;
        if let Some(id) = params.provider_lease_id.as_deref() {
            self.forget(id);
        }
        Ok(receipt.into())
    }

    async fn stop_lease(
        &self,
        params: StopLeaseParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<StopLeaseResult, Error> {
        // Stop takes the release params, whose lease id may be null: there is nothing to stop
        // and no receipt could name it.
        let id = params.required_lease_id()?;
        let engine = host.engine(&cx).await?;
        if params.cancel_active_work == Some(true) {
            self.active.kill_all(&engine, id, &host.settings().user()).await;
        }
        lease::stop_container(&engine, id).await
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<ContainerConfig>,
        host: &Host,
    ) -> Result<RealizeWorkspaceResult, Error> {
        params.lease.required_id()?;
        Ok(RealizeWorkspaceResult::new(host.settings().workspace.clone()))
    }

    async fn execute(
        &self,
        params: ExecuteParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<ExecuteResult, Error> {
        let engine = host.engine(&cx).await?;
        let settings = host.settings();
        let id = params.lease.required_id()?;
        if params.command.is_empty() {
            return Err(ProviderError::invalid_params("command must not be empty").into());
        }
        let mut env = lease::base_env(settings);
        for (k, v) in params.env.iter().flatten() {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return Err(ProviderError::invalid_params(
                    "env names must be non-empty, without '=' or NUL",
                )
                .into());
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
        self.remember(id, &engine, settings);
        let cancel = cx.cancellation().clone();
        let mut sink = &cx;
        let cancelled = async move { cancel.cancelled().await };
        let out = exec::run(&engine, id, spec, &self.active, &mut sink, cancelled).await?;
        Ok(out.into_execute_result())
    }

    async fn sync_in(
        &self,
        params: SyncInParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<SyncResult, Error> {
        self.sync(Direction::In, params, host, &cx).await
    }

    async fn sync_out(
        &self,
        params: SyncOutParams<ContainerConfig>,
        host: &Host,
        cx: Context,
    ) -> Result<SyncResult, Error> {
        self.sync(Direction::Out, params, host, &cx).await
    }
}

impl ContainerProvider {
    async fn sync(
        &self,
        direction: Direction,
        params: SyncParams<ContainerConfig>,
        host: &Host,
        cx: &Context,
    ) -> Result<SyncResult, Error> {
        let engine = host.engine(cx).await?;
        let settings = host.settings();
        let timeout_ms = paperclip_sandbox_sdk::kit::effective_sync_timeout_ms(
            &params,
            cx.profile(),
            settings.sync_timeout_ms,
        )?;
        let id = params.lease.required_id()?;
        self.remember(id, &engine, settings);
        let timeout = Duration::from_millis(timeout_ms);
        let operations = &params.operations;
        Ok(sync::sync(&engine, settings, id, &self.active, direction, operations, timeout).await?)
    }
}
