//! The typed provider trait, [`SandboxProvider`], and its adapter onto the runtime's
//! [`Handler`].
//!
//! Every hook has a default that answers `-32004 <method> is not implemented by this plugin`.
//! [`SandboxProvider::implemented_methods`] has no default: write the impl block under
//! [`#[provider]`](macro@crate::provider), which generates it from the hooks the block defines, so
//! `supportedMethods` is always exactly the set of hooks written.
//!
//! Params arrive as JSON and are deserialized into the hook's params type; a value that does
//! not fit is answered `-32602 Invalid params: …` without calling the hook. Unknown fields are
//! ignored (decisions.md D9). Missing params are read as `{}`. The params and result types are
//! the protocol crate's ([`paperclip_sandbox_protocol::methods`]), tied to each method by its
//! marker type ([`RpcMethod`]).

use std::future::Future;

use async_trait::async_trait;
use paperclip_sandbox_protocol::jsonrpc::{raw_to_value, ErrorObject};
use paperclip_sandbox_protocol::methods::{self, name, RpcMethod};
use paperclip_sandbox_protocol::methods::{
    AcquireLeaseParams, AcquireLeaseResult, CancelInteractiveSetupParams,
    CancelInteractiveSetupResult, CaptureTemplateParams, CaptureTemplateResult,
    ConfigChangedParams, DeleteTemplateParams, DeleteTemplateResult, DestroyLeaseParams,
    DestroyLeaseResult, ExecuteParams, ExecuteResult, GetInteractiveSetupParams,
    GetInteractiveSetupResult, HealthResult, InitializeParams, ProbeParams, ProbeResult,
    RealizeWorkspaceParams, RealizeWorkspaceResult, ReleaseLeaseParams, ReleaseLeaseResult,
    ResumeLeaseParams, ResumeLeaseResult, RunnerIngressEndpointParams, RunnerIngressEndpointResult,
    StartInteractiveSetupParams, StartInteractiveSetupResult, StopLeaseParams, StopLeaseResult,
    SyncInParams, SyncOutParams, SyncResult, ValidateConfigParams, ValidateConfigResult,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::context::Context;
use crate::error::ProviderError;
use crate::runtime::dispatch::Handler;

/// The result of a hook.
pub type HookResult<T> = Result<T, ProviderError>;

/// Every hook of [`SandboxProvider`]: its Rust name and its wire name. `on_event` is a hook
/// too but handles a notification, so it has no wire method to advertise.
pub const HOOKS: &[(&str, &str)] = &[
    ("initialize", name::INITIALIZE),
    ("config_changed", name::CONFIG_CHANGED),
    ("health", name::HEALTH),
    ("shutdown", name::SHUTDOWN),
    ("validate_config", name::ENVIRONMENT_VALIDATE_CONFIG),
    ("probe", name::ENVIRONMENT_PROBE),
    ("acquire_lease", name::ENVIRONMENT_ACQUIRE_LEASE),
    ("resume_lease", name::ENVIRONMENT_RESUME_LEASE),
    ("release_lease", name::ENVIRONMENT_RELEASE_LEASE),
    ("destroy_lease", name::ENVIRONMENT_DESTROY_LEASE),
    ("stop_lease", name::ENVIRONMENT_STOP_LEASE),
    ("realize_workspace", name::ENVIRONMENT_REALIZE_WORKSPACE),
    ("execute", name::ENVIRONMENT_EXECUTE),
    ("sync_in", name::ENVIRONMENT_SYNC_IN),
    ("sync_out", name::ENVIRONMENT_SYNC_OUT),
    ("runner_ingress_endpoint", name::ENVIRONMENT_RUNNER_INGRESS_ENDPOINT),
    ("start_interactive_setup", name::ENVIRONMENT_START_INTERACTIVE_SETUP),
    ("get_interactive_setup", name::ENVIRONMENT_GET_INTERACTIVE_SETUP),
    ("cancel_interactive_setup", name::ENVIRONMENT_CANCEL_INTERACTIVE_SETUP),
    ("capture_template", name::ENVIRONMENT_CAPTURE_TEMPLATE),
    ("delete_template", name::ENVIRONMENT_DELETE_TEMPLATE),
];

/// The wire names of the hooks a provider's `#[provider]` impl block defines, as a constant.
///
/// Implemented by [`#[provider]`](macro@crate::provider) next to
/// [`SandboxProvider::implemented_methods`] (which returns the same list). Being a constant, it
/// lets [`#[derive(PluginManifest)]`](macro@crate::PluginManifest) check at compile time that
/// every declared capability's required methods are implemented.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `#[provider]` impl block",
    label = "the manifest's capabilities are checked against the hooks of `{Self}`",
    note = "write the hooks as `#[provider] impl SandboxProvider for {Self} {{ … }}`"
)]
pub trait ImplementedHooks {
    /// The wire names of the hooks written, in the order written.
    const METHODS: &'static [&'static str];
}

macro_rules! hooks {
    ($( $(#[$doc:meta])* $hook:ident => $marker:ident($params:ty) -> $result:ty; )*) => {
        /// A Paperclip sandbox provider: one async method per environment hook.
        ///
        /// Write the impl under `#[paperclip_sandbox_sdk::provider]` (see the crate docs). Each
        /// hook receives the call's typed params and its [`Context`]; the runtime answers
        /// `initialize`, `health`, `shutdown` and `configChanged` itself unless the
        /// corresponding hook is written.
        #[async_trait]
        pub trait SandboxProvider: Send + Sync + 'static {
            /// The wire names of the hooks this impl defines (generated by `#[provider]`).
            fn implemented_methods(&self) -> &'static [&'static str];

            /// `initialize`: runs before the runtime answers `{ok:true, supportedMethods}`;
            /// an error fails the handshake (the host then kills the worker).
            async fn initialize(&self, params: InitializeParams, cx: Context) -> HookResult<()> {
                let _ = (params, cx);
                Ok(())
            }

            /// `configChanged {config, companyId}`: the host replays each company's config
            /// after initialize.
            async fn config_changed(
                &self,
                params: ConfigChangedParams,
                cx: Context,
            ) -> HookResult<()> {
                let _ = (params, cx);
                Ok(())
            }

            /// `health`: `{status:"ok"|"degraded"|"error", message?, details?}`.
            async fn health(&self, cx: Context) -> HookResult<HealthResult> {
                let _ = cx;
                Ok(HealthResult::default())
            }

            /// `shutdown`: runs before the runtime answers and exits; in-flight calls are
            /// cancelled right after.
            async fn shutdown(&self, cx: Context) -> HookResult<()> {
                let _ = cx;
                Ok(())
            }

            /// `onEvent` notifications (raw params), in arrival order. Ignored by default.
            async fn on_event(&self, params: Value, cx: Context) {
                let _ = (params, cx);
            }

            $(
                $(#[$doc])*
                async fn $hook(&self, params: $params, cx: Context) -> HookResult<$result> {
                    let _ = (params, cx);
                    Err(ProviderError::not_implemented(<methods::$marker as RpcMethod>::NAME))
                }
            )*
        }

        /// Runs the hook behind `method` (an environment hook); `None` for other names.
        async fn call_environment_hook<P: SandboxProvider + ?Sized>(
            provider: &P,
            method: &str,
            params: Option<Value>,
            cx: Context,
        ) -> Option<Result<Value, ErrorObject>> {
            $(
                if method == <methods::$marker as RpcMethod>::NAME {
                    return Some(typed::<methods::$marker, _, _>(params, |p| provider.$hook(p, cx)).await);
                }
            )*
            None
        }

        /// [`call_environment_hook`] from raw params, answering serialized JSON.
        async fn call_environment_hook_raw<P: SandboxProvider + ?Sized>(
            provider: &P,
            method: &str,
            params: Option<&RawValue>,
            cx: Context,
        ) -> Option<Result<Box<RawValue>, ErrorObject>> {
            $(
                if method == <methods::$marker as RpcMethod>::NAME {
                    return Some(typed_raw::<methods::$marker, _, _>(params, |p| provider.$hook(p, cx)).await);
                }
            )*
            None
        }
    };
}

hooks! {
    /// `environmentValidateConfig`: validate and normalize a config.
    validate_config => EnvironmentValidateConfig(ValidateConfigParams) -> ValidateConfigResult;
    /// `environmentProbe`: check that the provider is reachable with this config.
    probe => EnvironmentProbe(ProbeParams) -> ProbeResult;
    /// `environmentAcquireLease`: create a sandbox and return its lease.
    acquire_lease => EnvironmentAcquireLease(AcquireLeaseParams) -> AcquireLeaseResult;
    /// `environmentResumeLease`: resume a retained lease.
    resume_lease => EnvironmentResumeLease(ResumeLeaseParams) -> ResumeLeaseResult;
    /// `environmentReleaseLease`: release a lease (`None` → `null`, or a termination receipt).
    release_lease => EnvironmentReleaseLease(ReleaseLeaseParams) -> ReleaseLeaseResult;
    /// `environmentDestroyLease`: destroy a lease; idempotent.
    destroy_lease => EnvironmentDestroyLease(DestroyLeaseParams) -> DestroyLeaseResult;
    /// `environmentStopLease`: stop a lease and keep its files (paperclip-2026-11).
    stop_lease => EnvironmentStopLease(StopLeaseParams) -> StopLeaseResult;
    /// `environmentRealizeWorkspace`: prepare the workspace inside a lease.
    realize_workspace => EnvironmentRealizeWorkspace(RealizeWorkspaceParams) -> RealizeWorkspaceResult;
    /// `environmentExecute`: run a command; stream output with [`Context::execute_log`].
    execute => EnvironmentExecute(ExecuteParams) -> ExecuteResult;
    /// `environmentSyncIn`: native file transfer into the sandbox.
    sync_in => EnvironmentSyncIn(SyncInParams) -> SyncResult;
    /// `environmentSyncOut`: native file transfer out of the sandbox.
    sync_out => EnvironmentSyncOut(SyncOutParams) -> SyncResult;
    /// `environmentRunnerIngressEndpoint`: the runner's WebSocket ingress.
    runner_ingress_endpoint => EnvironmentRunnerIngressEndpoint(RunnerIngressEndpointParams) -> RunnerIngressEndpointResult;
    /// `environmentStartInteractiveSetup`.
    start_interactive_setup => EnvironmentStartInteractiveSetup(StartInteractiveSetupParams) -> StartInteractiveSetupResult;
    /// `environmentGetInteractiveSetup`.
    get_interactive_setup => EnvironmentGetInteractiveSetup(GetInteractiveSetupParams) -> GetInteractiveSetupResult;
    /// `environmentCancelInteractiveSetup`.
    cancel_interactive_setup => EnvironmentCancelInteractiveSetup(CancelInteractiveSetupParams) -> CancelInteractiveSetupResult;
    /// `environmentCaptureTemplate`.
    capture_template => EnvironmentCaptureTemplate(CaptureTemplateParams) -> CaptureTemplateResult;
    /// `environmentDeleteTemplate`.
    delete_template => EnvironmentDeleteTemplate(DeleteTemplateParams) -> DeleteTemplateResult;
}

/// Deserializes the params of method `M`, runs the hook, serializes its result.
async fn typed<M, F, Fut>(params: Option<Value>, hook: F) -> Result<Value, ErrorObject>
where
    M: RpcMethod,
    F: FnOnce(M::Params) -> Fut,
    Fut: Future<Output = HookResult<M::Result>>,
{
    let method = M::NAME;
    let params = params.unwrap_or_else(|| json!({}));
    let params: M::Params = crate::error::params_from_value(params)?;
    let result = hook(params).await.map_err(|e| e.to_error_object(method))?;
    serde_json::to_value(result).map_err(|e| {
        tracing::error!(method, error = %e, "hook result does not serialize");
        ProviderError::internal(format!("{method} returned a result that does not serialize"))
            .to_error_object(method)
    })
}

/// [`typed`] from raw params, with the same answers: the params type is deserialized straight
/// from the raw text and the result serialized once, straight to JSON text.
async fn typed_raw<M, F, Fut>(
    params: Option<&RawValue>,
    hook: F,
) -> Result<Box<RawValue>, ErrorObject>
where
    M: RpcMethod,
    F: FnOnce(M::Params) -> Fut,
    Fut: Future<Output = HookResult<M::Result>>,
{
    let method = M::NAME;
    let text = params.map_or("{}", RawValue::get);
    let params: M::Params = match serde_json::from_str(text) {
        Ok(p) => p,
        // Read it again as `typed` does, for its exact answer: the same error message (this
        // reader's would add a position), or success where only this reader fails (a
        // duplicate key).
        Err(_) => {
            let value = params.map_or_else(|| json!({}), raw_to_value);
            crate::error::params_from_value(value)?
        }
    };
    let result = hook(params).await.map_err(|e| e.to_error_object(method))?;
    serde_json::value::to_raw_value(&result).map_err(|e| {
        tracing::error!(method, error = %e, "hook result does not serialize");
        ProviderError::internal(format!("{method} returned a result that does not serialize"))
            .to_error_object(method)
    })
}

/// Adapts a [`SandboxProvider`] to the runtime's [`Handler`].
pub(crate) struct ProviderHandler<P>(pub P);

#[async_trait]
impl<P: SandboxProvider> Handler for ProviderHandler<P> {
    fn implemented_methods(&self) -> &'static [&'static str] {
        self.0.implemented_methods()
    }

    async fn call(
        &self,
        method: &str,
        params: Option<Value>,
        cx: Context,
    ) -> Result<Value, ErrorObject> {
        let p = &self.0;
        match method {
            name::INITIALIZE => {
                typed::<methods::Initialize, _, _>(params, |prm| async move {
                    p.initialize(prm, cx).await.map(|()| Default::default())
                })
                .await
            }
            name::CONFIG_CHANGED => {
                typed::<methods::ConfigChanged, _, _>(params, |prm| p.config_changed(prm, cx)).await
            }
            name::HEALTH => typed::<methods::Health, _, _>(params, |_| p.health(cx)).await,
            name::SHUTDOWN => typed::<methods::Shutdown, _, _>(params, |_| p.shutdown(cx)).await,
            _ => match call_environment_hook(p, method, params, cx).await {
                Some(answer) => answer,
                None => Err(ErrorObject::method_not_implemented(method)),
            },
        }
    }

    async fn call_raw(
        &self,
        method: &str,
        params: Option<&RawValue>,
        cx: Context,
    ) -> Result<Box<RawValue>, ErrorObject> {
        if matches!(method, name::INITIALIZE | name::CONFIG_CHANGED | name::HEALTH | name::SHUTDOWN)
        {
            // The runtime-owned methods (the runtime sends them to `call`): the Value path.
            let result = self.call(method, params.map(raw_to_value), cx).await?;
            return serde_json::value::to_raw_value(&result).map_err(|e| {
                ProviderError::internal(format!("{method} result does not serialize: {e}"))
                    .to_error_object(method)
            });
        }
        match call_environment_hook_raw(&self.0, method, params, cx).await {
            Some(answer) => answer,
            None => Err(ErrorObject::method_not_implemented(method)),
        }
    }

    async fn notify(&self, method: &str, params: Option<Value>, cx: Context) {
        if method == name::ON_EVENT {
            self.0.on_event(params.unwrap_or(Value::Null), cx).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_sandbox_protocol::methods::{MethodFamily, METHODS};

    /// A provider writing every hook: what `#[provider]` generates for it must be the SDK's
    /// hook table, which must cover every environment method of the registry whose schema is
    /// published, plus the handshake methods.
    struct All;

    #[crate::provider(crate = crate)]
    impl SandboxProvider for All {
        async fn initialize(&self, _: InitializeParams, _: Context) -> HookResult<()> {
            Ok(())
        }
        async fn config_changed(&self, _: ConfigChangedParams, _: Context) -> HookResult<()> {
            Ok(())
        }
        async fn health(&self, _: Context) -> HookResult<HealthResult> {
            Ok(HealthResult::default())
        }
        async fn shutdown(&self, _: Context) -> HookResult<()> {
            Ok(())
        }
        async fn on_event(&self, _: Value, _: Context) {}
        async fn validate_config(
            &self,
            _: ValidateConfigParams,
            _: Context,
        ) -> HookResult<ValidateConfigResult> {
            Ok(ValidateConfigResult::valid())
        }
        async fn probe(&self, _: ProbeParams, _: Context) -> HookResult<ProbeResult> {
            Ok(ProbeResult::new(true))
        }
        async fn acquire_lease(
            &self,
            _: AcquireLeaseParams,
            _: Context,
        ) -> HookResult<AcquireLeaseResult> {
            Err(ProviderError::worker("x"))
        }
        async fn resume_lease(
            &self,
            _: ResumeLeaseParams,
            _: Context,
        ) -> HookResult<ResumeLeaseResult> {
            Err(ProviderError::worker("x"))
        }
        async fn release_lease(
            &self,
            _: ReleaseLeaseParams,
            _: Context,
        ) -> HookResult<ReleaseLeaseResult> {
            Ok(None)
        }
        async fn destroy_lease(
            &self,
            _: DestroyLeaseParams,
            _: Context,
        ) -> HookResult<DestroyLeaseResult> {
            Ok(None)
        }
        async fn stop_lease(&self, _: StopLeaseParams, _: Context) -> HookResult<StopLeaseResult> {
            Err(ProviderError::worker("x"))
        }
        async fn realize_workspace(
            &self,
            _: RealizeWorkspaceParams,
            _: Context,
        ) -> HookResult<RealizeWorkspaceResult> {
            Err(ProviderError::worker("x"))
        }
        async fn execute(&self, _: ExecuteParams, _: Context) -> HookResult<ExecuteResult> {
            Ok(ExecuteResult::exited(0))
        }
        async fn sync_in(&self, _: SyncInParams, _: Context) -> HookResult<SyncResult> {
            Err(ProviderError::worker("x"))
        }
        async fn sync_out(&self, _: SyncOutParams, _: Context) -> HookResult<SyncResult> {
            Err(ProviderError::worker("x"))
        }
        async fn runner_ingress_endpoint(
            &self,
            _: RunnerIngressEndpointParams,
            _: Context,
        ) -> HookResult<RunnerIngressEndpointResult> {
            Err(ProviderError::worker("x"))
        }
        async fn start_interactive_setup(
            &self,
            _: StartInteractiveSetupParams,
            _: Context,
        ) -> HookResult<StartInteractiveSetupResult> {
            Err(ProviderError::worker("x"))
        }
        async fn get_interactive_setup(
            &self,
            _: GetInteractiveSetupParams,
            _: Context,
        ) -> HookResult<GetInteractiveSetupResult> {
            Err(ProviderError::worker("x"))
        }
        async fn cancel_interactive_setup(
            &self,
            _: CancelInteractiveSetupParams,
            _: Context,
        ) -> HookResult<CancelInteractiveSetupResult> {
            Err(ProviderError::worker("x"))
        }
        async fn capture_template(
            &self,
            _: CaptureTemplateParams,
            _: Context,
        ) -> HookResult<CaptureTemplateResult> {
            Err(ProviderError::worker("x"))
        }
        async fn delete_template(
            &self,
            _: DeleteTemplateParams,
            _: Context,
        ) -> HookResult<DeleteTemplateResult> {
            Err(ProviderError::worker("x"))
        }
    }

    #[test]
    fn macro_table_matches_hook_table_and_registry() {
        let mut generated: Vec<&str> = All.implemented_methods().to_vec();
        let mut table: Vec<&str> = HOOKS.iter().map(|(_, wire)| *wire).collect();
        generated.sort_unstable();
        table.sort_unstable();
        assert_eq!(generated, table);

        let mut registry: Vec<&str> = METHODS
            .iter()
            .filter(|m| {
                (m.family == MethodFamily::Environment && !m.schema_unknown)
                    || (m.family == MethodFamily::Handshake)
            })
            .map(|m| m.name)
            .collect();
        registry.sort_unstable();
        assert_eq!(table, registry);
    }
}
