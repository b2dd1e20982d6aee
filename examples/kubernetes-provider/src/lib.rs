//! Example Paperclip sandbox provider: each lease is a Pod (or a Job's Pod) on a Kubernetes
//! cluster, driven through the API server with [`kube`] (kube-rs) — no `kubectl` is ever run.
//!
//! | Module | Role |
//! |---|---|
//! | [`config`] | the typed provider config (`namespace`, `backend`, `image`, limits…) |
//! | [`cluster`] | the API server: connections, Pod and Job calls, typed errors |
//! | [`names`] | lease ids, object names, ownership labels and annotations |
//! | [`spec`] | the least-privilege Pod and Job manifests |
//! | [`lease`] | acquire / resume / release / destroy / orphan sweep |
//! | [`exec`] | one command over the exec subresource: stdin, streamed output, timeouts |
//! | [`sync`] | native syncIn / syncOut: tar over exec |
//!
//! # Isolation
//!
//! A lease Pod runs as a non-root user (`1000:1000` by default; `0` is refused) with every
//! capability dropped, no privilege escalation, a read-only root file system, no
//! service-account token, CPU and memory limits and `activeDeadlineSeconds`; the workspace,
//! home and `/tmp` are `emptyDir` volumes, no host path is mounted. What the Pod can reach on
//! the network is the cluster's business (NetworkPolicies); `.ci/kubernetes` connects Pods to
//! nothing.
//!
//! # Capabilities
//!
//! `reusableLeases` (a reusable lease keeps its Pod running on release; resume returns it
//! while it runs), `nativeSyncIn` / `nativeSyncOut` (tar over exec), `independentControlCommands`
//! (every command is its own exec) and `incrementalSessionOutput`. No `environmentStopLease`:
//! a Pod has no stopped state that keeps its files.
//!
//! # The Job backend
//!
//! With `backend: "job"` each lease is a `batch/v1` Job of one Pod (never retried); commands
//! run in that Pod through exec as with the Pod backend. The lease metadata says
//! `backend: "job"`, which makes the host narrow `nativeSyncIn` and `nativeSyncOut` off for the
//! lease (it then moves files with commands). A Job lease cannot be resumed once its Pod
//! ended, cannot be stopped and kept, and its Pod is named by the Job controller (the lease
//! metadata's `podName`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use paperclip_sandbox_sdk::kit::{self, transfer::Direction};
use paperclip_sandbox_sdk::prelude::*;
use paperclip_sandbox_sdk::protocol::methods::CarriesConfig;

pub mod cluster;
pub mod config;
pub mod error;
pub mod exec;
pub mod lease;
pub mod names;
pub mod spec;
pub mod sync;

use cluster::{Cluster, ClusterResult};
use config::{KubernetesConfig, Settings};
pub use error::Error;
use exec::{ActiveExecs, ExecSpec, Target};
use names::LeaseRef;

/// The provider: the table of running commands (the API server connections are the configs'
/// backends, [`Kube`]).
#[derive(Debug, Default, PluginManifest)]
#[plugin(
    id = "paperclip-sandbox.kubernetes-provider",
    display_name = "Kubernetes provider",
    description = "Example Paperclip sandbox provider: least-privilege Pods (or Jobs) on a Kubernetes cluster.",
    author = "paperclip-sandbox developers"
)]
#[driver(
    key = "kubernetes",
    display_name = "Kubernetes (Pods or Jobs)",
    description = "Each lease is a least-privilege Pod, or a Job's Pod, on a Kubernetes cluster.",
    config = KubernetesConfig,
    capabilities(
        reusableLeases,
        nativeSyncIn,
        nativeSyncOut,
        independentControlCommands,
        incrementalSessionOutput
    ),
    default_acquire_timeout_ms = 180_000
)]
pub struct KubernetesProvider {
    active: ActiveExecs,
    /// Where every lease with a running command lives (for shutdown).
    running: Mutex<HashMap<String, PodAddress>>,
}

/// A Pod and the cluster it is on: connection, namespace, name.
type PodAddress = (Cluster, String, String);

impl KubernetesProvider {
    /// A provider with no command running. The host profile it answers for (which decides
    /// whether `minimumTimeoutMs` is read) is the worker's, [`Context::profile`].
    pub fn new() -> Self {
        KubernetesProvider::default()
    }

    /// The Pod running the lease's commands.
    async fn pod_of(&self, kube: &Kube, lease: &Lease) -> Result<String, ProviderError> {
        let lease_ref = LeaseRef::parse(lease.required_id()?).ok_or_else(|| {
            ProviderError::invalid_params(
                "lease.providerLeaseId is not a lease id of this provider",
            )
        })?;
        if lease_ref.backend == config::Backend::Pod {
            return Ok(lease_ref.object_name());
        }
        if let Some(pod) =
            lease.metadata.as_ref().and_then(|m| m.get("podName")).and_then(Value::as_str)
        {
            if pod.starts_with(&lease_ref.object_name()) {
                return Ok(pod.to_owned());
            }
        }
        match lease::lease_pod(&kube.cluster, &kube.settings.namespace, &lease_ref).await {
            Ok(Some(p)) => Ok(p.metadata.name.unwrap_or_default()),
            Ok(None) => {
                Err(ProviderError::worker("The lease Pod does not exist or is not running"))
            }
            Err(e) => Err(ProviderError::worker(format!("Finding the lease Pod failed: {e}"))),
        }
    }

    fn remember(&self, pod: &str, kube: &Kube) {
        let namespace = &kube.settings.namespace;
        let mut map = self.running.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(
            format!("{namespace}/{pod}"),
            (kube.cluster.clone(), namespace.clone(), pod.to_owned()),
        );
    }

    async fn cancel_work(&self, kube: &Kube, id: &str) -> usize {
        let Some(lease_ref) = LeaseRef::parse(id) else { return 0 };
        let (cluster, namespace) = (&kube.cluster, &kube.settings.namespace);
        let pod = match lease_ref.backend {
            config::Backend::Pod => lease_ref.object_name(),
            config::Backend::Job => match lease::lease_pod(cluster, namespace, &lease_ref).await {
                Ok(Some(p)) => p.metadata.name.unwrap_or_default(),
                _ => return 0,
            },
        };
        self.active.kill_all(Target { cluster, namespace, pod: &pod }).await
    }
}

/// The backend of one config: its settings (every default applied) and its API server
/// connection. The SDK opens it with `connect` for the first call of a config, shares it with
/// the later calls of the same config and drops it when the host sends `configChanged`.
#[derive(Debug)]
pub struct Kube {
    cluster: Cluster,
    settings: Settings,
}

impl Kube {
    /// Connects with the config's kubeconfig (or as kube infers without one).
    pub async fn open(config: &KubernetesConfig) -> ClusterResult<Kube> {
        let settings = Settings::new(config);
        let cluster = Cluster::connect(settings.kubeconfig.as_deref()).await?;
        Ok(Kube { cluster, settings })
    }

    /// The connection.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// The settings of the config.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

fn diagnostic(severity: DiagnosticSeverity, code: &str, message: impl Into<String>) -> Diagnostic {
    Diagnostic::new(severity, message).with_code(code)
}

#[paperclip_sandbox_sdk::provider]
impl SandboxProvider for KubernetesProvider {
    type Backend = Kube;

    /// The connection of `config`.
    async fn connect(&self, config: &KubernetesConfig) -> Result<Kube, Error> {
        Kube::open(config).await.map_err(Error::Unreachable)
    }

    async fn shutdown(&self, _params: ShutdownParams) -> HookResult<()> {
        let running: Vec<_> =
            self.running.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect();
        let mut killed = 0;
        for (cluster, namespace, pod) in running {
            killed += self
                .active
                .kill_all(Target { cluster: &cluster, namespace: &namespace, pod: &pod })
                .await;
        }
        tracing::info!(killed, "shutdown: ended the commands still running");
        Ok(())
    }

    async fn validate_config(
        &self,
        params: ValidateConfigParams<KubernetesConfig>,
    ) -> HookResult<ValidateConfigResult> {
        // The SDK answered a config that does not fit `KubernetesConfig`; this one does.
        let _: &KubernetesConfig = &params.config;
        Ok(ValidateConfigResult::valid())
    }

    async fn probe(&self, params: ProbeParams<KubernetesConfig>) -> HookResult<ProbeResult> {
        let unreachable = |e: String| {
            ProbeResult::new(false)
                .with_summary("The Kubernetes API server is not reachable")
                .with_diagnostic(diagnostic(DiagnosticSeverity::Error, "api_unreachable", e))
        };
        // A config whose connection cannot be opened (no kubeconfig, an unusable one) is the
        // probe's finding, not its error: the probe opens the connection itself rather than
        // taking the cached backend.
        let kube = match Kube::open(params.config()).await {
            Ok(kube) => kube,
            Err(e) => return Ok(unreachable(e.to_string())),
        };
        let (cluster, settings) = (&kube.cluster, &kube.settings);
        let version = match cluster.version().await {
            Ok(v) => v,
            Err(e) => return Ok(unreachable(e.to_string())),
        };
        Ok(match cluster.namespace_exists(&settings.namespace).await {
            Ok(true) => ProbeResult::new(true)
                .with_summary("The API server answers and the namespace exists")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Info,
                    "api_ready",
                    format!("the API server answers (Kubernetes {version})"),
                )),
            Ok(false) => ProbeResult::new(false)
                .with_summary("The configured namespace does not exist")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Error,
                    "namespace_missing",
                    "the configured namespace does not exist; create it first",
                )),
            Err(e) => ProbeResult::new(false)
                .with_summary("The namespace could not be checked")
                .with_diagnostic(diagnostic(
                    DiagnosticSeverity::Error,
                    "namespace_unknown",
                    e.to_string(),
                )),
        })
    }

    async fn acquire_lease(
        &self,
        params: AcquireLeaseParams<KubernetesConfig>,
        kube: &Kube,
        cx: Context,
    ) -> HookResult<AcquireLeaseResult> {
        // Sweep this environment's ended leases in the background; it never delays the acquisition.
        let (sweeper, namespace) = (kube.cluster.clone(), kube.settings.namespace.clone());
        let (company, environment) =
            (params.base.company_id.clone(), params.base.environment_id.clone());
        tokio::spawn(async move {
            match lease::sweep(&sweeper, &namespace, &company, &environment).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "orphan sweep"),
                Err(e) => tracing::warn!(error = %e, "orphan sweep failed"),
            }
        });
        let deadline = cx.deadline().map(tokio::time::Instant::from_std);
        lease::acquire(&kube.cluster, &kube.settings, &params, deadline).await
    }

    async fn resume_lease(
        &self,
        params: ResumeLeaseParams<KubernetesConfig>,
        kube: &Kube,
    ) -> HookResult<ResumeLeaseResult> {
        lease::resume(&kube.cluster, &kube.settings, &params).await
    }

    async fn release_lease(
        &self,
        params: ReleaseLeaseParams<KubernetesConfig>,
        kube: &Kube,
    ) -> HookResult<ReleaseLeaseResult> {
        let Some(id) = params.provider_lease_id.clone() else {
            return Ok(Released::from(None));
        };
        let keeps = lease::release_keeps(&params)?;
        if params.cancel_active_work.unwrap_or(false) {
            let killed = self.cancel_work(kube, &id).await;
            tracing::info!(lease = %id, killed, "active work cancelled before release");
        }
        if keeps {
            return Ok(Released::from(None));
        }
        lease::destroy(&kube.cluster, &kube.settings, &params).await.map(Released::from)
    }

    async fn destroy_lease(
        &self,
        params: DestroyLeaseParams<KubernetesConfig>,
        kube: &Kube,
    ) -> HookResult<DestroyLeaseResult> {
        // Deleting the Pod ends its commands; no separate kill first.
        Ok(lease::destroy(&kube.cluster, &kube.settings, &params).await?.into())
    }

    async fn realize_workspace(
        &self,
        params: RealizeWorkspaceParams<KubernetesConfig>,
        kube: &Kube,
    ) -> HookResult<RealizeWorkspaceResult> {
        params.lease.required_id()?;
        Ok(RealizeWorkspaceResult::new(kube.settings.workspace.clone()))
    }

    async fn execute(
        &self,
        params: ExecuteParams<KubernetesConfig>,
        kube: &Kube,
        cx: Context,
    ) -> Result<ExecuteResult, Error> {
        let settings = &kube.settings;
        let pod = self.pod_of(kube, &params.lease).await?;
        if params.command.is_empty() {
            return Err(ProviderError::invalid_params("command must not be empty").into());
        }
        let mut env = spec::base_env(settings);
        for (k, v) in params.env.iter().flatten() {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return Err(ProviderError::invalid_params(
                    "env names must be non-empty, without '=' or NUL",
                )
                .into());
            }
            env.push((k.clone(), v.clone()));
        }
        let mut argv = vec![params.command.clone()];
        argv.extend(params.args.iter().flatten().cloned());
        let spec = ExecSpec {
            argv,
            env,
            cwd: params.cwd.clone().unwrap_or_else(|| settings.workspace.clone()),
            stdin: params.stdin.as_ref().map(|s| exec::Stdin::bytes(s.clone().into_bytes())),
            timeout: params.timeout(),
        };
        self.remember(&pod, kube);
        let cancel = cx.cancellation().clone();
        let target = Target { cluster: &kube.cluster, namespace: &settings.namespace, pod: &pod };
        let cancelled = async move { cancel.cancelled().await };
        let out = exec::run(target, spec, &self.active, &cx, cancelled).await?;
        // Killed at a timeout: no exit code; killed for a cancellation: SIGKILL.
        let (code, signal) = match (out.raw.timed_out, out.raw.exit_code) {
            (true, _) => (None, None),
            (false, Some(code)) => (Some(code), None),
            (false, None) => (None, Some("SIGKILL".to_owned())),
        };
        Ok(out.output.into_execute_result(code, signal))
    }

    async fn sync_in(
        &self,
        params: SyncInParams<KubernetesConfig>,
        kube: &Kube,
        cx: Context,
    ) -> Result<SyncResult, Error> {
        self.sync(Direction::In, params, kube, &cx).await
    }

    async fn sync_out(
        &self,
        params: SyncOutParams<KubernetesConfig>,
        kube: &Kube,
        cx: Context,
    ) -> Result<SyncResult, Error> {
        self.sync(Direction::Out, params, kube, &cx).await
    }
}

impl KubernetesProvider {
    async fn sync(
        &self,
        direction: Direction,
        params: SyncParams<KubernetesConfig>,
        kube: &Kube,
        cx: &Context,
    ) -> Result<SyncResult, Error> {
        let settings = &kube.settings;
        let timeout_ms =
            kit::effective_sync_timeout_ms(&params, cx.profile(), settings.sync_timeout_ms)?;
        let pod = self.pod_of(kube, &params.lease).await?;
        self.remember(&pod, kube);
        let target = Target { cluster: &kube.cluster, namespace: &settings.namespace, pod: &pod };
        let timeout = Duration::from_millis(timeout_ms);
        let operations = &params.operations;
        Ok(sync::sync(target, settings, &self.active, direction, operations, timeout).await?)
    }
}
