use std::future::Future;

use async_trait::async_trait;
use paperclip_sandbox_protocol::jsonrpc::{raw_to_value, ErrorObject};
#[allow(clippy::wildcard_imports)]
use paperclip_sandbox_protocol::methods::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::context::Context;
use crate::error::ProviderError;
use crate::runtime::{Handler, ResultJson};

/// The result of a hook.
pub type HookResult<T> = Result<T, ProviderError>;

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

/// The environment config type of a provider: what `#[driver(config = T)]` of
/// [`#[derive(PluginManifest)]`](macro@crate::PluginManifest) declares (`JsonObject` without
/// one). `#[provider]` makes it the provider's [`SandboxProvider::Config`], so the manifest's
/// `configSchema` and the type the hooks receive are the same type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no driver config type",
    label = "`#[provider]` takes the config type from the manifest derive",
    note = "derive `PluginManifest` on `{Self}`, or write `type Config = JsonObject;` (or your config type) in the `#[provider]` block"
)]
pub trait DriverConfig {
    /// The config type.
    type Config;
}

/// One hook call of the generated dispatch: plain params, or params carrying the environment
/// config, which is parsed into the provider's `Config` first.
#[doc(hidden)]
#[macro_export]
macro_rules! __provider_call {
    ($provider:ident, $method:ident, $params:ident, $cx:ident, $hook:ident, $ty:ident) => {
        $crate::__private::typed($method.as_str(), $params, |p: $ty| $provider.$hook(p, $cx)).await
    };
    ($provider:ident, $method:ident, $params:ident, $cx:ident, $hook:ident, $ty:ident, $cfg:ident) => {{
        let noted = $cx.clone();
        $crate::__private::typed_config(
            $method.as_str(),
            $params,
            move |p: $ty| {
                p.map_config(|c| $crate::__private::parse_noted_config::<P::$cfg>(c, &noted))
            },
            |p| $provider.$hook(p, $cx),
        )
        .await
    }};
}

/// Generates `SandboxProvider` and its dispatch (`call_hook`, `notify_hook`) from the hooked
/// rows of a method table (the protocol crate's `method_table!(hooks …)` calls it). Params types
/// and `Method` are resolved where it is called.
#[doc(hidden)]
#[macro_export]
macro_rules! __provider_items {
    (
        methods { $( $(#[$doc:meta])* $marker:ident $hook:ident($params:ident $(<$cfg:ident>)?) -> $result:ty; )* }
        notifications { $( $nhook:ident $nwire:literal; )* }
    ) => {
        /// The typed provider trait, [`SandboxProvider`], and its adapter onto the runtime.
        ///
        /// The trait's hooks are generated from the protocol crate's method table
        /// ([`paperclip_sandbox_protocol::methods::table`]): one hook per row with a hook, taking the
        /// row's params type and returning its result type. Every hook has a default that answers
        /// `-32004 <method> is not implemented by this plugin`; the runtime calls only the hooks
        /// [`SandboxProvider::implemented_methods`] lists (and answers `initialize`, `health`,
        /// `shutdown` and `configChanged` itself when they are not listed).
        /// [`SandboxProvider::implemented_methods`] has no default: write the impl block under
        /// [`#[provider]`](macro@crate::provider), which generates it from the hooks the block defines,
        /// so `supportedMethods` is always exactly the set of hooks written.
        ///
        /// Params arrive as JSON text and are deserialized straight into the hook's params type; a
        /// value that does not fit is answered `-32602 Invalid params: …` without calling the hook.
        /// Unknown fields are ignored. Missing params are read as `{}`.
        ///
        /// A Paperclip sandbox provider: one async method per hook of the method table.
        ///
        /// Write the impl under `#[paperclip_sandbox_sdk::provider]` (see the crate docs). Each
        /// hook receives the call's typed params and its [`Context`]. The runtime calls only
        /// the hooks [`implemented_methods`](Self::implemented_methods) lists; it answers
        /// `initialize`, `health`, `shutdown` and `configChanged` itself unless the
        /// corresponding hook is written.
        #[$crate::async_trait]
        pub trait SandboxProvider: Send + Sync + 'static {
            /// The environment config's type: hooks whose params carry the config receive it
            /// parsed into this type, once per call (see [`DriverConfig`](crate::DriverConfig)).
            /// `#[provider]` sets it to the `#[driver(config = T)]` type of the provider's
            /// `#[derive(PluginManifest)]` unless the block writes `type Config = …;` (a
            /// provider without a manifest derive writes `type Config = JsonObject;`).
            type Config: $crate::__private::DeserializeOwned + Send + Sync + 'static;

            /// The wire names of the hooks this impl defines (generated by `#[provider]`).
            fn implemented_methods(&self) -> &'static [&'static str];

            /// The provider the hooks this impl does not write are delegated to: `None` by
            /// default; generated by `#[provider(delegate = Inner)]` (through
            /// `AsRef<Inner>`), which also advertises the inner provider's hooks.
            fn delegate(&self) -> Option<&dyn SandboxProvider<Config = Self::Config>> {
                None
            }

            $(
                $(#[$doc])*
                async fn $hook(&self, params: $params $(<Self::$cfg>)?, cx: $crate::Context) -> $crate::HookResult<$result> {
                    match self.delegate() {
                        Some(inner) => inner.$hook(params, cx).await,
                        None => Err($crate::ProviderError::not_implemented(Method::$marker.as_str())),
                    }
                }
            )*

            $(
                #[doc = concat!("`", $nwire, "` notifications (raw params), in arrival order. Ignored by default.")]
                async fn $nhook(&self, params: $crate::__private::Value, cx: $crate::Context) {
                    if let Some(inner) = self.delegate() {
                        inner.$nhook(params, cx).await;
                    }
                }
            )*
        }

        #[allow(dead_code)]
        /// Runs the hook serving `method` from its raw params, answering its serialized result.
        async fn call_hook<P: SandboxProvider + ?Sized>(
            provider: &P,
            method: Method,
            params: Option<&$crate::__private::RawValue>,
            cx: $crate::Context,
        ) -> Result<$crate::__private::ResultJson, $crate::protocol::jsonrpc::ErrorObject> {
            match method {
                $( Method::$marker => {
                    $crate::__provider_call!(provider, method, params, cx, $hook, $params $(, $cfg)?)
                } )*
                #[allow(unreachable_patterns)]
                _ => Err($crate::protocol::jsonrpc::ErrorObject::method_not_implemented(method.as_str())),
            }
        }

        #[allow(dead_code)]
        /// Delivers a notification to its hook; other notifications are ignored.
        async fn notify_hook<P: SandboxProvider + ?Sized>(
            provider: &P,
            method: &str,
            params: Option<$crate::__private::Value>,
            cx: $crate::Context,
        ) {
            $( if method == $nwire {
                return provider.$nhook(params.unwrap_or($crate::__private::Value::Null), cx).await;
            } )*
            let _ = (provider, params, cx);
        }
    };
}

paperclip_sandbox_protocol::method_table! { hooks crate::__provider_items }

/// Deserializes a hook's params from the raw text, runs the hook, serializes its result once.
#[doc(hidden)]
pub async fn typed<T, R, F, Fut>(
    method: &'static str,
    params: Option<&RawValue>,
    hook: F,
) -> Result<ResultJson, ErrorObject>
where
    T: DeserializeOwned,
    R: Serialize + 'static,
    F: FnOnce(T) -> Fut,
    Fut: Future<Output = HookResult<R>>,
{
    let params: T = read_params(params)?;
    answer(method, hook(params).await)
}

/// A hook's params from the raw text; missing params are `{}`.
fn read_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    let text = params.map_or("{}", RawValue::get);
    match serde_json::from_str(text) {
        Ok(p) => Ok(p),
        // Read it again from a `Value` for the answer's text: the same error message without
        // the reader's position, or success where only the text reader fails (a duplicate key).
        Err(_) => {
            let value = params.map_or_else(|| json!({}), raw_to_value);
            crate::error::params_from_value(value)
        }
    }
}

/// The wire answer of a hook's outcome: its result serialized once, or its error.
fn answer<R: Serialize + 'static>(
    name: &'static str,
    outcome: HookResult<R>,
) -> Result<ResultJson, ErrorObject> {
    let result = outcome.map_err(|e| e.to_error_object(name))?;
    encode_result(result).map_err(|e| {
        tracing::error!(method = name, error = %e, "hook result does not serialize");
        ProviderError::internal(format!("{name} returned a result that does not serialize"))
            .to_error_object(name)
    })
}

/// A shared provider is a provider: every hook is the inner provider's, and so are the
/// advertised methods.
impl<P: SandboxProvider> SandboxProvider for std::sync::Arc<P> {
    type Config = P::Config;

    fn implemented_methods(&self) -> &'static [&'static str] {
        (**self).implemented_methods()
    }

    fn delegate(&self) -> Option<&dyn SandboxProvider<Config = Self::Config>> {
        Some(&**self)
    }
}

/// [`typed`] for a hook whose params carry the environment config: the params are read as
/// the wire type `W` (a params error is answered as in [`typed`]), then `convert` parses the
/// config into the provider's type. A config that does not fit is answered as the contract
/// says, naming where and what, never the value: `environmentValidateConfig` answers
/// `{ok: false, errors: [...]}`, every other hook `-32602 Invalid params: ...`.
#[doc(hidden)]
pub async fn typed_config<W, T, R, C, F, Fut>(
    method: &'static str,
    params: Option<&RawValue>,
    convert: C,
    hook: F,
) -> Result<ResultJson, ErrorObject>
where
    W: DeserializeOwned,
    R: Serialize + 'static,
    C: FnOnce(W) -> Result<T, ConfigError>,
    F: FnOnce(T) -> Fut,
    Fut: Future<Output = HookResult<R>>,
{
    let wire: W = read_params(params)?;
    let error = match convert(wire) {
        Ok(typed) => return answer(method, hook(typed).await),
        Err(error) => error,
    };
    tracing::debug!(method, %error, "config does not fit the provider's config type");
    if method == Method::EnvironmentValidateConfig.as_str() {
        let result = ValidateConfigResult::invalid([error.to_string()]);
        let raw = serde_json::value::to_raw_value(&result).expect("a validation result serializes");
        return Ok(raw.into());
    }
    Err(ErrorObject::invalid_params(error))
}

/// A config that does not fit the provider's config type: where, and what was expected. It
/// never holds the value (configs carry resolved secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    path: String,
    expected: String,
}

impl ConfigError {
    /// The JSON path of the offending field, from `config` (`config.limits.cpus`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What the config type expects there (`expected u32`, `missing field `token``).
    pub fn expected(&self) -> &str {
        &self.expected
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.expected)
    }
}

impl std::error::Error for ConfigError {}

/// [`parse_config`], after noting the config's identity in the call's context (for its
/// backend, [`crate::backend`]).
#[doc(hidden)]
pub fn parse_noted_config<T: DeserializeOwned>(
    config: JsonObject,
    cx: &Context,
) -> Result<T, ConfigError> {
    cx.note_config(&config);
    parse_config(config)
}

/// Parses the wire's config object into `T`, once. The error names the path and what `T`
/// expects there; serde's own message is cut to its "expected …" part, because the rest may
/// quote the value.
#[doc(hidden)]
pub fn parse_config<T: DeserializeOwned>(config: JsonObject) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(Value::Object(config)).map_err(|e| {
        let mut path = String::from("config");
        for segment in e.path().iter() {
            use serde_path_to_error::Segment;
            match segment {
                Segment::Seq { index } => path.push_str(&format!("[{index}]")),
                Segment::Map { key } | Segment::Enum { variant: key } => {
                    path.push('.');
                    path.push_str(key);
                }
                Segment::Unknown => path.push_str(".?"),
            }
        }
        ConfigError { path, expected: expectation(&e.into_inner().to_string()) }
    })
}

/// What a serde message says was expected, without the part that may quote the value.
fn expectation(message: &str) -> String {
    if let Some(field) = message.strip_prefix("missing field ") {
        return format!("missing field {field}");
    }
    if message.starts_with("unknown field ") {
        return "unknown field".to_owned();
    }
    match message.rfind(", expected ") {
        Some(i) => message[i + 2..].to_owned(),
        None => "does not fit the config type".to_owned(),
    }
}

/// A hook result as JSON text. An `environmentExecute` result, which may carry megabytes of
/// output, is written by [`ResultJson::execute`] (the same bytes as `serde_json`'s, escaped a
/// word at a time, long runs of output sent from where they were collected); everything else
/// by `serde_json`.
fn encode_result<T: Serialize + 'static>(result: T) -> serde_json::Result<ResultJson> {
    let mut slot = Some(result);
    if let Some(execute) =
        (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<ExecuteResult>>()
    {
        return ResultJson::execute(execute.take().expect("the result is in its slot"));
    }
    serde_json::value::to_raw_value(&slot).map(ResultJson::from)
}

/// `environmentTask`, validated as the upstream SDK validates it
/// (`packages/plugins/sdk/src/worker-rpc-host.ts` parses the operation with the zod schema of
/// `environment-tasks.ts` and answers any failure as a worker error): an operation that is
/// missing, outside the operation union or breaks one of its rules is `-32002 Invalid
/// environmentTask operation: <path>: <rule>` without calling the hook; a result that breaks
/// a rule of the result union, or does not answer the operation (another `taskId`, another
/// kind), is `-32002 Invalid plugin-provided Runner execution response`. Other params that do
/// not fit their types stay `-32602`.
async fn environment_task<P: SandboxProvider + ?Sized>(
    provider: &P,
    params: Option<&RawValue>,
    cx: Context,
) -> Result<ResultJson, ErrorObject> {
    let name = Method::EnvironmentTask.as_str();
    let refused = |why: &dyn std::fmt::Display| {
        ProviderError::worker(format!("Invalid {name} operation: {why}")).to_error_object(name)
    };
    let p: EnvironmentTaskParams = match read_params(params) {
        Ok(p) => p,
        Err(e) => {
            // Which part does not fit: the operation (a worker error, as upstream) or the rest.
            let value = params.map_or_else(|| json!({}), raw_to_value);
            return Err(match crate::error::params_from_value::<TaskOperationOnly>(value) {
                Err(op) => {
                    refused(&op.message.strip_prefix("Invalid params: ").unwrap_or(&op.message))
                }
                Ok(_) => e,
            });
        }
    };
    if let Err(rule) = p.operation.validate() {
        return Err(refused(&rule));
    }
    let (operation, task_id) = (p.operation.clone(), p.task_id.clone());
    let outcome = provider.environment_task(p, cx).await.and_then(|result| {
        result.check_answers(&operation, &task_id).map(|()| result).map_err(|e| {
            tracing::warn!(rule = %e, "environmentTask result refused");
            ProviderError::worker(TASK_RESPONSE_MISMATCH_MESSAGE)
        })
    });
    answer(name, outcome)
}

/// The operation of `environmentTask` params alone, to tell a bad operation from other bad
/// params.
#[derive(serde::Deserialize)]
struct TaskOperationOnly {
    #[serde(rename = "operation")]
    _operation: TaskOperation,
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
        method: Method,
        params: Option<&RawValue>,
        cx: Context,
    ) -> Result<ResultJson, ErrorObject> {
        match method {
            Method::EnvironmentTask => environment_task(&self.0, params, cx).await,
            Method::EnvironmentExecute => {
                // The inputs' bounds (the protocol's one rule) before the hook sees them: a
                // malformed or huge command line or environment is `-32602`, naming the path.
                let text = params.map_or("{}", RawValue::get);
                paperclip_sandbox_protocol::methods::check_execute_params_json(text)
                    .map_err(|e| e.to_error_object())?;
                call_hook(&self.0, method, params, cx).await
            }
            _ => call_hook(&self.0, method, params, cx).await,
        }
    }

    async fn notify(&self, method: &str, params: Option<Value>, cx: Context) {
        notify_hook(&self.0, method, params, cx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_encode_as_serde_json_does() {
        let execute = ExecuteResult::exited(3)
            .with_stdout("line \"one\"\n\u{1}é".repeat(100))
            .with_stderr("warn\t");
        let json = encode_result(execute.clone()).unwrap();
        assert_eq!(json.text(), serde_json::to_string(&execute).unwrap());
        let lease = serde_json::json!({"providerLeaseId": "x\n", "metadata": {}});
        assert_eq!(encode_result(lease.clone()).unwrap().text(), lease.to_string());
    }

    #[test]
    fn long_execute_output_is_sent_from_where_it_was_collected() {
        let stdout = "a".repeat(1 << 20);
        let at = stdout.as_ptr();
        let json = encode_result(ExecuteResult::exited(0).with_stdout(stdout)).unwrap();
        assert!(json.parts().iter().any(|p| p.as_ptr() == at), "not copied");
    }

    /// A provider writing every hook: what `#[provider]` generates for it must be the SDK's
    /// hook table, which must cover every environment method of the registry whose schema is
    /// published, plus the handshake methods. One hook a line (`#[rustfmt::skip]`), as a table.
    struct All;

    #[crate::provider(crate = crate)]
    #[rustfmt::skip]
    impl SandboxProvider for All {
        type Config = JsonObject;

        async fn initialize(&self, _: InitializeParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn config_changed(&self, _: ConfigChangedParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn health(&self, _: HealthParams, _: Context) -> HookResult<HealthResult> { Ok(HealthResult::default()) }
        async fn shutdown(&self, _: ShutdownParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn on_event(&self, _: Value, _: Context) {}
        async fn validate_config(&self, _: ValidateConfigParams, _: Context) -> HookResult<ValidateConfigResult> { Ok(ValidateConfigResult::valid()) }
        async fn probe(&self, _: ProbeParams, _: Context) -> HookResult<ProbeResult> { Ok(ProbeResult::new(true)) }
        async fn acquire_lease(&self, _: AcquireLeaseParams, _: Context) -> HookResult<AcquireLeaseResult> { Err(ProviderError::worker("x")) }
        async fn resume_lease(&self, _: ResumeLeaseParams, _: Context) -> HookResult<ResumeLeaseResult> { Err(ProviderError::worker("x")) }
        async fn release_lease(&self, _: ReleaseLeaseParams, _: Context) -> HookResult<ReleaseLeaseResult> { Ok(Released::done()) }
        async fn destroy_lease(&self, _: DestroyLeaseParams, _: Context) -> HookResult<DestroyLeaseResult> { Ok(Released::done()) }
        async fn stop_lease(&self, _: StopLeaseParams, _: Context) -> HookResult<StopLeaseResult> { Err(ProviderError::worker("x")) }
        async fn realize_workspace(&self, _: RealizeWorkspaceParams, _: Context) -> HookResult<RealizeWorkspaceResult> { Err(ProviderError::worker("x")) }
        async fn execute(&self, _: ExecuteParams, _: Context) -> HookResult<ExecuteResult> { Ok(ExecuteResult::exited(0)) }
        async fn sync_in(&self, _: SyncInParams, _: Context) -> HookResult<SyncResult> { Err(ProviderError::worker("x")) }
        async fn sync_out(&self, _: SyncOutParams, _: Context) -> HookResult<SyncResult> { Err(ProviderError::worker("x")) }
        async fn runner_ingress_endpoint(&self, _: RunnerIngressEndpointParams, _: Context) -> HookResult<RunnerIngressEndpointResult> { Err(ProviderError::worker("x")) }
        async fn start_interactive_setup(&self, _: StartInteractiveSetupParams, _: Context) -> HookResult<StartInteractiveSetupResult> { Err(ProviderError::worker("x")) }
        async fn get_interactive_setup(&self, _: GetInteractiveSetupParams, _: Context) -> HookResult<GetInteractiveSetupResult> { Err(ProviderError::worker("x")) }
        async fn cancel_interactive_setup(&self, _: CancelInteractiveSetupParams, _: Context) -> HookResult<CancelInteractiveSetupResult> { Err(ProviderError::worker("x")) }
        async fn capture_template(&self, _: CaptureTemplateParams, _: Context) -> HookResult<CaptureTemplateResult> { Err(ProviderError::worker("x")) }
        async fn delete_template(&self, _: DeleteTemplateParams, _: Context) -> HookResult<DeleteTemplateResult> { Err(ProviderError::worker("x")) }
        async fn idle_drain(&self, _: PrepareIdleSleepParams, _: Context) -> HookResult<BackgroundWork> { Ok(BackgroundWork::None) }
        async fn route_ai_connection(&self, _: RouteAiConnectionParams, _: Context) -> HookResult<RouteAiConnectionResult> { Err(ProviderError::worker("x")) }
        async fn environment_task(&self, _: EnvironmentTaskParams, _: Context) -> HookResult<TaskResult> { Err(ProviderError::worker("x")) }
        async fn login_pty_open(&self, _: LoginPtyOpenParams, _: Context) -> HookResult<LoginPtyOpenResult> { Err(ProviderError::worker("x")) }
        async fn login_pty_input(&self, _: LoginPtyInputParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn login_pty_stop(&self, _: LoginPtyStopParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn login_pty_close(&self, p: LoginPtyCloseParams, _: Context) -> HookResult<LoginPtyCloseResult> { Ok(LoginPtyCloseResult::new(p.host_route_id)) }
        async fn duplex_channel_open(&self, _: DuplexChannelOpenParams, _: Context) -> HookResult<DuplexChannelOpenResult> { Err(ProviderError::worker("x")) }
        async fn duplex_channel_write(&self, _: DuplexChannelWriteParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn duplex_channel_stop(&self, _: DuplexChannelStopParams, _: Context) -> HookResult<()> { Ok(()) }
        async fn duplex_channel_close(&self, p: DuplexChannelCloseParams, _: Context) -> HookResult<DuplexChannelCloseResult> { Ok(DuplexChannelCloseResult::new(p.host_route_id, None)) }
    }

    #[test]
    fn a_provider_writing_every_hook_advertises_every_hooked_row() {
        let mut generated: Vec<&str> = All.implemented_methods().to_vec();
        let mut table: Vec<&str> =
            HOOKS.iter().filter_map(|h| h.method).map(Method::as_str).collect();
        generated.sort_unstable();
        table.sort_unstable();
        assert_eq!(generated, table);
        // Every environment method with a published schema has a hook.
        for m in METHODS {
            let hooked = m.hook.is_some();
            if m.family == MethodFamily::Environment {
                assert_eq!(hooked, !m.schema_unknown(), "{}", m.name);
            }
        }
    }
}
